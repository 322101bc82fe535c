/*
Copyright 2026 The nsclaim Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sort"
	"strings"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// The audit log is how requests are split by who made them: apiserver_request_total has no user
// label. hack/bench.sh starts kube-apiserver with a policy that logs every request once, at
// ResponseComplete, at Metadata level (no bodies, so no token or Secret data is written).

// auditEvent holds the fields of an audit.k8s.io/v1 Event that the bench reads.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// who classifies a request's user: the operator's ServiceAccount, the bench's admin, a claim's tenant
// (the nsclaim-tenant ServiceAccount of any namespace: a self-test made with the issued token runs as
// it), or the control plane (everyone else).
func (ev *auditEvent) who() string {
	u := ev.User.Username
	switch {
	case u == operatorUser:
		return whoOperator
	case u == adminUser:
		return cmdBench
	case strings.HasPrefix(u, "system:serviceaccount:") && strings.HasSuffix(u, ":"+tenancyv1alpha1.TenantServiceAccountName):
		return whoTenant
	default:
		return "control-plane"
	}
}

// The users requests are counted by.
const (
	whoOperator = "operator"
	whoTenant   = "tenant"
)

// Audit verbs the bench counts by.
const (
	verbCreate = "create"
	verbUpdate = "update"
	verbPatch  = "patch"
)

// isSelfTest reports whether a request (what: "verb resource") is an authorization review: what a
// self-test is made of, whether the operator asks about the tenant or the tenant asks about itself.
func isSelfTest(what string) bool {
	verb, res, _ := strings.Cut(what, " ")
	if verb != verbCreate {
		return false
	}
	switch res {
	case "subjectaccessreviews", "selfsubjectaccessreviews", "localsubjectaccessreviews", "selfsubjectrulesreviews":
		return true
	}
	return false
}

// what is "verb resource[/subresource]", or "verb <path>" for a non-resource request.
func (ev *auditEvent) what() string {
	if ev.ObjectRef == nil || ev.ObjectRef.Resource == "" {
		p, _, _ := strings.Cut(ev.RequestURI, "?")
		return ev.Verb + " " + p
	}
	r := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		r += "/" + ev.ObjectRef.Subresource
	}
	return ev.Verb + " " + r
}

// isWrite reports whether the verb changes state.
func isWrite(verb string) bool {
	switch verb {
	case verbCreate, verbUpdate, verbPatch, "delete", "deletecollection", "apply":
		return true
	}
	return false
}

// auditLog reads an audit log between offsets.
type auditLog struct{ path string }

// offset is the log's current size: requests completed after it are logged past it.
func (a auditLog) offset() int64 {
	fi, err := os.Stat(a.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// requestCounts are requests counted by who and then by what.
type requestCounts map[string]map[string]int

func (rc requestCounts) total(who string) int {
	n := 0
	for _, v := range rc[who] {
		n += v
	}
	return n
}

// count returns who's requests whose what starts with prefix.
func (rc requestCounts) count(who string, pred func(what string) bool) int {
	n := 0
	for w, v := range rc[who] {
		if pred(w) {
			n += v
		}
	}
	return n
}

func (rc requestCounts) all() int {
	n := 0
	for who := range rc {
		n += rc.total(who)
	}
	return n
}

// keys returns who's whats sorted by count, descending.
func (rc requestCounts) keys(who string) []string {
	ks := make([]string, 0, len(rc[who]))
	for k := range rc[who] {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if rc[who][ks[i]] != rc[who][ks[j]] {
			return rc[who][ks[i]] > rc[who][ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}

// read counts the requests logged between offsets from and to.
func (a auditLog) read(from, to int64) (requestCounts, error) {
	rc := requestCounts{}
	err := a.lines(from, to, func(line []byte) {
		var ev auditEvent
		if json.Unmarshal(line, &ev) == nil && ev.Verb != "" {
			who := ev.who()
			if rc[who] == nil {
				rc[who] = map[string]int{}
			}
			rc[who][ev.what()]++
		}
	})
	return rc, err
}

// lines calls fn with each line logged between offsets from and to.
func (a auditLog) lines(from, to int64, fn func(line []byte)) error {
	f, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.LimitReader(f, to-from), 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			fn(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
