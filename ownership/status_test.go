package ownership_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// TestCreateOrUpdateDoesNotPayForStatusItCannotWrite: CreateOrUpdate with a
// mutate that also sets status, on a kind with a status subresource (whose
// update ignores status), costs no request once it knows the kind has one,
// even with a status that changes every call: status is not compared
// there. The first update of the kind teaches it (at most one per REST
// mapper, the cluster as ownership knows it, which the server finds
// nothing in). On a kind without one, a status change is still written.
// Through a manager's cached client held 300ms back and a counting direct
// client.
func TestCreateOrUpdateDoesNotPayForStatusItCannotWrite(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	cc := startCached(t)
	direct, dn := counting(t)
	learning := 0
	for _, tc := range []struct {
		name string
		c    client.Client
		n    *testapi.Counter
	}{{"cached", cc.Client, cc.Counter}, {"direct", direct, dn}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "w-" + tc.name
			for i := 0; i < 6; i++ {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				tc.n.Reset()
				op, err := ownership.CreateOrUpdate(ctx, tc.c, o, w, func() error {
					w.Spec.Size = 2
					w.Status.Phase = fmt.Sprintf("phase-%d", i) // never written by CreateOrUpdate
					return nil
				})
				want := controllerutil.OperationResultNone
				if i == 0 {
					want = controllerutil.OperationResultCreated
				}
				if err != nil || op != want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, want)
				}
				if i > 0 {
					learning += tc.n.Writes() + tc.n.Get("DRYRUN-PUT")
				}
				if i > 0 && w.Status.Phase != "" {
					t.Errorf("call %d: status phase %q stored; the update wrote status", i, w.Status.Phase)
				}
				t.Logf("call %d: %s, requests %s", i, op, tc.n)
				if i == 0 && tc.name == "cached" {
					cachedSees(t, cc, w)
				}
			}
		})
	}
	// What is learned of a kind is kept per cluster, by REST mapper: the
	// manager's client and the counting client have one each here.
	if learning > 2 {
		t.Errorf("%d requests beyond the GETs in 10 calls whose only difference is a status the update cannot write; want at most the one per client's REST mapper that learns the kind", learning)
	}
	t.Run("a kind without a status subresource", func(t *testing.T) {
		for i, phase := range []string{"A", "B"} {
			u := unstructuredChild(gizmoGVK, ns, "g")
			op, err := ownership.CreateOrUpdate(ctx, direct, o, u, func() error {
				return unstructured.SetNestedField(u.Object, phase, "status", "phase")
			})
			if want := []controllerutil.OperationResult{"created", "updated"}[i]; err != nil || op != want {
				t.Fatalf("phase %s: %s, %v; want %s", phase, op, err, want)
			}
		}
		stored := unstructuredChild(gizmoGVK, ns, "g")
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(stored.Object, "status", "phase"); phase != "B" {
			t.Errorf("stored status.phase %q, want B", phase)
		}
	})
}
