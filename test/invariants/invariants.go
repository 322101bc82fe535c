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

// Package invariants checks, over a whole cluster and through an uncached client, the properties
// nsclaim keeps whatever happens to it: no namespace or child without its claim, no claim with two
// namespaces, no credentials Secret without its claim; and, once every claim has settled, exactly the
// objects each claim's class asks for and a token that authenticates as the claim's tenant. The chaos
// test (test/bench) runs it after every scenario; the envtest suite and the e2e suite, through Suite,
// after each of theirs and at their end.
package invariants

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
)

// Options select the checks that hold only once every claim has settled.
type Options struct {
	// Settled adds the checks that hold when every claim of the cluster is valid and has had time to
	// be provisioned: every claim is Ready for its generation, with NamespaceReady, PermissionsVerified
	// and CredentialsReady True, not Expired, in the phase of a Ready claim, and holds exactly one namespace, the one in its status, not
	// terminating; that namespace holds exactly the children the claim's class asks for; the claim has
	// exactly one credentials Secret, the one named in its status, and its token was issued for the
	// live tenant ServiceAccount; and no ServiceAccount named nsclaim-tenant lives elsewhere.
	Settled bool
	// Tokens adds a TokenReview of every claim's credentials: the token must authenticate as the tenant
	// ServiceAccount of the claim's namespace. The token is never printed. Needs Settled.
	Tokens bool
	// Key, when set, is the operator's ownership key: a namespace whose marks (a claim's or a pool's)
	// its record does not prove is not nsclaim's, and is left out (an attacker's forgery, which the
	// operator must leave alone). Without it every marked namespace counts as nsclaim's.
	Key *ownership.Key
}

// maxViolations bounds the violations listed; the rest are counted.
const maxViolations = 30

// Kinds of the children, as named in violations.
const (
	kindServiceAccount = "ServiceAccount"
	kindRole           = "Role"
	kindRoleBinding    = "RoleBinding"
	kindResourceQuota  = "ResourceQuota"
	kindLimitRange     = "LimitRange"
	kindNetworkPolicy  = "NetworkPolicy"
)

// managed selects the objects that carry nsclaim's managed-by label.
var managed = client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}

// Check lists claims, classes, namespaces, children and credentials Secrets through c (an uncached
// client allowed to list them cluster-wide, and to create TokenReviews for Options.Tokens) and returns
// the broken invariants, sorted, at most maxViolations of them and then a count of the rest.
// Whatever the options:
//   - every namespace with nsclaim's managed-by label (but a requests namespace) names (claim-uid and claim-namespace labels) an
//     existing claim, or is terminating;
//   - no claim has more than one namespace that is not terminating;
//   - every child with the managed-by label lives in a namespace of the claim its labels name, or in a
//     terminating one; in a namespace handed out of a pool it may name no claim yet (its marks follow
//     the handout);
//   - every credentials Secret with the managed-by label belongs to an existing claim of its own
//     namespace;
//   - a pooled namespace (claimpolicy.IsPooled: a class's warm pool, no claim's) is no orphan, but it
//     holds no Secret, no RoleBinding and no child marked for a claim, and no ClusterRoleBinding
//     (its namespace watcher's) names it: it is bound to nobody.
//
// It returns an error only when a list fails.
func Check(ctx context.Context, c client.Client, o Options) ([]string, error) {
	v := &violations{}
	claims := &tenancyv1alpha1.NamespaceClaimList{}
	if err := c.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing NamespaceClaims: %w", err)
	}
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss, managed); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	if o.Key != nil {
		nss.Items = slices.DeleteFunc(nss.Items, func(ns corev1.Namespace) bool { return !proven(o.Key, &ns) })
	}
	byUID := map[string]*tenancyv1alpha1.NamespaceClaim{}
	for i := range claims.Items {
		byUID[string(claims.Items[i].UID)] = &claims.Items[i]
	}
	live := checkNamespaces(v, nss.Items, byUID)
	pooled := map[string]bool{}
	for _, ns := range nss.Items {
		if claimpolicy.IsPooled(&ns) && ns.DeletionTimestamp.IsZero() {
			pooled[ns.Name] = true
		}
	}
	if err := checkPooled(ctx, c, v, pooled); err != nil {
		return nil, err
	}

	children, err := listChildren(ctx, c)
	if err != nil {
		return nil, err
	}
	terminating := map[string]bool{}
	for _, ns := range nss.Items {
		if !ns.DeletionTimestamp.IsZero() {
			terminating[ns.Name] = true
		}
	}
	handedOut := map[string]bool{}
	for _, ns := range nss.Items {
		if ns.Annotations[tenancyv1alpha1.PooledAnnotation] == "true" {
			handedOut[ns.Name] = true
		}
	}
	checkChildOwners(v, children, live, terminating, pooled, handedOut)

	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, managed); err != nil {
		return nil, fmt.Errorf("listing Secrets: %w", err)
	}
	secretsOf := checkSecretOwners(v, secrets.Items, byUID)

	if o.Settled {
		classes := &tenancyv1alpha1.NamespaceClassList{}
		if err := c.List(ctx, classes); err != nil {
			return nil, fmt.Errorf("listing NamespaceClasses: %w", err)
		}
		s := &settled{v: v, claims: claims.Items, live: live, terminating: terminating, children: children, secretsOf: secretsOf, pooled: pooled}
		s.check(classes.Items)
		if err := s.checkTenantServiceAccounts(ctx, c); err != nil {
			return nil, err
		}
		if o.Tokens {
			s.checkTokens(ctx, c)
		}
	}
	return v.result(), nil
}

// CheckWithin runs Check until no invariant is broken or settle has passed, every poll, and returns
// what is still broken then. Suites that run scenarios in parallel use it after each one: a scenario may
// break an invariant on purpose (an attack), and the operator must restore it within settle.
func CheckWithin(ctx context.Context, c client.Client, o Options, settle, poll time.Duration) ([]string, error) {
	deadline := time.Now().Add(settle)
	for {
		broken, err := Check(ctx, c, o)
		if err != nil || len(broken) == 0 || time.Now().After(deadline) {
			return broken, err
		}
		select {
		case <-ctx.Done():
			return broken, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// proven reports whether key's record proves the marks of ns, a claim's or a pool's. A requests
// namespace of the ConfigMap protocol is judged as before; any other marked namespace whose marks name
// neither a whole claim nor a pool was marked by someone else.
func proven(key *ownership.Key, ns *corev1.Namespace) bool {
	if owner, ok := claimpolicy.OwnerFromMarks(ns); ok {
		return key.Verify(ns, ownership.Claim(owner.Namespace, owner.Name, owner.UID))
	}
	if claimpolicy.IsPooled(ns) {
		return key.Verify(ns, ownership.Pool(ns.Labels[tenancyv1alpha1.PoolClassUIDLabel]))
	}
	return isRequestsNamespace(ns)
}

// isRequestsNamespace reports whether ns is labelled as a requests namespace of the ConfigMap protocol.
func isRequestsNamespace(ns *corev1.Namespace) bool {
	return ns.Labels[tenancyv1alpha1.RequestsNamespaceLabel] == "true"
}

// checkNamespaces checks that every managed namespace belongs to an existing claim or is terminating,
// and that no claim has two live namespaces. It returns the claim of each live (not terminating)
// namespace that belongs to one.
func checkNamespaces(v *violations, nss []corev1.Namespace, byUID map[string]*tenancyv1alpha1.NamespaceClaim) map[string]*tenancyv1alpha1.NamespaceClaim {
	live := map[string]*tenancyv1alpha1.NamespaceClaim{}
	liveOf := map[string][]string{}
	for _, ns := range nss {
		if isRequestsNamespace(&ns) {
			// A requests namespace of the ConfigMap protocol, not a claim's.
			continue
		}
		uid := ns.Labels[tenancyv1alpha1.ClaimUIDLabel]
		claim, ok := byUID[uid]
		if ok && ns.Labels[tenancyv1alpha1.ClaimNamespaceLabel] != claim.Namespace {
			v.add("namespace %s: claim-uid %s is claim %s/%s, but claim-namespace is %q", ns.Name, uid, claim.Namespace, claim.Name,
				ns.Labels[tenancyv1alpha1.ClaimNamespaceLabel])
			ok = false
		}
		switch {
		case !ns.DeletionTimestamp.IsZero():
			// A namespace being deleted may outlive its claim.
		case !ok && claimpolicy.IsPooled(&ns):
			// A class's warm pool: no claim holds it (checkPooled checks it is bound to nobody).
		case !ok:
			v.add("namespace %s (claim-uid %q) belongs to no claim and is not terminating", ns.Name, uid)
		default:
			live[ns.Name] = claim
			liveOf[uid] = append(liveOf[uid], ns.Name)
		}
	}
	for uid, names := range liveOf {
		if len(names) > 1 {
			claim := byUID[uid]
			sort.Strings(names)
			v.add("claim %s/%s has %d namespaces: %v", claim.Namespace, claim.Name, len(names), names)
		}
	}
	return live
}

// child is a managed object inside a namespace.
type child struct {
	kind, namespace, name, uid, claimUID string
}

// listChildren lists the managed children of every kind cluster-wide, sorted by kind, namespace and
// name.
func listChildren(ctx context.Context, c client.Client) ([]child, error) {
	lists := map[string]client.ObjectList{
		kindServiceAccount: &corev1.ServiceAccountList{}, kindRole: &rbacv1.RoleList{}, kindRoleBinding: &rbacv1.RoleBindingList{},
		kindResourceQuota: &corev1.ResourceQuotaList{}, kindLimitRange: &corev1.LimitRangeList{}, kindNetworkPolicy: &networkingv1.NetworkPolicyList{},
	}
	var out []child
	for kind, list := range lists {
		if err := c.List(ctx, list, managed); err != nil {
			return nil, fmt.Errorf("listing %ss: %w", kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			obj, ok := it.(client.Object)
			if !ok {
				return nil, fmt.Errorf("listing %ss: %T is not an object", kind, it)
			}
			out = append(out, child{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName(), uid: string(obj.GetUID()),
				claimUID: obj.GetLabels()[tenancyv1alpha1.ClaimUIDLabel]})
		}
	}
	slices.SortFunc(out, func(a, b child) int {
		if a.kind != b.kind {
			return compare(a.kind, b.kind)
		}
		if a.namespace != b.namespace {
			return compare(a.namespace, b.namespace)
		}
		return compare(a.name, b.name)
	})
	return out, nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkChildOwners checks that every managed child lives in a live namespace of the claim its labels
// name, or in a terminating namespace.
func checkChildOwners(v *violations, children []child, live map[string]*tenancyv1alpha1.NamespaceClaim, terminating, pooled, handedOut map[string]bool) {
	for _, ch := range children {
		if terminating[ch.namespace] {
			continue
		}
		if pooled[ch.namespace] {
			if ch.claimUID != "" {
				v.add("%s %s/%s is in pooled namespace %s but marked for claim-uid %q", ch.kind, ch.namespace, ch.name, ch.namespace, ch.claimUID)
			}
			continue
		}
		claim, ok := live[ch.namespace]
		switch {
		case !ok:
			v.add("%s %s/%s is in namespace %s, which belongs to no claim", ch.kind, ch.namespace, ch.name, ch.namespace)
		case ch.claimUID == "" && handedOut[ch.namespace]:
			// A child the pool made, in a namespace handed out moments ago: it gains its claim's marks in
			// a later reconcile (docs/pool.md). Marked for no other claim.
		case string(claim.UID) != ch.claimUID:
			v.add("%s %s/%s is marked for claim-uid %q, its namespace belongs to claim %s/%s", ch.kind, ch.namespace, ch.name, ch.claimUID,
				claim.Namespace, claim.Name)
		}
	}
}

// checkSecretOwners checks that every managed Secret but the operator's ownership key belongs to an
// existing claim of its namespace, and returns the Secrets of each claim by UID.
func checkSecretOwners(v *violations, secrets []corev1.Secret, byUID map[string]*tenancyv1alpha1.NamespaceClaim) map[string][]*corev1.Secret {
	out := map[string][]*corev1.Secret{}
	for i := range secrets {
		s := &secrets[i]
		uid := s.Labels[tenancyv1alpha1.ClaimUIDLabel]
		claim, ok := byUID[uid]
		switch {
		case s.Labels[tenancyv1alpha1.SeedLabel] != "":
			// A seed's copy (docs/seeds.md) lives in its claim's namespace, not next to the claim; once
			// the claim is gone its namespace, and the copy with it, is being deleted.
			if ok && claim.Status.Namespace != s.Namespace {
				v.add("Secret %s/%s is a seed copy of claim %s/%s, whose namespace is %s", s.Namespace, s.Name, claim.Namespace, claim.Name, claim.Status.Namespace)
			}
		case !ok && uid == "" && s.Name == tenancyv1alpha1.OwnershipKeySecret:
			// The operator's ownership key, in its own namespace: no claim's.
		case !ok:
			v.add("Secret %s/%s (claim-uid %q) belongs to no claim", s.Namespace, s.Name, uid)
		case claim.Namespace != s.Namespace:
			v.add("Secret %s/%s belongs to claim %s/%s of another namespace", s.Namespace, s.Name, claim.Namespace, claim.Name)
		default:
			out[uid] = append(out[uid], s)
		}
	}
	return out
}

// settled holds what the settled checks need.
type settled struct {
	v           *violations
	claims      []tenancyv1alpha1.NamespaceClaim
	live        map[string]*tenancyv1alpha1.NamespaceClaim
	terminating map[string]bool
	children    []child
	secretsOf   map[string][]*corev1.Secret
	// pooled holds the names of the pooled namespaces.
	pooled map[string]bool
	// saUID is the tenant ServiceAccount's UID per namespace.
	saUID map[string]string
}

// check checks every claim: Ready and all Ready promises (readyBroken), one live namespace (the one in its status) holding exactly the
// children its class asks for, one credentials Secret (the one in its status), and a token recorded
// for the live tenant ServiceAccount.
func (s *settled) check(classes []tenancyv1alpha1.NamespaceClass) {
	got := map[string]map[string][]string{} // namespace -> kind -> names
	s.saUID = map[string]string{}
	for _, ch := range s.children {
		if got[ch.namespace] == nil {
			got[ch.namespace] = map[string][]string{}
		}
		got[ch.namespace][ch.kind] = append(got[ch.namespace][ch.kind], ch.name)
		if ch.kind == kindServiceAccount && ch.name == tenancyv1alpha1.TenantServiceAccountName {
			s.saUID[ch.namespace] = ch.uid
		}
	}
	classByName := map[string]*tenancyv1alpha1.NamespaceClass{}
	for i := range classes {
		classByName[classes[i].Name] = &classes[i]
	}
	nsOf := map[string][]string{}
	for ns, claim := range s.live {
		nsOf[string(claim.UID)] = append(nsOf[string(claim.UID)], ns)
	}
	for i := range s.claims {
		cl := &s.claims[i]
		key := cl.Namespace + "/" + cl.Name
		for _, broken := range readyBroken(key, cl) {
			s.v.add("%s", broken)
		}
		switch nss := nsOf[string(cl.UID)]; {
		case len(nss) == 0:
			s.v.add("claim %s has no live namespace (status.namespace %q)", key, cl.Status.Namespace)
			continue
		case nss[0] != cl.Status.Namespace:
			s.v.add("claim %s: status.namespace %q, but its namespace is %s", key, cl.Status.Namespace, nss[0])
		}
		ns := nsOf[string(cl.UID)][0]
		if class := classByName[cl.Status.ClassName]; class == nil {
			s.v.add("claim %s: class %q not found", key, cl.Status.ClassName)
		} else {
			s.checkChildren(key, ns, claimpolicy.Build(ns, claimpolicy.OwnerOf(cl), class, nil), got[ns])
		}
		s.checkCredentials(key, cl, ns)
	}
}

// checkChildren compares the children of namespace ns, by kind, with those of desired.
func (s *settled) checkChildren(key, ns string, desired claimpolicy.Desired, got map[string][]string) {
	want := map[string][]string{
		kindServiceAccount: {desired.ServiceAccount.Name},
	}
	for _, rb := range desired.RoleBindings {
		want[kindRoleBinding] = append(want[kindRoleBinding], rb.Name)
	}
	if desired.ResourceQuota != nil {
		want[kindResourceQuota] = []string{desired.ResourceQuota.Name}
	}
	if desired.LimitRange != nil {
		want[kindLimitRange] = []string{desired.LimitRange.Name}
	}
	if desired.NetworkPolicy != nil {
		want[kindNetworkPolicy] = []string{desired.NetworkPolicy.Name}
	}
	for _, kind := range []string{kindServiceAccount, kindRole, kindRoleBinding, kindResourceQuota, kindLimitRange, kindNetworkPolicy} {
		w := slices.Clone(want[kind])
		sort.Strings(w)
		if g := got[kind]; !slices.Equal(g, w) {
			s.v.add("claim %s: namespace %s holds %ss %v, want %v", key, ns, kind, g, w)
		}
	}
}

// checkCredentials checks the claim's one Secret and the ServiceAccount its token was issued for.
func (s *settled) checkCredentials(key string, cl *tenancyv1alpha1.NamespaceClaim, ns string) {
	ss := s.secretsOf[string(cl.UID)]
	switch {
	case len(ss) != 1:
		s.v.add("claim %s has %d credentials Secrets", key, len(ss))
	case ss[0].Name != cl.Status.CredentialsSecretName:
		s.v.add("claim %s: its Secret is %s, status names %q", key, ss[0].Name, cl.Status.CredentialsSecretName)
	}
	if cl.Status.TokenServiceAccountUID != "" && cl.Status.TokenServiceAccountUID != s.saUID[ns] {
		s.v.add("claim %s: token recorded for ServiceAccount UID %s, the ServiceAccount's UID is %q", key, cl.Status.TokenServiceAccountUID, s.saUID[ns])
	}
}

// checkTenantServiceAccounts checks that the cluster holds exactly one ServiceAccount named
// nsclaim-tenant outside the live claimed namespaces (and terminating ones), labelled or not.
func (s *settled) checkTenantServiceAccounts(ctx context.Context, c client.Client) error {
	sas := &corev1.ServiceAccountList{}
	if err := c.List(ctx, sas, client.MatchingFields{"metadata.name": tenancyv1alpha1.TenantServiceAccountName}); err != nil {
		return fmt.Errorf("listing ServiceAccounts named %s: %w", tenancyv1alpha1.TenantServiceAccountName, err)
	}
	for _, sa := range sas.Items {
		if _, ok := s.live[sa.Namespace]; !ok && !s.terminating[sa.Namespace] && !s.pooled[sa.Namespace] {
			s.v.add("ServiceAccount %s/%s lives outside the claims' namespaces", sa.Namespace, sa.Name)
		}
	}
	return nil
}

// checkTokens asks the API server whom each claim's token authenticates as, 16 at a time.
func (s *settled) checkTokens(ctx context.Context, c client.Client) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range s.claims {
		cl := &s.claims[i]
		ss := s.secretsOf[string(cl.UID)]
		if len(ss) != 1 {
			continue // reported by checkCredentials
		}
		token := string(ss[0].Data["token"])
		want := "system:serviceaccount:" + cl.Status.Namespace + ":" + tenancyv1alpha1.TenantServiceAccountName
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if user, err := tokenUser(ctx, c, token); err != nil || user != want {
				s.v.add("claim %s/%s: the token in its Secret authenticates as %q (%v), want %s", cl.Namespace, cl.Name, user, err, want)
			}
		}()
	}
	wg.Wait()
}

// tokenUser asks the API server (TokenReview) whom token authenticates as.
func tokenUser(ctx context.Context, c client.Client, token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("no token")
	}
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := c.Create(ctx, tr); err != nil {
		return "", err
	}
	if !tr.Status.Authenticated {
		return "", fmt.Errorf("not authenticated: %s", tr.Status.Error)
	}
	return tr.Status.User.Username, nil
}

// violations collects broken invariants from any goroutine.
type violations struct {
	mu   sync.Mutex
	list []string
}

func (v *violations) add(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.list = append(v.list, fmt.Sprintf(format, args...))
}

// result returns the violations sorted, at most maxViolations of them and then a count of the rest.
func (v *violations) result() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := slices.Sorted(slices.Values(v.list))
	if len(out) > maxViolations {
		return append(out[:maxViolations], fmt.Sprintf("... and %d more", len(out)-maxViolations))
	}
	return out
}

// checkPooled checks that each pooled namespace is bound to nobody and holds no credentials
// (PooledHolds).
func checkPooled(ctx context.Context, c client.Client, v *violations, pooled map[string]bool) error {
	for ns := range pooled {
		held, err := PooledHolds(ctx, c, ns)
		if err != nil {
			return err
		}
		for _, h := range held {
			v.add("%s", h)
		}
	}
	return nil
}

// PooledHolds lists, read through c (an uncached client: the API server's answer), what the pooled
// namespace ns holds that a pooled namespace must not: a Secret, a RoleBinding of anyone's or a
// ServiceAccount other than `default` in it, or a ClusterRoleBinding naming it other than its namespace
// watcher's in the pool's shape (the managed-by label alone, its own ClusterRole, and only the
// ServiceAccount nsclaim-tenant of ns, which the handout makes). Empty: it is bound to nobody who
// exists and holds no credentials. The invariants, the envtest suite and the e2e suite all ask it.
func PooledHolds(ctx context.Context, c client.Reader, ns string) ([]string, error) {
	var held []string
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Secrets in %s: %w", ns, err)
	}
	for _, s := range secrets.Items {
		held = append(held, fmt.Sprintf("pooled namespace %s holds Secret %s", ns, s.Name))
	}
	rbs := &rbacv1.RoleBindingList{}
	if err := c.List(ctx, rbs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing RoleBindings in %s: %w", ns, err)
	}
	for _, rb := range rbs.Items {
		held = append(held, fmt.Sprintf("pooled namespace %s holds RoleBinding %s", ns, rb.Name))
	}
	sas := &corev1.ServiceAccountList{}
	if err := c.List(ctx, sas, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing ServiceAccounts in %s: %w", ns, err)
	}
	for _, sa := range sas.Items {
		if sa.Name != "default" {
			held = append(held, fmt.Sprintf("pooled namespace %s holds ServiceAccount %s", ns, sa.Name))
		}
	}
	crb := &rbacv1.ClusterRoleBinding{}
	err := c.Get(ctx, client.ObjectKey{Name: claimpolicy.NamespaceWatcherName(ns)}, crb)
	if err == nil && !pooledWatcherBinding(crb, ns) {
		held = append(held, fmt.Sprintf("pooled namespace %s is named by ClusterRoleBinding %s (%v, subjects %+v)", ns, crb.Name, crb.Labels, crb.Subjects))
	} else if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading ClusterRoleBinding %s: %w", claimpolicy.NamespaceWatcherName(ns), err)
	}
	return held, nil
}

// pooledWatcherBinding reports whether crb is the namespace watcher's ClusterRoleBinding of the pooled
// namespace ns in the pool's shape: the managed-by label alone, its own ClusterRole, and the
// ServiceAccount nsclaim-tenant of ns as its only subject.
func pooledWatcherBinding(crb *rbacv1.ClusterRoleBinding, ns string) bool {
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: ns}
	return len(crb.Labels) == 1 && claimpolicy.IsManaged(crb) &&
		crb.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: claimpolicy.NamespaceWatcherName(ns)} &&
		len(crb.Subjects) == 1 && crb.Subjects[0] == want
}
