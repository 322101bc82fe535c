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
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Where a claim's time goes, from the client's create call to the client's watch event of
// Ready=True. The audit log (one line per request, at ResponseComplete) gives each request's
// received and completed times on the API server's clock, which is this machine's clock, as the
// bench's is. A claim's requests are those about its objects: the claim and its Secret in the
// requester namespace, anything in or named after its namespace, and the requests its tenant makes.

// timedEvent is an audit event with the fields the breakdown reads.
type timedEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
}

// stageSample is one claim's client-side times and its namespace.
type stageSample struct {
	requester, claim, namespace string
	sent, seen                  time.Time
}

// Stages of a claim, in the order they happen.
const (
	stageCreate    = "client create -> claim stored"
	stageWatch     = "claim stored -> operator's first request (watch, queue, cache)"
	stageHandout   = "namespace handout/create"
	stageRBAC      = "RBAC writes (with escalation checks)"
	stageToken     = "token request"
	stageReviews   = "rules/access reviews"
	stageSecret    = "credentials Secret"
	stageOther     = "other requests"
	stageOperator  = "operator between its requests (not waiting on the API server)"
	stageStatus    = "status patch"
	stageWatchBack = "status stored -> client's watch event"
)

var stageOrder = []string{stageCreate, stageWatch, stageHandout, stageRBAC, stageToken, stageReviews, stageSecret, stageOther, stageOperator, stageStatus, stageWatchBack}

// readTimed reads the audit events logged between offsets.
func (a auditLog) readTimed(from, to int64) ([]timedEvent, error) {
	var out []timedEvent
	err := a.lines(from, to, func(line []byte) {
		var ev timedEvent
		if json.Unmarshal(line, &ev) == nil && ev.Verb != "" && ev.ObjectRef != nil {
			out = append(out, ev)
		}
	})
	return out, err
}

// belongs reports whether ev is about s's claim.
func (s stageSample) belongs(ev *timedEvent) bool {
	o := ev.ObjectRef
	switch {
	case s.namespace != "" && (o.Namespace == s.namespace || strings.Contains(o.Name, s.namespace)):
		return true
	case o.Namespace == s.requester && strings.HasPrefix(o.Name, s.claim):
		return true
	case s.namespace != "" && strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+s.namespace+":"):
		return true
	}
	return false
}

// stageOf names the stage an operator or tenant request belongs to.
func stageOf(ev *timedEvent) string {
	o := ev.ObjectRef
	switch {
	case o.Resource == "namespaceclaims" && o.Subresource == "status":
		return stageStatus
	case o.Resource == "namespaces":
		return stageHandout
	case o.Resource == "serviceaccounts" && o.Subresource == "token":
		return stageToken
	case o.Resource == "secrets":
		return stageSecret
	case isSelfTest(verbCreate + " " + o.Resource):
		return stageReviews
	case strings.HasPrefix(o.Resource, "role") || strings.HasPrefix(o.Resource, "clusterrole"):
		return stageRBAC
	}
	return stageOther
}

// breakdown splits s's time into stages. Requests that overlap are counted once, in the stage of the
// one that started first. ok is false when the audit log holds no create of the claim.
func (s stageSample) breakdown(events []timedEvent) (map[string]time.Duration, bool) {
	var created *timedEvent
	var mine []timedEvent
	for i := range events {
		ev := &events[i]
		if !s.belongs(ev) {
			continue
		}
		if ev.ObjectRef.Resource == "namespaceclaims" && ev.Verb == verbCreate && ev.User.Username == adminUser {
			created = ev
			continue
		}
		if ev.User.Username == adminUser || ev.Completed.After(s.seen) || ev.Received.Before(s.sent) {
			continue
		}
		mine = append(mine, *ev)
	}
	if created == nil {
		return nil, false
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Received.Before(mine[j].Received) })
	out := map[string]time.Duration{stageCreate: created.Completed.Sub(s.sent)}
	cursor := created.Completed
	for i, ev := range mine {
		if i == 0 {
			out[stageWatch] = max(0, ev.Received.Sub(cursor))
		} else if gap := ev.Received.Sub(cursor); gap > 0 {
			out[stageOperator] += gap
		}
		if ev.Completed.After(cursor) {
			out[stageOf(&ev)] += ev.Completed.Sub(maxTime(cursor, ev.Received))
			cursor = ev.Completed
		}
	}
	out[stageWatchBack] = max(0, s.seen.Sub(cursor))
	return out, true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stageMedians is each stage's median over the samples that had a breakdown, and how many had one.
func stageMedians(samples []stageSample, events []timedEvent) (map[string]time.Duration, int) {
	per := map[string][]time.Duration{}
	n := 0
	for _, s := range samples {
		b, ok := s.breakdown(events)
		if !ok {
			continue
		}
		n++
		for _, st := range stageOrder {
			per[st] = append(per[st], b[st])
		}
	}
	out := map[string]time.Duration{}
	for st, ds := range per {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		out[st] = percentile(ds, 50)
	}
	return out, n
}

// stagesMarkdown prints the breakdown.
func stagesMarkdown(p func(string, ...any), medians map[string]time.Duration, n int, total time.Duration) {
	if n == 0 {
		return
	}
	p("Where a pooled claim's time goes (audit log timestamps, median of %d claims; the stages' medians need not add up to the median total, %s ms):", n, ms(total))
	p("")
	p("| stage | median ms |")
	p("|---|---|")
	for _, st := range stageOrder {
		p("| %s | %s |", st, ms(medians[st]))
	}
	p("")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// stageSamplesOf reads each claim's namespace from the API server (the claims are Ready, so their
// status names it) and pairs it with the client-side times.
func (b *bencher) stageSamplesOf(ctx context.Context, refs []claimRef) []stageSample {
	out := make([]stageSample, 0, len(refs))
	for _, ref := range refs {
		s := stageSample{requester: ref.namespace, claim: ref.name, sent: ref.created}
		s.seen, _ = b.track.at(ref.key())
		cur := &tenancyv1alpha1.NamespaceClaim{}
		if err := b.k.c.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, cur); err == nil {
			s.namespace = cur.Status.Namespace
		}
		out = append(out, s)
	}
	return out
}

// trace lists s's requests in the order the API server received them, as offsets from the client's
// create call (received, completed, in ms), and how many requests of anyone else (the pool's refill,
// other controllers) the API server was serving beside them: where the gaps between requests are.
func (s stageSample) trace(events []timedEvent) []string {
	var mine []*timedEvent
	others := 0
	for i := range events {
		ev := &events[i]
		if ev.Completed.Before(s.sent) || ev.Received.After(s.seen) {
			continue
		}
		if !s.belongs(ev) {
			others++
			continue
		}
		mine = append(mine, ev)
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Received.Before(mine[j].Received) })
	out := make([]string, 0, len(mine)+1)
	for _, ev := range mine {
		o := ev.ObjectRef
		what := ev.Verb + " " + o.Resource
		if o.Subresource != "" {
			what += "/" + o.Subresource
		}
		user := ev.User.Username
		if strings.HasPrefix(user, "system:serviceaccount:") {
			user = "sa:" + user[strings.LastIndex(user, ":")+1:]
		}
		out = append(out, fmt.Sprintf("| %s | %s | %s | %s | %s |", ms(ev.Received.Sub(s.sent)), ms(ev.Completed.Sub(s.sent)),
			ms(ev.Completed.Sub(ev.Received)), what+" "+o.Name, user))
	}
	out = append(out, fmt.Sprintf("| %s | | | client's watch event | %d other requests served meanwhile |", ms(s.seen.Sub(s.sent)), others))
	return out
}

// medianTrace is the trace of the sample whose total is the median, as markdown lines.
func medianTrace(samples []stageSample, events []timedEvent) []string {
	if len(samples) == 0 {
		return nil
	}
	sorted := append([]stageSample(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].seen.Sub(sorted[i].sent) < sorted[j].seen.Sub(sorted[j].sent) })
	s := sorted[len(sorted)/2]
	lines := s.trace(events)
	out := make([]string, 0, len(lines)+5)
	out = append(out, "The median pooled claim's requests (ms from the client's create call; audit log):", "",
		"| received | completed | took | request | by |", "|---|---|---|---|---|")
	return append(append(out, lines...), "")
}
