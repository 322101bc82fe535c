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
	"os"
	"testing"
	"time"
)

func ev(user, verb, res, sub, ns, name string, from, to time.Duration) timedEvent {
	t0 := time.Unix(1000, 0)
	e := timedEvent{Verb: verb, Received: t0.Add(from), Completed: t0.Add(to)}
	e.User.Username = user
	e.ObjectRef = &struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	}{res, sub, ns, name}
	return e
}

func TestBreakdownSplitsAClaimsTime(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	s := stageSample{requester: "r", claim: "c", namespace: "bp-1", sent: t0, seen: t0.Add(100 * ms)}
	events := []timedEvent{
		ev(adminUser, verbCreate, "namespaceclaims", "", "r", "c", 1*ms, 5*ms),
		ev(operatorUser, verbPatch, "namespaces", "", "", "bp-1", 10*ms, 20*ms),
		// Two RBAC writes in parallel: the overlap is counted once.
		ev(operatorUser, verbCreate, "rolebindings", "", "bp-1", "x", 20*ms, 30*ms),
		ev(operatorUser, verbCreate, "clusterrolebindings", "", "", "nsclaim-watch-bp-1", 22*ms, 35*ms),
		ev(operatorUser, verbCreate, "serviceaccounts", "token", "bp-1", "nsclaim-tenant", 40*ms, 45*ms),
		ev("system:serviceaccount:bp-1:nsclaim-tenant", verbCreate, "selfsubjectrulesreviews", "", "", "", 45*ms, 50*ms),
		ev(operatorUser, verbCreate, "secrets", "", "r", "c-kubeconfig", 50*ms, 60*ms),
		ev(operatorUser, verbPatch, "namespaceclaims", "status", "r", "c", 70*ms, 80*ms),
		// Another claim's request, and one after the client saw Ready: not this claim's.
		ev(operatorUser, verbCreate, "secrets", "", "r", "d-kubeconfig", 60*ms, 65*ms),
		ev(operatorUser, verbPatch, "namespaces", "", "", "bp-1", 110*ms, 120*ms),
	}
	got, ok := s.breakdown(events)
	if !ok {
		t.Fatal("no breakdown")
	}
	want := map[string]time.Duration{
		stageCreate: 5 * ms, stageWatch: 5 * ms, stageHandout: 10 * ms, stageRBAC: 15 * ms, stageToken: 5 * ms,
		stageReviews: 5 * ms, stageSecret: 10 * ms, stageOperator: 15 * ms, stageStatus: 10 * ms, stageWatchBack: 20 * ms,
	}
	var sum time.Duration
	for _, st := range stageOrder {
		if got[st] != want[st] {
			t.Errorf("%s: got %s, want %s", st, got[st], want[st])
		}
		sum += got[st]
	}
	if sum != s.seen.Sub(s.sent) {
		t.Errorf("stages add up to %s, want the claim's %s", sum, s.seen.Sub(s.sent))
	}
	if _, ok := (stageSample{requester: "r", claim: "zz", sent: t0, seen: t0.Add(ms)}).breakdown(events); ok {
		t.Error("a claim whose create is not in the log has a breakdown")
	}
}

func TestAuditLogReadersShareOneWindow(t *testing.T) {
	path := t.TempDir() + "/audit.log"
	before := `{"verb":"get","user":{"username":"nsclaim-admin"},"objectRef":{"resource":"namespaces","name":"old"}}` + "\n"
	window := `{"verb":"create","user":{"username":"nsclaim-admin"},"objectRef":{"resource":"namespaceclaims","namespace":"r","name":"c"},` +
		`"requestReceivedTimestamp":"2026-11-28T01:00:00.000001Z","stageTimestamp":"2026-11-28T01:00:00.005001Z"}` + "\n" +
		`{"verb":"get","user":{"username":"nsclaim-admin"},"requestURI":"/healthz"}` + "\n"
	if err := os.WriteFile(path, []byte(before+window), 0o600); err != nil {
		t.Fatal(err)
	}
	a := auditLog{path: path}
	from, to := int64(len(before)), a.offset()
	evs, err := a.readTimed(from, to)
	if err != nil || len(evs) != 1 || evs[0].ObjectRef.Name != "c" || evs[0].Completed.Sub(evs[0].Received) != 5*time.Millisecond {
		t.Fatalf("readTimed = %+v, %v; want the one request with an object in the window, 5ms long", evs, err)
	}
	rc, err := a.read(from, to)
	if err != nil || rc.all() != 2 || rc[cmdBench]["create namespaceclaims"] != 1 {
		t.Fatalf("read = %v, %v; want the window's two requests", rc, err)
	}
}
