package applyset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
func steadySteps(t testing.TB, ns string, cms, secrets int) [3]int {
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	set, err := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "table"}})
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

// TestRequestBudget holds steady to the goals on 20 ConfigMaps and
// 5 Secrets, beside kubectl --server-side's figures measured by
// BenchmarkRequestTable (28, 30, 30): an unchanged re-apply and a prune cost
// no more than kubectl's and no request per object; the first apply at most
// twice kubectl's plus a few.
func TestRequestBudget(t *testing.T) {
	got := steadySteps(t, env.Namespace(t), 20, 5)
	budget := [3]int{2*28 + 4, 4, 5 + 4}
	for i := range got {
		if got[i] > budget[i] {
			t.Errorf("%s: %d requests, budget %d", steps[i], got[i], budget[i])
		}
	}
	// 100 unchanged objects cost what 25 do.
	ns := env.Namespace(t)
	c100 := steadySteps(t, ns, 95, 5)
	if c100[1] > budget[1] {
		t.Errorf("re-apply of 100 unchanged objects: %d requests", c100[1])
	}
}
