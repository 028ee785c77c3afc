package ownership_test

import (
	"context"
	"fmt"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// cacheShowsWidgets waits until cc's cache holds exactly want Widgets in
// ns (their deletions, or their creations, shown to the informer).
func cacheShowsWidgets(t *testing.T, cc *testapi.Cached, ns string, want int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the cache shows %d owners", want), func() error {
		var l testapi.WidgetList
		if err := cc.Manager.GetClient().List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) != want {
			return fmt.Errorf("%d owners in the cache", len(l.Items))
		}
		return nil
	})
}

// TestApplyForgetsOwnersGone: what CreateOrUpdate and Apply remember of a
// child is bounded by the child, not by the owners that ever wrote it.
// Owners are deleted (no garbage collector runs here: their children
// stay, as orphaned or restored children do) and created again under
// their names, with new UIDs; each new owner takes its child back
// (RecordOwner): updated, controlled by the new owner (nothing remembered
// of the old owner's write makes the call skip it), and then converged
// (a second call writes nothing). Once the informer shows the old owners
// gone, nothing is remembered of them: the State holds as many memos as
// after the first round, round after round.
func TestApplyForgetsOwnersGone(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	for _, fn := range allFns {
		t.Run(fn.name, func(t *testing.T) {
			ns := env.Namespace(t)
			s := scope.Held(cc.Client)
			const n, rounds = 100, 3
			owners := make([]*testapi.Widget, n)
			write := func(round int, want controllerutil.OperationResult) {
				t.Helper()
				cc.Counter.Reset()
				for i, o := range owners {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("child-", i)}}
					op, err := fn.fn(ctx, cc.Client, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }, ownership.RecordOwner{})
					if err != nil {
						t.Fatalf("round %d, child %d: %v", round, i, err)
					}
					if op != want {
						t.Fatalf("round %d, child %d: %s, want %s", round, i, op, want)
					}
				}
			}
			start, base := s.Memos(), 0 // the memos of other subtests' children
			for round := range rounds {
				for i := range owners {
					owners[i] = owner(t, ns, fmt.Sprint("owner-", i))
				}
				cacheShowsWidgets(t, cc, ns, n)
				write(round, map[bool]controllerutil.OperationResult{true: "created", false: "updated"}[round == 0])
				for i, o := range owners {
					var cm corev1.ConfigMap
					if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprint("child-", i)}, &cm); err != nil {
						t.Fatal(err)
					}
					if !metav1.IsControlledBy(&cm, o) {
						t.Fatalf("round %d: %s not controlled by its owner of this round: %v", round, cm.Name, cm.OwnerReferences)
					}
					cachedSees(t, cc, &cm)
				}
				write(round, controllerutil.OperationResultNone)
				if w := cc.Counter.Writes(); w != 0 {
					t.Errorf("round %d: %d writes for converged children", round, w)
				}
				if round == 0 {
					base = s.Memos() - start
					if base < n {
						t.Fatalf("%d memos after writing %d children, want at least %d", base, n, n)
					}
				}
				if got := s.Memos() - start; got != base {
					t.Errorf("round %d: %d memos, want %d (one per child, as after the first round): what is remembered of deleted owners is not forgotten", round, got, base)
				}
				if round == rounds-1 {
					break
				}
				for _, o := range owners {
					if err := env.Client.Delete(ctx, o); err != nil {
						t.Fatal(err)
					}
				}
				cacheShowsWidgets(t, cc, ns, 0)
			}
		})
	}
}

// TestAChildDeletedBeforeItsAnswerIsForgotten: the answer to a write of
// a child can come after the informer showed the child deleted (someone
// else, the garbage collector say, deleted it right after the write, and
// the watch event beat the answer): what the call then remembers of the
// child must end all the same. A client's Update deletes the child once
// it is written and returns only after the manager's informer (and
// steady's handler on it) showed the deletion; the update's verdict is
// remembered after that. Once the cache shows the children gone, nothing
// is remembered of any of them.
func TestAChildDeletedBeforeItsAnswerIsForgotten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}}})
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	s := scope.Held(cc.Client)
	// A direct client of the manager's cluster (its REST mapper: the
	// manager's memory is that cluster's).
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme, Mapper: cc.Manager.GetRESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	deleting := interceptor.NewClient(direct, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			key := client.ObjectKeyFromObject(obj)
			if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
				return err
			}
			testenv.Eventually(t, "the informer shows "+key.Name+" deleted", func() error {
				if err := cc.Manager.GetClient().Get(ctx, key, &corev1.ConfigMap{}); err == nil {
					return fmt.Errorf("still cached")
				}
				if ownership.Remembered(ctx, cc.Client, obj) {
					return fmt.Errorf("steady's handler has not seen the deletion")
				}
				return nil
			})
			return nil
		},
	})
	through := scope.Wrap(deleting, s) // the manager's memory, the deleting writer
	const n = 20
	for i := range n {
		name := fmt.Sprint("child-", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if op, err := ownership.CreateOrUpdate(ctx, cc.Client, o, cm, func() error { cm.Data = map[string]string{"v": "1"}; return nil }); err != nil || op != controllerutil.OperationResultCreated {
			t.Fatalf("%s: %s, %v", name, op, err)
		}
		if !ownership.Remembered(ctx, cc.Client, cm) {
			t.Fatalf("%s: nothing remembered of its create", name)
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if op, err := ownership.CreateOrUpdate(ctx, through, o, cm, func() error { cm.Data = map[string]string{"v": "2"}; return nil }); err != nil || op != controllerutil.OperationResultUpdated {
			t.Fatalf("%s: %s, %v", name, op, err)
		}
	}
	var l corev1.ConfigMapList
	if err := cc.Manager.GetClient().List(ctx, &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range l.Items {
		if cm.Name != "kube-root-ca.crt" {
			t.Fatalf("the cache still holds %s", cm.Name)
		}
	}
	if got := s.Len(); got != 0 {
		t.Errorf("%d objects remembered of %d children the informer showed deleted; want 0", got, n)
	}
}
