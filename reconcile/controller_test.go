package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
	"github.com/steadyk8s/steady/testenv"
)

// widgetsByWiringColor indexes widgets by spec.color, for the wiring tests.
var widgetsByWiringColor = indexer.New("test.wiring.color", func(w *testapi.Widget) []string { return []string{w.Spec.Color} })

// tally counts calls per object name.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (t *tally) add(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[name]++
}

func (t *tally) get(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[name]
}

// TestNewControllerWiresTheController: a controller built with
// NewController, with nothing but defaults besides its options, owned kind,
// index and watch, on a manager whose cache lags: it reconciles (status,
// observedGeneration, Ready, finalizer written); a change of an owned
// child reconciles its owner; the owned kind's controller-owner index and
// the index given answer field-selector Lists on the cached client; a
// status-only change by another writer does not reconcile again; the
// deletion of an object with a finalizer does, and the cleanup runs. A
// second controller in the same manager registering the same indexes is
// no error.
func TestNewControllerWiresTheController(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	name := "wiring-" + ns
	var reconciles, cleanups, watched tally
	var rec crreconcile.Reconciler
	cc := testapi.StartManager(t, env, testapi.ManagerOptions{
		Namespace: ns, // no Widget earlier tests left elsewhere keeps the controller busy
		Delay:     300 * time.Millisecond,
		Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}},
		Setup: func(mgr ctrl.Manager) error {
			var err error
			rec, err = reconcile.NewController[testapi.Widget](mgr, func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
				reconciles.add(w.Name)
				w.Status.Phase = "Reconciled"
				conditions.MarkTrue(w, "Synced", "Done", "")
				child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-child"}}
				if err := controllerutil.SetControllerReference(w, child, mgr.GetScheme()); err != nil {
					return ctrl.Result{}, err
				}
				if err := mgr.GetClient().Create(ctx, child); err != nil && !apierrors.IsAlreadyExists(err) {
					return ctrl.Result{}, err
				}
				return ctrl.Result{}, nil
			},
				reconcile.WithFinalizer("test.steady.dev/wiring", finalizer.Func(func(_ context.Context, o client.Object) error {
					if o.GetNamespace() == ns {
						cleanups.add(o.GetName())
					}
					return nil
				})),
				reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Synced"}}),
				reconcile.WithObservedGeneration{}).
				Named(name).
				Owns(&corev1.ConfigMap{}).
				Index(widgetsByWiringColor).
				Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, s client.Object) []ctrl.Request {
					if s.GetNamespace() == ns {
						watched.add(s.GetName())
					}
					return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: s.GetNamespace(), Name: s.GetLabels()["widget"]}}}
				}), predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()["widget"] != "" })).
				Complete()
			if err != nil {
				return err
			}
			// Another controller of the manager registers the same indexes:
			// no conflict.
			_, err = reconcile.NewController[testapi.Widget](mgr, func(context.Context, *testapi.Widget) (ctrl.Result, error) {
				return ctrl.Result{}, nil
			}).
				Named(name+"-bystander").
				Owns(&corev1.ConfigMap{}).
				Index(widgetsByWiringColor, indexer.ControllerOwner[*corev1.ConfigMap]()).
				Complete()
			return err
		},
	})
	if rec == nil {
		t.Fatal("Complete returned no reconciler")
	}

	// It reconciles.
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Color: "red"}}
	blue := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blue"}, Spec: testapi.WidgetSpec{Color: "blue"}}
	for _, o := range []client.Object{w, blue} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "Widget reconciled", func() error {
		got := get(t, w)
		if got.Status.Phase != "Reconciled" || got.Status.ObservedGeneration != got.Generation ||
			!conditions.IsTrue(got, conditions.Ready) || !slices.Contains(got.Finalizers, "test.steady.dev/wiring") {
			return fmt.Errorf("status %+v, finalizers %v", got.Status, got.Finalizers)
		}
		return nil
	})

	// The index given, and the owned kind's controller-owner index, answer
	// field-selector Lists on the cached client.
	testenv.Eventually(t, "indexed lists", func() error {
		var widgets testapi.WidgetList
		if err := cc.Client.List(ctx, &widgets, client.InNamespace(ns), client.MatchingFields{"test.wiring.color": "red"}); err != nil {
			return err
		}
		if len(widgets.Items) != 1 || widgets.Items[0].Name != "w" {
			return fmt.Errorf("red widgets %v", widgets.Items)
		}
		var children corev1.ConfigMapList
		gk := schema.GroupKind{Group: testapi.GroupVersion.Group, Kind: "Widget"}
		if err := indexer.ControllerOwner[*corev1.ConfigMap]().List(ctx, cc.Client, &children, indexer.OwnerKey(gk, "w"), client.InNamespace(ns)); err != nil {
			return err
		}
		if len(children.Items) != 1 || children.Items[0].Name != "w-child" {
			return fmt.Errorf("children of w %v", children.Items)
		}
		return nil
	})

	// A change of an owned child reconciles its owner.
	testenv.WaitIdle(t, name)
	before := reconciles.get("w")
	child := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-child"}, child); err != nil {
		t.Fatal(err)
	}
	child.Data = map[string]string{"touched": "yes"}
	if err := env.Client.Update(ctx, child); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "owner reconciled after its child changed", func() error {
		if n := reconciles.get("w"); n <= before {
			return fmt.Errorf("%d reconciles, %d before", n, before)
		}
		return nil
	})

	// A watched object maps to its widget.
	testenv.WaitIdle(t, name)
	before = reconciles.get("w")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s", Labels: map[string]string{"widget": "w"}}}
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "owner reconciled after a watched object appeared", func() error {
		if n := reconciles.get("w"); n <= before || watched.get("s") == 0 {
			return fmt.Errorf("%d reconciles, %d before; %d mapped", reconciles.get("w"), before, watched.get("s"))
		}
		return nil
	})

	// A status-only change, another writer's, does not reconcile again.
	testenv.WaitIdle(t, name)
	before = reconciles.get("w")
	got := get(t, w)
	got.Status.Replicas = 5
	if err := env.Client.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "cache holds the status change", func() error {
		var cached testapi.Widget
		if err := cc.Client.Get(ctx, client.ObjectKeyFromObject(w), &cached); err != nil {
			return err
		}
		if cached.Status.Replicas != 5 {
			return errors.New("not yet")
		}
		return nil
	})
	testenv.WaitIdle(t, name)
	if n := reconciles.get("w"); n != before {
		t.Errorf("a status-only change reconciled: %d reconciles, %d before", n, before)
	}

	// Deleting it (it has a finalizer) reconciles: the cleanup runs and
	// the finalizer goes.
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "Widget finalized and gone", func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("Widget still there: %v", err)
		}
		if cleanups.get("w") == 0 {
			return errors.New("gone without its cleanup")
		}
		return nil
	})

	// The reconciler returned is the one the controller runs.
	if _, err := rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
		t.Errorf("Reconcile of a deleted Widget = %v", err)
	}
}

// TestNewControllerReportsWhatItCannotRegister: another declaration under
// an index name is indexer's "already registered" error naming the
// controller; For's own errors come through Complete.
func TestNewControllerReportsWhatItCannotRegister(t *testing.T) {
	env.Require(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *testapi.Widget) (ctrl.Result, error) { return ctrl.Result{}, nil }
	other := indexer.New(widgetsByWiringColor.Name(), func(*testapi.Widget) []string { return nil })
	if _, err := reconcile.NewController[testapi.Widget](mgr, noop).Named("first").Index(widgetsByWiringColor).Complete(); err != nil {
		t.Fatal(err)
	}
	_, err = reconcile.NewController[testapi.Widget](mgr, noop).Named("second").Index(other).Complete()
	if err == nil || !strings.Contains(err.Error(), "already registered") || !strings.Contains(err.Error(), "controller second") {
		t.Errorf("Complete with a conflicting index = %v, want indexer's \"already registered\" naming the controller", err)
	}
	_, err = reconcile.NewController[corev1.ConfigMap](mgr, func(context.Context, *corev1.ConfigMap) (ctrl.Result, error) {
		return ctrl.Result{}, nil
	}, reconcile.WithReadySummary()).Complete()
	if err == nil || !strings.Contains(err.Error(), "WithReadySummary") {
		t.Errorf("Complete with a Ready summary on a kind without conditions = %v", err)
	}
}
