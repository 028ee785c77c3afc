package applyset_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/internal/testapi"
)

// requestTable is the measure: cms ConfigMaps and secrets Secrets
// in one namespace, parent a Secret.
func requestTable(cms, secrets, drop int) string {
	var b strings.Builder
	for i := 0; i < cms; i++ {
		if i < drop {
			continue
		}
		b.WriteString(cm(fmt.Sprintf("cm-%02d", i)))
	}
	for i := 0; i < secrets; i++ {
		b.WriteString(secret(fmt.Sprintf("secret-%02d", i)))
	}
	return b.String()
}

// steps are the three steps of the request table.
var steps = []string{"first apply", "re-apply, unchanged", "5 removed + prune"}

// steadySteps runs the three steps with a counting client and returns the
// requests of each, discovery left out.
func steadySteps(t testing.TB, ns string, cms, secrets int, opts ...applyset.SetOption) [3]int {
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	set, err := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "table"}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var out [3]int
	for i, drop := range []int{0, 0, 5} {
		objs, err := applyset.ParseYAML([]byte(requestTable(cms, secrets, drop)))
		if err != nil {
			t.Fatal(err)
		}
		n.Reset()
		res, err := set.Apply(ctx, objs)
		if err != nil {
			t.Fatalf("%s: %v", steps[i], err)
		}
		if i == 1 && (n.Writes() != 0 || res.Count(applyset.Unchanged) != cms+secrets) {
			t.Fatalf("unchanged re-apply: %s, %+v", n, res)
		}
		if i == 2 && res.Count(applyset.Pruned) != 5 {
			t.Fatalf("prune: %+v", res)
		}
		out[i] = total(n)
		t.Logf("steady %s: %d requests (%s)", steps[i], out[i], n)
	}
	return out
}

func total(n *testapi.Counter) int {
	sum := 0
	for _, f := range strings.Fields(n.String()) {
		var v string
		var c int
		if i := strings.IndexByte(f, '='); i > 0 {
			v = f[:i]
			fmt.Sscan(f[i+1:], &c)
		}
		if v != "DISCOVERY" {
			sum += c
		}
	}
	return sum
}

// kubectlRequest matches a request in kubectl's -v=6 log; discoveryURL
// matches discovery and OpenAPI requests, left out as steady's Counter
// leaves discovery out.
var (
	kubectlRequest = regexp.MustCompile(`verb="([A-Z]+)" url="([^"]*)"`)
	discoveryURL   = regexp.MustCompile(`^https?://[^/]+/(api|apis|api/v1|apis/[^/]+|apis/[^/]+/[^/]+|openapi/.*|version)(\?.*)?$`)
)

// kubectlSteps runs the three steps with kubectl apply --prune --applyset
// (server-side or client-side) and counts its requests but discovery.
func kubectlSteps(t testing.TB, ns string, cms, secrets int, serverSide bool) [3]int {
	var out [3]int
	for i, drop := range []int{0, 0, 5} {
		args := []string{"apply", "-n", ns, "--prune", "--applyset=secret/table", "-f", "-", "-v=6"}
		if serverSide {
			args = append(args, "--server-side")
		}
		log, err := kubectlB(t, requestTable(cms, secrets, drop), args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", steps[i], err, log)
		}
		for _, m := range kubectlRequest.FindAllStringSubmatch(log, -1) {
			if !discoveryURL.MatchString(m[2]) {
				out[i]++
			}
		}
	}
	return out
}

// TestRequestBudget holds steady to the goals on 20 ConfigMaps and
// 5 Secrets, beside kubectl --server-side on the same objects: an unchanged
// re-apply and a prune cost no more than kubectl's, and no request per
// object; the first apply at most twice kubectl's plus a few.
func TestRequestBudget(t *testing.T) {
	env.Require(t)
	got := steadySteps(t, env.Namespace(t), 20, 5)
	k := kubectlSteps(t, env.Namespace(t), 20, 5, true)
	t.Logf("kubectl --server-side: %v", k)
	budget := [3]int{2*k[0] + 4, min(k[1], 4), min(k[2], 5+4)}
	for i := range got {
		if got[i] > budget[i] {
			t.Errorf("%s: %d requests, budget %d (kubectl --server-side %d)", steps[i], got[i], budget[i], k[i])
		}
	}
	// Without the dry runs, a first apply costs kubectl's and one GET: steady
	// reads the parent before it writes it (what makes its unchanged
	// re-apply 3 requests against kubectl's 30).
	if nd := steadySteps(t, env.Namespace(t), 20, 5, applyset.NoDryRun{}); nd[0] > k[0]+1 || nd[1] > budget[1] || nd[2] > budget[2] {
		t.Errorf("NoDryRun: %v requests, kubectl --server-side %v", nd, k)
	} else {
		t.Logf("NoDryRun: %v requests, kubectl --server-side %v", nd, k)
	}
	// 100 unchanged objects cost what 25 do.
	ns := env.Namespace(t)
	c100 := steadySteps(t, ns, 95, 5)
	if c100[1] > budget[1] {
		t.Errorf("re-apply of 100 unchanged objects: %d requests", c100[1])
	}
}

// BenchmarkRequestTable prints the request table, steady beside
// kubectl (server-side and client-side), for 25 and 100 objects: run with
// go test -run '^$' -bench RequestTable ./applyset/.
func BenchmarkRequestTable(b *testing.B) {
	for _, size := range [][2]int{{20, 5}, {95, 5}} {
		b.Run(fmt.Sprintf("objects=%d", size[0]+size[1]), func(b *testing.B) {
			var s, ssa, csa [3]int
			for i := 0; i < b.N; i++ {
				s = steadySteps(b, env.Namespace(b), size[0], size[1])
				ssa = kubectlSteps(b, env.Namespace(b), size[0], size[1], true)
				csa = kubectlSteps(b, env.Namespace(b), size[0], size[1], false)
			}
			for j, name := range []string{"first", "unchanged", "prune"} {
				b.ReportMetric(float64(s[j]), "steady-"+name+"-req")
				b.ReportMetric(float64(ssa[j]), "kubectl-ssa-"+name+"-req")
				b.ReportMetric(float64(csa[j]), "kubectl-csa-"+name+"-req")
			}
			b.Logf("%-22s %8s %12s %12s", "step", "steady", "kubectl-ssa", "kubectl-csa")
			for j := range steps {
				b.Logf("%-22s %8d %12d %12d", steps[j], s[j], ssa[j], csa[j])
			}
		})
	}
}

// TestWaitCurrentListsPerKind: waiting for 100 ConfigMaps and a Deployment
// that never becomes Current (envtest runs no controller) lists per kind,
// and after the first round only the Deployments.
func TestWaitCurrentListsPerKind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}, applyset.WaitCurrent(time.Second))
	objs := parse(t, requestTable(100, 0, 0)+deployYAML)
	n.Reset()
	_, err := set.Apply(ctx, objs)
	var nce *applyset.NotCurrentError
	if !errors.As(err, &nce) || len(nce.Objects) != 1 {
		t.Fatalf("apply: %v", err)
	}
	// 2 LISTs before the apply, 2 in the first round, then 1 per 200ms.
	if lists, gets := n.Get("LIST"), n.Get("GET"); lists > 2+2+7 || gets > 1 {
		t.Errorf("the wait made %d LISTs and %d GETs (%s)", lists, gets, n)
	}
}

// NoDryRun: a member the API server refuses is found by its apply, after
// the members before it were applied; it is Failed, the error names it, and
// nothing is pruned. A re-apply that changes nothing is Unchanged.
func TestNoDryRun(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	set, err := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nodry"}}, applyset.NoDryRun{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := applyset.ParseYAML([]byte(requestTable(3, 0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := set.Apply(ctx, objs); err != nil || res.Count(applyset.Applied) != 3 {
		t.Fatalf("first apply: %+v, %v", res, err)
	}
	n.Reset()
	res, err := set.Apply(ctx, objs)
	if err != nil || res.Count(applyset.Unchanged) != 3 || n.Writes() != 0 {
		t.Fatalf("re-apply: %+v, %v, requests %s", res, err, n)
	}
	bad, err := applyset.ParseYAML([]byte(requestTable(3, 0, 0) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\n"))
	if err != nil {
		t.Fatal(err)
	}
	objs2 := append(bad[:2:2], bad[3]) // the third ConfigMap dropped: prune would delete it
	res, err = set.Apply(ctx, objs2)
	if err == nil || res.Count(applyset.Failed) != 1 || res.Count(applyset.Pruned) != 0 || !strings.Contains(err.Error(), "Not_A_Valid_Name") {
		t.Fatalf("refused member: %+v, %v", res, err)
	}
}
