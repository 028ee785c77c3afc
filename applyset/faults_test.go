package applyset_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/internal/testapi"
)

// failingMapper fails every mapping of one API group with err, as the
// REST mapper does when that group's discovery fails.
type failingMapper struct {
	meta.RESTMapper
	group string
	err   error
}

func (m failingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Group == m.group {
		return nil, m.err
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func parentKinds(t *testing.T, parent *corev1.Secret) string {
	t.Helper()
	got := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(parent), got); err != nil {
		t.Fatal(err)
	}
	return got.Annotations[applyset.GroupKindsAnnotation]
}

// TestDiscoveryFailureKeepsTheKind: a kind whose discovery fails for a
// moment is neither skipped nor dropped from the parent: its members are
// pruned once discovery answers again.
func TestDiscoveryFailureKeepsTheKind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	set, _ := applyset.New(env.Client, parent)
	widget := "apiVersion: test.steady.dev/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n---\n"
	if _, err := set.Apply(ctx, parse(t, cm("a")+widget)); err != nil {
		t.Fatal(err)
	}
	gv := schema.GroupVersion{Group: testapi.GroupVersion.Group, Version: "v1"}
	for name, mapErr := range map[string]error{
		"503":      &apiutil.ErrResourceDiscoveryFailed{gv: apierrors.NewServiceUnavailable("overloaded")},
		"no match": &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gv.Group, Kind: "Widget"}}, // aggregated discovery drops a failed group
	} {
		t.Run(name, func(t *testing.T) {
			c, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Mapper: failingMapper{env.Client.RESTMapper(), gv.Group, mapErr}})
			if err != nil {
				t.Fatal(err)
			}
			pruneKeepsWidgets(t, c, parent)
		})
	}
	t.Run("503 from the group's discovery path", func(t *testing.T) {
		cfg := rest.CopyConfig(env.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTrip(func(r *http.Request) (*http.Response, error) {
				switch {
				case r.URL.Path == "/apis" || r.URL.Path == "/api":
					// Legacy discovery, group by group, as from a server
					// without aggregated discovery.
					r = r.Clone(r.Context())
					r.Header.Set("Accept", "application/json")
				case strings.HasPrefix(r.URL.Path, "/apis/"+gv.Group+"/"):
					return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"text/plain"}},
						Body: io.NopCloser(strings.NewReader("overloaded")), Request: r}, nil
				}
				return rt.RoundTrip(r)
			})
		})
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		pruneKeepsWidgets(t, c, parent)
	})
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if !exists(t, w) || w.Labels[applyset.PartOfLabel] != set.ID() {
		t.Fatal("the widget was pruned or detached while discovery failed")
	}
	res, err := set.Apply(ctx, parse(t, cm("a")))
	if err != nil || res.Count(applyset.Pruned) != 1 || exists(t, w) {
		t.Fatalf("prune once discovery answers: %+v, %v", res.Objects, err)
	}
}

// pruneKeepsWidgets prunes with c, whose discovery of Widget fails: the
// prune fails and the parent keeps listing Widget.
func pruneKeepsWidgets(t *testing.T, c client.Client, parent *corev1.Secret) {
	t.Helper()
	flaky, _ := applyset.New(c, parent)
	res, err := flaky.Apply(context.Background(), parse(t, cm("a")))
	if err == nil || res.Count(applyset.Skipped) != 0 || res.Count(applyset.Failed) != 1 {
		t.Fatalf("prune while discovery fails: %+v, %v", res.Objects, err)
	}
	if got := parentKinds(t, parent); got != "ConfigMap,Widget.test.steady.dev" {
		t.Errorf("parent kinds = %q: the widget would be forgotten", got)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func interceptedClient(t *testing.T, funcs interceptor.Funcs) client.Client {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(c, funcs)
}

// TestFaults injects API errors: a failed delete keeps the kind in the
// parent; a conflicting apply fails the Apply before any prune.
func TestFaults(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	t.Run("500 on a delete", func(t *testing.T) {
		ns := env.Namespace(t)
		parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
		set, _ := applyset.New(env.Client, parent)
		if _, err := set.Apply(ctx, parse(t, cm("a")+secret("s"))); err != nil {
			t.Fatal(err)
		}
		c := interceptedClient(t, interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return apierrors.NewInternalError(errors.New("etcd is sad"))
		}})
		faulty, _ := applyset.New(c, parent)
		res, err := faulty.Apply(ctx, parse(t, cm("a")))
		if !apierrors.IsInternalError(err) || res.Count(applyset.Failed) != 1 {
			t.Fatalf("prune with a failing delete: %+v, %v", res.Objects, err)
		}
		if got := parentKinds(t, parent); got != "ConfigMap,Secret" {
			t.Errorf("parent kinds = %q after a failed delete", got)
		}
	})
	t.Run("503 on a LIST", func(t *testing.T) {
		ns := env.Namespace(t)
		parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
		set, _ := applyset.New(env.Client, parent)
		if _, err := set.Apply(ctx, parse(t, cm("a")+secret("s")+secret("old"))); err != nil {
			t.Fatal(err)
		}
		c := interceptedClient(t, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if list.GetObjectKind().GroupVersionKind().Kind == "SecretList" {
				return apierrors.NewServiceUnavailable("overloaded")
			}
			return c.List(ctx, list, opts...)
		}})
		faulty, _ := applyset.New(c, parent)
		res, err := faulty.Apply(ctx, parse(t, cm("a")+secret("s")))
		if !apierrors.IsServiceUnavailable(err) || res.Count(applyset.Unchanged) != 2 || res.Count(applyset.Failed) != 1 {
			t.Fatalf("apply with Secrets unlistable: %+v, %v", res.Objects, err)
		}
		if got := parentKinds(t, parent); got != "ConfigMap,Secret" || !exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"}}) {
			t.Errorf("parent kinds = %q", got)
		}
		if res, err := set.Apply(ctx, parse(t, cm("a")+secret("s"))); err != nil || res.Count(applyset.Pruned) != 1 {
			t.Errorf("prune once Secrets list again: %+v, %v", res.Objects, err)
		}
	})
	t.Run("parent changed since it was read", func(t *testing.T) {
		ns := env.Namespace(t)
		parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
		set, _ := applyset.New(env.Client, parent)
		if _, err := set.Apply(ctx, parse(t, cm("a")+secret("s"))); err != nil {
			t.Fatal(err)
		}
		// Another writer changes the parent right after it is read.
		c := interceptedClient(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if key.Name == "set" {
				p := &corev1.Secret{}
				_ = env.Client.Get(ctx, key, p)
				p.Labels["touched"] = "yes"
				if err := env.Client.Update(ctx, p); err != nil {
					t.Error(err)
				}
			}
			return err
		}})
		faulty, _ := applyset.New(c, parent)
		_, err := faulty.Apply(ctx, parse(t, cm("a")))
		if !apierrors.IsConflict(err) {
			t.Fatalf("apply on a parent changed since read: %v", err)
		}
		if got := parentKinds(t, parent); got != "ConfigMap,Secret" {
			t.Errorf("parent kinds = %q", got)
		}
	})
	t.Run("409 on an apply", func(t *testing.T) {
		ns := env.Namespace(t)
		parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
		set, _ := applyset.New(env.Client, parent)
		if _, err := set.Apply(ctx, parse(t, cm("a")+cm("old"))); err != nil {
			t.Fatal(err)
		}
		c := interceptedClient(t, interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			o := &client.ApplyOptions{}
			o.ApplyOptions(opts)
			if len(o.DryRun) == 0 && o.FieldManager == "steady" {
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "a", errors.New("conflict"))
			}
			return c.Apply(ctx, obj, opts...)
		}})
		faulty, _ := applyset.New(c, parent)
		res, err := faulty.Apply(ctx, parse(t, cm("a", "  labels: {v: \"2\"}\n")))
		if !apierrors.IsConflict(err) || res.Count(applyset.Failed) != 1 || res.Count(applyset.Pruned) != 0 {
			t.Fatalf("apply with a conflict: %+v, %v", res.Objects, err)
		}
		if !exists(t, configMap(ns, "old")) {
			t.Error("pruned although an apply failed")
		}
	})
}

// TestPruneACRDWithoutApiextensionsInTheScheme: the client's scheme need not
// know CustomResourceDefinition to prune one.
func TestPruneACRDWithoutApiextensionsInTheScheme(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	crd := strings.NewReplacer("gadgets", "doodads", "Gadget", "Doodad", "gadget", "doodad").Replace(crdYAML)
	if _, err := set.Apply(ctx, parse(t, crd+cm("a"))); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(ctx, parse(t, cm("a")))
	if err != nil || res.Count(applyset.Pruned) != 1 {
		t.Fatalf("prune of a CRD: %+v, %v", res.Objects, err)
	}
	if exists(t, crdObject("doodads.as.steady.dev")) {
		t.Error("CRD not pruned")
	}
}

// TestConcurrentApply: Apply calls on one Set run one at a time (go test
// -race checks the Set's state).
func TestConcurrentApply(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			objs := parse(t, cm("a")+cm("b"))
			if i%2 == 1 {
				objs = objs[:1]
			}
			_, errs[i] = set.Apply(ctx, objs)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Apply(ctx, parse(t, cm("a"))); err != nil || exists(t, configMap(ns, "b")) {
		t.Errorf("after concurrent applies: %v", err)
	}

}

// TestDryRunFailureIsNotARefusal: a dry run that fails for a reason that is
// not the input's (a 500, a 503, a 429, a timeout, a broken connection) is
// no *ValidationError; the API status still reads through the error, which
// names the object. A refusal of the input (422, 403, 409, 400) is one.
func TestDryRunFailureIsNotARefusal(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name    string
		err     error
		refusal bool
		is      func(error) bool
	}{
		{"500", apierrors.NewInternalError(errors.New("boom")), false, apierrors.IsInternalError},
		{"503", apierrors.NewServiceUnavailable("overloaded"), false, apierrors.IsServiceUnavailable},
		{"429", apierrors.NewTooManyRequests("slow down", 1), false, apierrors.IsTooManyRequests},
		{"504", apierrors.NewTimeoutError("too slow", 1), false, apierrors.IsTimeout},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 1), false, apierrors.IsServerTimeout},
		{"transport", errors.New("connection reset by peer"), false, func(err error) bool { return strings.Contains(err.Error(), "connection reset") }},
		{"context", context.DeadlineExceeded, false, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"422", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "new", nil), true, apierrors.IsInvalid},
		{"403 webhook", apierrors.NewForbidden(gr, "new", errors.New("denied by webhook")), true, apierrors.IsForbidden},
		{"409 field manager", apierrors.NewConflict(gr, "new", errors.New("conflict with kubectl")), true, apierrors.IsConflict},
		{"400", apierrors.NewBadRequest("bad"), true, apierrors.IsBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			c := interceptedClient(t, interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				o := &client.ApplyOptions{}
				o.ApplyOptions(opts)
				if len(o.DryRun) > 0 {
					return tc.err
				}
				return c.Apply(ctx, obj, opts...)
			}})
			set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
			_, err := set.Apply(ctx, parse(t, cm("new")))
			var invalid *applyset.ValidationError
			if errors.As(err, &invalid) != tc.refusal {
				t.Errorf("ValidationError = %v, want %v: %v", !tc.refusal, tc.refusal, err)
			}
			if !tc.is(err) {
				t.Errorf("the cause does not read through: %v", err)
			}
			if err == nil || !strings.Contains(err.Error(), "ConfigMap "+ns+"/new") || !strings.Contains(err.Error(), "nothing written") {
				t.Errorf("error does not name the object or what was written: %v", err)
			}
			if exists(t, configMap(ns, "new")) {
				t.Error("written although its dry run failed")
			}
		})
	}
}

// TestDiscoveryFailureIsNotARefusal: a member whose kind the REST mapper
// cannot map because discovery failed (a 503) is not refused as of an
// unknown kind: the error is no *ValidationError and the 503 reads through.
func TestDiscoveryFailureIsNotARefusal(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	gv := schema.GroupVersion{Group: testapi.GroupVersion.Group, Version: "v1"}
	mapErr := &apiutil.ErrResourceDiscoveryFailed{gv: apierrors.NewServiceUnavailable("overloaded")}
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Mapper: failingMapper{env.Client.RESTMapper(), gv.Group, mapErr}})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
	_, err = set.Apply(context.Background(), parse(t, cm("a")+"apiVersion: test.steady.dev/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n"))
	var invalid *applyset.ValidationError
	if err == nil || errors.As(err, &invalid) || !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "Widget.test.steady.dev w") {
		t.Fatalf("apply while the Widget group's discovery fails: %v", err)
	}
}

// TestFaultAtEveryRequestKeepsEveryKind fails the n-th request of an Apply
// (every n in turn: reads, dry runs, writes, deletes) with a 500 and
// checks, after each, that the parent lists every kind and namespace that
// still has a member, and that a clean Apply then converges.
func TestFaultAtEveryRequestKeepsEveryKind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	widget := func(name string) string {
		return "apiVersion: test.steady.dev/v1\nkind: Widget\nmetadata: {name: " + name + "}\nspec: {size: 1}\n---\n"
	}
	steps := []struct{ name, from, to string }{
		{"prune two kinds", cm("a") + secret("s") + widget("w"), cm("a")},
		{"add two kinds", cm("a"), cm("a") + secret("s") + widget("w")},
		{"swap kinds", cm("a") + secret("s"), widget("w") + cm("b")},
	}
	for _, st := range steps {
		for n := 1; ; n++ {
			ns := env.Namespace(t)
			parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
			set, _ := applyset.New(env.Client, parent)
			if _, err := set.Apply(ctx, parse(t, st.from)); err != nil {
				t.Fatal(err)
			}
			count := 0
			fault := func() error {
				count++
				if count == n {
					return apierrors.NewInternalError(errors.New("injected"))
				}
				return nil
			}
			c := interceptedClient(t, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if err := fault(); err != nil {
						return err
					}
					return c.Get(ctx, key, obj, opts...)
				},
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if err := fault(); err != nil {
						return err
					}
					return c.List(ctx, list, opts...)
				},
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if err := fault(); err != nil {
						return err
					}
					return c.Create(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					if err := fault(); err != nil {
						return err
					}
					return c.Patch(ctx, obj, p, opts...)
				},
				Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
					if err := fault(); err != nil {
						return err
					}
					return c.Apply(ctx, obj, opts...)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if err := fault(); err != nil {
						return err
					}
					return c.Delete(ctx, obj, opts...)
				},
			})
			faulty, _ := applyset.New(c, parent)
			_, err := faulty.Apply(ctx, parse(t, st.to))
			if count < n {
				if err != nil {
					t.Fatalf("%s: no fault injected, yet %v", st.name, err)
				}
				break // every request has had its fault
			}
			// A failed LIST is made up for (members read one by one, prune
			// lists again): err may be nil.
			kinds := "," + parentKinds(t, parent) + ","
			for kind, list := range map[string]client.ObjectList{"ConfigMap": &corev1.ConfigMapList{}, "Secret": &corev1.SecretList{}, "Widget.test.steady.dev": &testapi.WidgetList{}} {
				if err := env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{applyset.PartOfLabel: set.ID()}); err != nil {
					t.Fatal(err)
				}
				if meta.LenList(list) > 0 && !strings.Contains(kinds, ","+kind+",") {
					t.Errorf("%s, fault at request %d (%v): %s has members but the parent lists %s", st.name, n, err, kind, kinds)
				}
			}
			res, err := set.Apply(ctx, parse(t, st.to))
			if err != nil {
				t.Fatalf("%s, fault at request %d: the clean Apply after it: %+v, %v", st.name, n, res.Objects, err)
			}
		}
	}
}
