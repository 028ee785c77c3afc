package ownership_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// Gizmo (testdata/crds) is a kind without a status subresource.
var env = testapi.NewEnv(testenv.WithCRDs{Paths: []string{"testdata/crds"}})

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// remembering is env.Client carrying a State, as steady.NewClient's client
// does: ownership's calls through it remember between calls.
var remembering = sync.OnceValue(func() client.Client { return testapi.Remembering(env.Client, env.Scheme) })

// ours is c (another client of this process: one whose reads lag, say)
// carrying remembering's State: what a call through either remembers,
// the other knows.
func ours(c client.Client) client.Client { return scope.Wrap(c, scope.Held(remembering())) }

func owner(t *testing.T, ns, name string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func counting(t *testing.T) (client.Client, *testapi.Counter) {
	t.Helper()
	c, n, err := testapi.NewCountingClient(env.Config, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	c = testapi.Remembering(c, env.Scheme)
	// Warm the REST mapper so that discovery does not blur the counts.
	if _, err := c.IsObjectNamespaced(&appsv1.Deployment{}); err != nil {
		t.Fatal(err)
	}
	return c, n
}

// deployment and service set their specs wholesale, as operators do: every
// field the API server defaults is dropped by the assignment.
func deployment(d *appsv1.Deployment, image string) ownership.MutateFn {
	return func() error {
		labels := map[string]string{"app": d.Name}
		d.Spec = appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			},
		}
		return nil
	}
}

func service(s *corev1.Service) ownership.MutateFn {
	return func() error {
		s.Spec = corev1.ServiceSpec{Selector: map[string]string{"app": s.Name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}
		return nil
	}
}

// option is an option of CreateOrUpdate (Adopt{}).
type option = ownership.MutateOption

type createOr func(context.Context, client.Client, client.Object, client.Object, ownership.MutateFn, ...option) (controllerutil.OperationResult, error)

func createOrUpdate(ctx context.Context, c client.Client, o, child client.Object, f ownership.MutateFn, opts ...option) (controllerutil.OperationResult, error) {
	return ownership.CreateOrUpdate(ctx, c, o, child, f, opts...)
}

type fnCase struct {
	name string
	fn   createOr
}

var fns = []fnCase{{"CreateOrUpdate", createOrUpdate}}

var gizmoGVK = schema.GroupVersionKind{Group: "test.steady.dev", Version: "v1", Kind: "Gizmo"}

func unstructuredChild(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// watchClient is a direct client that interceptor.NewClient can wrap.
func watchClient(t *testing.T) client.WithWatch {
	t.Helper()
	// The REST mapper of env.Client: one cluster, as the clients of one
	// manager share theirs (ownership keeps what it learns of a kind per
	// cluster, by REST mapper).
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// staleAfterGet is a client whose first Get is followed, before the caller
// goes on, by another writer's change: the read the caller holds is stale,
// as a lagging cache's read is, deterministically. The other writer reads
// the child into a copy of obj, changes it and updates it (its status when
// status is true).
func staleAfterGet(t *testing.T, obj client.Object, status bool, change func(client.Object)) client.Client {
	t.Helper()
	var once sync.Once
	return ours(interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, into client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, into, opts...); err != nil {
				return err
			}
			once.Do(func() {
				other := obj.DeepCopyObject().(client.Object)
				if err := env.Client.Get(ctx, key, other); err != nil {
					t.Error(err)
					return
				}
				change(other)
				update := env.Client.Update
				if status {
					update = func(ctx context.Context, o client.Object, opts ...client.UpdateOption) error {
						return env.Client.Status().Update(ctx, o)
					}
				}
				if err := update(ctx, other); err != nil {
					t.Error(err)
				}
			})
			return nil
		},
	}))
}

func startCached(t *testing.T) *testapi.Cached {
	t.Helper()
	return testapi.StartManager(t, env, testapi.ManagerOptions{
		Delay:     300 * time.Millisecond,
		Informers: []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}, &appsv1.Deployment{}},
		Setup: func(mgr ctrl.Manager) error {
			return indexer.ControllerOwner[*corev1.ConfigMap]().Register(context.Background(), mgr.GetFieldIndexer())
		},
	})
}

// startCachedUnstructured is startCached whose client reads unstructured
// objects from the cache too (client.CacheOptions{Unstructured: true});
// by default a manager's client reads them from the API server.
func startCachedUnstructured(t *testing.T) *testapi.Cached {
	t.Helper()
	n := &testapi.Counter{}
	mgr := env.StartManager(t, testenv.WithTransport(n.Wrap), testenv.WithTransport(testenv.DelayWatches(300*time.Millisecond)),
		testenv.WithManagerOptions(ctrl.Options{Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}}}))
	cc := &testapi.Cached{Manager: mgr, Client: steady.NewClient(mgr), APIReader: mgr.GetAPIReader(), Counter: n}
	cc.CacheOnly = cc.Reading(nil)
	return cc
}

// cachedSees waits until the cache holds obj at the resourceVersion the API
// server has.
func cachedSees(t *testing.T, cc *testapi.Cached, obj client.Object) {
	t.Helper()
	live := obj.DeepCopyObject().(client.Object)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := obj.DeepCopyObject().(client.Object)
		err := cc.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
		if err == nil && got.GetResourceVersion() == live.GetResourceVersion() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache did not catch up with %s", obj.GetName())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requeue calls f until it succeeds, as a controller requeues on an error,
// and returns the errors seen before.
func requeue(t *testing.T, f func() (controllerutil.OperationResult, error)) (controllerutil.OperationResult, []error) {
	t.Helper()
	var errs []error
	deadline := time.Now().Add(10 * time.Second)
	for {
		op, err := f()
		if err == nil {
			return op, errs
		}
		errs = append(errs, err)
		if time.Now().After(deadline) {
			t.Fatalf("no success after %d tries: %v", len(errs), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// applyObject is ownership.Apply of obj whole (see testapi.ConfigurationOf);
// the answer is read back into obj.
func applyObject(ctx context.Context, c client.Client, owner, obj client.Object, fieldManager string, opts ...ownership.ApplyOption) (controllerutil.OperationResult, error) {
	config, back, err := testapi.ConfigurationOf(obj, c.Scheme())
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	op, err := ownership.Apply(ctx, c, owner, config, fieldManager, opts...)
	if berr := back(); berr != nil && err == nil {
		err = berr
	}
	return op, err
}

// readingThrough is c carrying a State of its own, without informers (it
// remembers nothing between calls), whose API reader is api: a client
// that re-reads through api, as steady.NewClient's through the manager's.
func readingThrough(c client.Client, api client.Reader) client.Client {
	return scope.Wrap(c, scope.New(c, api, nil))
}
