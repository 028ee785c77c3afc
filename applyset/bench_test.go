package applyset_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/internal/testapi"
)

// manifests returns one object of each of g kinds in each namespace, all
// labelled for kubectl's legacy prune.
func manifests(g int, namespaces []string, skip string) string {
	// Kinds of kubectl's default prune allowlist, each with a valid body.
	kinds := [][2]string{{"ConfigMap", "data: {k: v}"}, {"Secret", "stringData: {k: v}"}, {"Service", "spec: {ports: [{port: 80}]}"}}[:g]
	var b strings.Builder
	for _, ns := range namespaces {
		for _, k := range kinds {
			for _, name := range []string{"keep", "drop"} {
				if name == skip {
					continue
				}
				fmt.Fprintf(&b, "apiVersion: v1\nkind: %s\nmetadata: {name: %s, namespace: %s, labels: {bench: prune}}\n%s\n---\n", k[0], name, ns, k[1])
			}
		}
	}
	return b.String()
}

// listRequest matches a LIST in kubectl's -v=6 request log.
var listRequest = regexp.MustCompile(`verb="GET" url="[^"]*\?labelSelector=`)

// BenchmarkPruneRequests counts the API requests of one prune that removes
// one object per group-kind per namespace, for g group-kinds across k
// namespaces: steady's ApplySet prune lists only the group-kinds and
// namespaces of the parent's annotations; kubectl's legacy prune (apply
// --prune -l) lists every type of its default allowlist in each namespace.
func BenchmarkPruneRequests(b *testing.B) {
	ctx := context.Background()
	for _, gk := range [][2]int{{1, 1}, {3, 1}, {3, 3}} {
		g, k := gk[0], gk[1]
		b.Run(fmt.Sprintf("kinds=%d/namespaces=%d", g, k), func(b *testing.B) {
			c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
			if err != nil {
				b.Fatal(err)
			}
			var lists, total, kubectlLists int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var nss []string
				for j := 0; j < k; j++ {
					nss = append(nss, env.Namespace(b))
				}
				set, err := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nss[0], Name: "bench"}})
				if err != nil {
					b.Fatal(err)
				}
				full, _ := applyset.ParseYAML([]byte(manifests(g, nss, "")))
				if _, err := set.Apply(ctx, full); err != nil {
					b.Fatal(err)
				}
				reduced, _ := applyset.ParseYAML([]byte(manifests(g, nss, "drop")))
				n.Reset()
				b.StartTimer()
				res, err := set.Apply(ctx, reduced)
				b.StopTimer()
				if err != nil || res.Count(applyset.Pruned) != g*k {
					b.Fatalf("prune: %+v, %v", res, err)
				}
				lists += n.Get("LIST")
				total += n.Get("LIST") + n.Get("GET") + n.Writes() + n.Get("DRYRUN-PATCH")

				// The same objects, pruned by kubectl's legacy allowlist prune.
				var knss []string
				for j := 0; j < k; j++ {
					knss = append(knss, env.Namespace(b))
				}
				if out, err := kubectlB(b, manifests(g, knss, ""), "apply", "--prune", "-l", "bench=prune", "-f", "-"); err != nil {
					b.Fatalf("kubectl apply: %v\n%s", err, out)
				}
				out, err := kubectlB(b, manifests(g, knss, "drop"), "apply", "--prune", "-l", "bench=prune", "-f", "-", "-v=6")
				if err != nil || strings.Count(out, "pruned") != g*k {
					b.Fatalf("kubectl legacy prune: %v\n%s", err, out)
				}
				kubectlLists += len(listRequest.FindAllString(out, -1))
			}
			b.ReportMetric(float64(lists)/float64(b.N), "steady-lists/op")
			b.ReportMetric(float64(total)/float64(b.N), "steady-requests/op")
			b.ReportMetric(float64(kubectlLists)/float64(b.N), "kubectl-legacy-lists/op")
		})
	}
}
