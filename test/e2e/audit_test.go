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

package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/token/jwt"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
}

// auditedBy returns the audit events whose credential ID is id (the query docs/audit.md shows).
func auditedBy(path, id string) ([]auditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		for _, v := range e.User.Extra[user.CredentialIDKey] {
			if v == jwt.CredentialIDForJTI(id) {
				out = append(out, e)
			}
		}
	}
	return out, sc.Err()
}

// An admin joins every request made with a claim's credentials to the claim: the claim's status and an
// Event name the credential ID of each token issued, and the API server's audit log carries that ID on
// each request made with it.
func TestTokenRequestsJoinTheClaimInTheAuditLog(t *testing.T) {
	t.Parallel()
	auditLog := os.Getenv("E2E_AUDIT_LOG")
	if auditLog == "" {
		t.Skip("E2E_AUDIT_LOG is not set: the cluster has no audit log to join (make test-local sets it)")
	}
	g := NewWithT(t)
	p := newPipeline(t, "audit")
	tenant, claim := claimAndWait(t, p, "pr-audit", nil)
	g.Expect(claim.Status.IssuedTokens).NotTo(BeEmpty(), "status.issuedTokens")
	id := claim.Status.IssuedTokens[0].CredentialID
	g.Expect(claim.Status.IssuedTokens[0].ExpiresAt.Time).To(BeTemporally("~", claim.Status.TokenExpiresAt.Time, time.Second))

	// The Event an admin sees names the same ID, and never the token.
	sec := &corev1.Secret{}
	g.Expect(p.client.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
	g.Eventually(func(g Gomega) {
		evs := &corev1.EventList{}
		g.Expect(admin.List(ctx, evs, client.InNamespace(p.ns))).To(Succeed())
		var notes []string
		for _, e := range evs.Items {
			// The first token is named by the Provisioned Event, later ones by TokenIssued.
			if e.InvolvedObject.UID == claim.UID && (e.Reason == "Provisioned" || e.Reason == "TokenIssued") {
				notes = append(notes, e.Message)
			}
		}
		g.Expect(notes).To(ContainElement(ContainSubstring(id)))
		for _, n := range notes {
			g.Expect(n).NotTo(ContainSubstring(secretToken(sec)))
		}
	}).WithTimeout(20 * time.Second).Should(Succeed())

	out, err := kubectl(tenant, "create", "configmap", "audited", "--from-literal=a=b")
	g.Expect(err).NotTo(HaveOccurred(), out)
	evs, err := auditedBy(auditLog, id)
	g.Expect(err).NotTo(HaveOccurred())
	var creates []string
	for _, e := range evs {
		g.Expect(e.User.Username).To(HavePrefix("system:serviceaccount:"+claim.Status.Namespace+":"), "a request with this ID came from another identity")
		if e.Verb == "create" && e.ObjectRef != nil {
			creates = append(creates, strings.Join([]string{e.ObjectRef.Namespace, e.ObjectRef.Resource, e.ObjectRef.Name}, "/"))
		}
	}
	g.Expect(creates).To(ContainElement(claim.Status.Namespace + "/configmaps/audited"))
}
