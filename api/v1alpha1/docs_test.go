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

package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// reasonConstants returns the value of every constant in this package whose name ends in Reason.
func reasonConstants(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range spec.Names {
				if !strings.HasSuffix(id.Name, "Reason") || i >= len(spec.Values) {
					continue
				}
				if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					reasons[v] = true
				}
			}
			return true
		})
	}
	if len(reasons) < 20 {
		t.Fatalf("found only %d reason constants; the parser missed some", len(reasons))
	}
	return reasons
}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableReasons returns the first column of the rows of docs/troubleshooting.md's reason table.
func tableReasons(doc string) []string {
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|")
	matches := row.FindAllStringSubmatch(doc, -1)
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, m[1])
	}
	return out
}

// TestTroubleshootingListsEveryReason: docs/troubleshooting.md has one row for every condition or
// Event reason of this package, and no row for a reason the code does not have.
func TestTroubleshootingListsEveryReason(t *testing.T) {
	reasons := reasonConstants(t)
	rows := tableReasons(readRepoFile(t, "docs/troubleshooting.md"))
	seen := map[string]int{}
	for _, r := range rows {
		seen[r]++
		if !reasons[r] {
			t.Errorf("docs/troubleshooting.md has a row for %s, which api/v1alpha1 does not define", r)
		}
		if seen[r] == 2 {
			t.Errorf("docs/troubleshooting.md has more than one row for %s", r)
		}
	}
	var missing []string
	for r := range reasons {
		if seen[r] == 0 {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	for _, r := range missing {
		t.Errorf("docs/troubleshooting.md has no row for the reason %s (api/v1alpha1): add who acts and the fix", r)
	}
}

// TestTableReasons: the row pattern picks reasons out of table rows only.
func TestTableReasons(t *testing.T) {
	cases := []struct {
		doc  string
		want []string
	}{
		{"| `Expired` | claim | pipeline | x |\n", []string{"Expired"}},
		{"| `Expired` | a |\n| `Released` | b |\n", []string{"Expired", "Released"}},
		{"text `Expired` in prose\n", nil},
		{"| Reason | Where |\n|---|---|\n", nil},
	}
	for _, tc := range cases {
		if got := tableReasons(tc.doc); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("tableReasons(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

// camelCase matches a backticked CamelCase word of two humps or more: how the README and the CSV
// write reasons, condition types and kinds.
var camelCase = regexp.MustCompile("`([A-Z][a-z]+(?:[A-Z][a-z]+)+)`")

// nonReasons are backticked CamelCase words the README and the CSV may use that are not reasons.
var nonReasons = map[string]bool{
	"NamespaceClaim": true, "NamespaceClass": true, "NamespaceClaims": true, "NamespaceClasses": true,
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "RoleBinding": true,
	"ConfigMap": true, "ResourceQuota": true, "LimitRange": true, "NetworkPolicy": true,
	"OperatorCondition": true, "OperatorGroup": true, "ClusterServiceVersion": true, "CatalogSource": true,
	"ServiceMonitor": true, "PrometheusRule": true, "AuthenticationConfiguration": true, "TokenRequest": true,
	"ValidatingAdmissionPolicy": true, "MutatingAdmissionPolicy": true, "SelfSubjectRulesReview": true,
	"SubjectAccessReview": true, "AllNamespaces": true, "OwnNamespace": true, "SingleNamespace": true,
	"MultiNamespace": true, "DenyFromOtherNamespaces": true, "AllowAll": true, "FenceMissingOrAltered": true,
	"KubeconfigServerReachable": true, "KubeconfigServerInClusterOnly": true, "FenceIntact": true,
	"NamespaceReady": true, "CredentialsReady": true, "PermissionsVerified": true, "Requester": true, "SeedsSynced": true,
	"ServiceAccountToken": true, "ClusterReachable": true, "LeastAllocated": true, "Packed": true,
	// The OperatorCondition's and the fence Events' reasons under the previous release's fence (internal/fence/observer.go).
	"PreviousReleaseFence": true, "PreviousFenceGraceExpired": true,
	// Kubernetes' and controller-runtime's names that docs/ uses.
	"MutatingAdmissionPolicyBinding": true, "PartialObjectMetadata": true, "LeaseDuration": true,
	"RenewDeadline": true, "RequeueAfter": true, "ResponseComplete": true, "GetImageLabels": true,
}

// otherToolsFlags are flags of kubectl, operator-sdk and go the README and the CSV show in commands.
var otherToolsFlags = map[string]bool{
	"server-side": true, "from-file": true, "for": true, "timeout": true, "kubeconfig": true, "help": true, "token": true,
	"server": true, "certificate-authority": true, "ignore-not-found": true, "install-mode": true,
	"namespace": true, "field-manager": true, "force-conflicts": true, "dry-run": true, "output": true,
	"selector": true, "all-namespaces": true, "select-optional": true, "run": true, "from-literal": true,
	"manifest-url": true,
	// kubectl create clusterrolebinding, for sleep's rights under OLM (docs/olm.md, the CSV).
	"clusterrole": true, "serviceaccount": true,
	// kubectl delete namespaceclaims --all --all-namespaces, the README's uninstall.
	"all": true,
	// docs/ also shows kube-apiserver, kubectl, kube-proxy, jq, operator-sdk and kwok flags.
	"arg": true, "cleanup": true, "field-selector": true, "service-account-max-token-expiration": true,
	"context": true, "wait-time": true, "debug": true, "prevent-wakeup": true, "authentication-config": true,
	"audit-log-format": true,
	// operator-sdk run bundle's flags and OLM's --opmImage (read as --opm), in docs/olm.md and docs/node.md.
	"use-http": true, "insecure": true, "decompression-image": true, "index-image": true, "opm": true,
	// dockerd, docker run / import and kubelet flags of kind on this machine (docs/node.md).
	"iptables": true, "ip-masq": true, "ip-forward": true, "oom-score-adjust": true, "privileged": true,
	"change": true, "fail-cgroupv1": true,
}

// notSettings are NSCLAIM_ names in the README that are not the manager's settings: the CI secret that
// holds a pipeline's kubeconfig in the examples.
var notSettings = map[string]bool{"NSCLAIM_KUBECONFIG": true}

var (
	flagRef     = regexp.MustCompile("(?:^|[\\s`(])--([a-z][a-z0-9-]+)")
	flagDef     = regexp.MustCompile(`\.\w+Var\(&[^,]+, "([a-z0-9-]+)"`)
	envRef      = regexp.MustCompile(`\bNSCLAIM_[A-Z_]+[A-Z]\b`)
	metricRef   = regexp.MustCompile(`(?:^|[^\w-])(nsclaim_[a-z_]+[a-z])\b`)
	histogramRe = regexp.MustCompile(`_(bucket|sum|count)$`)
)

// userDocs are the documents a user reads: the README, the CSV's description (as written and as
// bundled) and docs/, but for docs/metrics.md, which is generated from the code.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "config/manifests/bases/nsclaim-operator.clusterserviceversion.yaml",
		"bundle/manifests/nsclaim-operator.clusterserviceversion.yaml"}
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) < 5 {
		t.Fatalf("docs/*.md: %d files, %v", len(files), err)
	}
	for _, f := range files {
		if filepath.Base(f) != "metrics.md" {
			docs = append(docs, filepath.Join("docs", filepath.Base(f)))
		}
	}
	return docs
}

// TestUserDocsNameWhatTheCodeHas: the README, the CSV's description and docs/ name no condition reason,
// manager flag, NSCLAIM_ setting or nsclaim_ metric that the code does not have.
func TestUserDocsNameWhatTheCodeHas(t *testing.T) {
	reasons := reasonConstants(t)
	var src strings.Builder
	for _, f := range []string{"cmd/main.go", "internal/fence/observer.go", "internal/kubeconfigserver/kubeconfigserver.go", "internal/testenv/testenv.go", "internal/memlimit/memlimit.go"} {
		src.WriteString(readRepoFile(t, f))
	}
	// The kubectl plugin, the GitHub Action and the GitLab component: their flags and the variables
	// they read or pass on (a GitLab template names a variable without quotes).
	var tools strings.Builder
	for _, pattern := range []string{"cmd/kubectl-nsclaim/*.go", "internal/cli/*.go", "action/*.js", "templates/*.yml"} {
		files, err := filepath.Glob(filepath.Join("..", "..", pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no files match %s", pattern)
		}
		for _, f := range files {
			rel, _ := filepath.Rel(filepath.Join("..", ".."), f)
			tools.WriteString(readRepoFile(t, rel))
		}
	}
	flags := map[string]bool{}
	for _, m := range flagDef.FindAllStringSubmatch(src.String()+tools.String(), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("found only %d flags in cmd/; the pattern missed some", len(flags))
	}
	known := knownNames{reasons: reasons, flags: flags, src: src.String(), tools: tools.String(),
		metrics: readRepoFile(t, "docs/metrics.md"), // generated from internal/monitoring; make verify keeps it current
		code:    repoCode(t)}
	for _, doc := range userDocs(t) {
		checkUserDoc(t, doc, known)
	}
}

// knownNames are what the code defines that user docs may name.
type knownNames struct {
	reasons, flags map[string]bool
	// src is the manager's source, tools the plugin's, the Action's and the component's.
	src, tools string
	// metrics is docs/metrics.md.
	metrics string
	code    repoNames
}

// checkUserDoc reports every reason, flag, NSCLAIM_ setting and metric doc names that known lacks.
func checkUserDoc(t *testing.T, doc string, known knownNames) {
	t.Helper()
	text := readRepoFile(t, doc)
	if strings.HasSuffix(doc, ".clusterserviceversion.yaml") {
		// The CSV's description only: the rest of the file names kinds and fields.
		_, text, _ = strings.Cut(text, "description: |")
		text, _, _ = strings.Cut(text, "\n  displayName:")
	}
	// docs/ is for admins and developers too: it may also name the code (a function, a type, a
	// test), the alerts, and the flags and settings of the test tools, each of which must exist.
	inDocs := strings.HasPrefix(doc, "docs/")
	for _, m := range camelCase.FindAllStringSubmatch(text, -1) {
		if !known.reasons[m[1]] && !nonReasons[m[1]] && (!inDocs || !known.code.names[m[1]]) {
			t.Errorf("%s names `%s`, which is no reason in api/v1alpha1 (nor a kind or condition the test knows%s)", doc, m[1],
				map[bool]string{true: ", nor a name the code or an alert defines", false: ""}[inDocs])
		}
	}
	for _, m := range flagRef.FindAllStringSubmatch(text, -1) {
		if !known.flags[m[1]] && !strings.HasPrefix(m[1], "zap-") && !otherToolsFlags[m[1]] && (!inDocs || !known.code.flags[m[1]]) {
			t.Errorf("%s names the flag --%s, which cmd/ does not define", doc, m[1])
		}
	}
	for _, env := range envRef.FindAllString(text, -1) {
		if !strings.Contains(known.src, `"`+env+`"`) && !regexp.MustCompile(`\b`+env+`\b`).MatchString(known.tools) && !notSettings[env] &&
			(!inDocs || !known.code.envs[env]) {
			t.Errorf("%s names %s, which neither cmd/ and internal/testenv nor the plugin, the Action and the component read", doc, env)
		}
	}
	for _, m := range metricRef.FindAllStringSubmatch(text, -1) {
		if !strings.Contains(known.metrics, "`"+histogramRe.ReplaceAllString(m[1], "")+"`") {
			t.Errorf("%s names the metric %s, which docs/metrics.md (internal/monitoring) does not list", doc, m[1])
		}
	}
}

// repoNames are the names the repository's code defines, for docs/, which may name them.
type repoNames struct {
	// names are the functions, methods, types, constants and variables of every Go file (tests
	// included: docs/ names the tests that prove what it says), and the alerts of config/prometheus.
	names map[string]bool
	// flags are the flags any Go program of the repository defines (the manager, the plugin, the test
	// tools) and the options of hack/ scripts.
	flags map[string]bool
	// envs are the NSCLAIM_ variables any Go file or script reads (the test tools' settings too).
	envs map[string]bool
}

var (
	codeFlagDef = regexp.MustCompile(`\.\w+\((?:&[^,]+, )?"([a-z][a-z0-9-]+)", `)
	reasonDef   = regexp.MustCompile(`\b\w+Reason\s+=\s+"(\w+)"`)
	eventDef    = regexp.MustCompile(`\.Eventf?\([^,]+, [^,]+, [^,]+, "(\w+)"`)
	goDef       = regexp.MustCompile(`(?m)^(?:func(?: \([^)]*\))?|type|const|var)\s+([A-Z]\w*)|^\t([A-Z]\w*)\s+(?:=|\w)`)
	alertDef    = regexp.MustCompile(`(?m)^\s*- alert: (\w+)`)
	scriptFlags = regexp.MustCompile(`(?m)^\s*--([a-z][a-z0-9-]+)\)`)
)

// repoCode reads the names and flags the repository defines.
func repoCode(t *testing.T) repoNames {
	t.Helper()
	root := filepath.Join("..", "..")
	out := repoNames{names: map[string]bool{}, flags: map[string]bool{}, envs: map[string]bool{}}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bin", "tmp", ".git", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sh") && !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		if !strings.HasSuffix(path, ".yaml") {
			for _, env := range envRef.FindAllString(text, -1) {
				out.envs[env] = true
			}
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			for _, re := range []*regexp.Regexp{goDef, reasonDef, eventDef} {
				for _, m := range re.FindAllStringSubmatch(text, -1) {
					out.names[strings.Join(m[1:], "")] = true
				}
			}
			for _, m := range codeFlagDef.FindAllStringSubmatch(text, -1) {
				out.flags[m[1]] = true
			}
		case strings.HasSuffix(path, ".sh"):
			for _, m := range scriptFlags.FindAllStringSubmatch(text, -1) {
				out.flags[m[1]] = true
			}
		default:
			for _, m := range alertDef.FindAllStringSubmatch(text, -1) {
				out.names[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.names) < 500 || len(out.flags) < 20 {
		t.Fatalf("read only %d names and %d flags from the repository; the patterns missed some", len(out.names), len(out.flags))
	}
	return out
}

// TestHandWrittenListsMatchTheCode: the lists of API values that user docs spell out by hand hold what
// the API defines: the README's claim phases (every ClaimPhase, nothing else), and the refusals the
// ConfigMap protocol copies onto a request (docs/configmap-protocol.md: each one of RefusalReasons).
func TestHandWrittenListsMatchTheCode(t *testing.T) {
	phases := regexp.MustCompile(`phase \(((?:[A-Z][a-z]+,\s+)+[A-Z][a-z]+)\)`).FindStringSubmatch(readRepoFile(t, "README.md"))
	if phases == nil {
		t.Fatal("README.md: the list of claim phases, `phase (Pending, ...)`, is gone; update this test")
	}
	got := regexp.MustCompile(`\s*,\s*`).Split(phases[1], -1)
	want := []string{string(ClaimPhasePending), string(ClaimPhaseActive), string(ClaimPhaseIdle), string(ClaimPhaseRefused),
		string(ClaimPhaseExpired), string(ClaimPhaseTerminating)}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("README.md lists the claim phases %v; api/v1alpha1 defines %v", got, want)
	}

	doc := readRepoFile(t, "docs/configmap-protocol.md")
	_, row, ok := strings.Cut(doc, "| the claim's refusals |")
	if !ok {
		t.Fatal("docs/configmap-protocol.md: the row `| the claim's refusals |` is gone; update this test")
	}
	row, _, _ = strings.Cut(row, "\n")
	named := camelCase.FindAllStringSubmatch(row, -1)
	if len(named) < 5 {
		t.Fatalf("docs/configmap-protocol.md names only %d refusals; the pattern missed some", len(named))
	}
	for _, m := range named {
		if m[1] != "RefusalReasons" && !IsRefusalReason(m[1]) {
			t.Errorf("docs/configmap-protocol.md lists %s among the refusals a request's ConfigMap shows, which RefusalReasons does not hold", m[1])
		}
	}
}
