package multicluster_test

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"

	"github.com/steadyk8s/steady/testenv"
)

// wrapped is e's config with its requests counted by c.
func wrapped(e *testenv.Environment, c *testenv.RequestCounter) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return c.Wrap(rt) })
	return cfg
}

// ownersIn creates namespace ns and a ConfigMap "owner" in it, labelled
// labels, in the fleet's first two members, and returns the owners.
func ownersIn(t *testing.T, ns string, labels map[string]string) []*corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	owners := make([]*corev1.ConfigMap, 2)
	for i, e := range fleet.Members[:2] {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		owners[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner", Labels: labels}}
		if err := e.Client.Create(ctx, owners[i]); err != nil {
			t.Fatal(err)
		}
	}
	return owners
}
