package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// scopeCounting counts the questions "is this kind namespaced?" asked of
// its REST mapper.
type scopeCounting struct {
	client.Client
	asked atomic.Int64
}

func (c *scopeCounting) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	c.asked.Add(1)
	return c.Client.IsObjectNamespaced(obj)
}

// TestScopeAskedOncePerKind: the REST mapper is asked whether a kind is
// namespaced once per kind and cluster, not before every write; a
// cluster-scoped child given a namespaced owner's namespace is refused on
// every call, each time on the mapper's word.
func TestScopeAskedOncePerKind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	// A REST mapper of its own: a cluster ownership has learnt nothing of.
	direct, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	sc := &scopeCounting{Client: direct}
	c := testapi.Remembering(sc, env.Scheme) // where what is learnt is kept
	// What one call learns, the others know: Apply's check is
	// CreateOrUpdate's.
	for i, fn := range []createOr{createOrUpdate, applyFn, createOrUpdate} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scope-" + string(rune('a'+i))}}
		if op, err := fn(ctx, c, o, cm, func() error { return nil }); err != nil || op != "created" {
			t.Fatalf("child %d: %v, %v", i, op, err)
		}
	}
	if n := sc.asked.Load(); n != 1 {
		t.Errorf("the scope of ConfigMap asked %d times for three children, want once", n)
	}
	before := sc.asked.Load()
	for range 2 {
		_, err := createOrUpdate(ctx, c, o, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steady-test-scope"}}, nil)
		var ioe *ownership.InvalidOwnerError
		if !errors.As(err, &ioe) {
			t.Fatalf("error = %v, want *InvalidOwnerError", err)
		}
	}
	if n := sc.asked.Load() - before; n != 2 {
		t.Errorf("a cluster-scoped child refused twice asked the mapper %d times, want 2 (a refusal is never remembered)", n)
	}
}

// TestLabelRepairLearnsTheStatusSubresource: an update found needed by its
// labels alone (no conversion to tell) still learns, from the answer and
// the desired object as it was sent, that the kind keeps its status: the
// next call, whose only difference is a status the update cannot write,
// sends nothing.
func TestLabelRepairLearnsTheStatusSubresource(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	c, n := counting(t) // a REST mapper of its own: the kind not known yet
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repaired"}}
	if op, err := createOrUpdate(ctx, c, o, w, nil); err != nil || op != "created" {
		t.Fatalf("create: %v, %v", op, err)
	}
	mutate := func() error {
		w.Labels = map[string]string{"repaired": "yes"}
		w.Status.Phase = "Wanted"
		return nil
	}
	if op, err := createOrUpdate(ctx, c, o, w, mutate); err != nil || op != "updated" {
		t.Fatalf("repair: %v, %v", op, err)
	}
	if w.Labels["repaired"] != "yes" || w.Status.Phase != "" {
		t.Fatalf("after the repair the child shows labels %v and phase %q, want the label and the live (empty) phase", w.Labels, w.Status.Phase)
	}
	n.Reset()
	if op, err := createOrUpdate(ctx, c, o, w, mutate); err != nil || op != "unchanged" {
		t.Fatalf("after the repair: %v, %v", op, err)
	}
	if n.Writes() != 0 {
		t.Errorf("requests %s for a status the update cannot write, want no write", n)
	}
}

// scopeFailing is a client whose REST mapper cannot tell whether a kind is
// namespaced while failing is set (discovery unavailable, say); its reads
// and writes reach the API server.
type scopeFailing struct {
	client.Client
	failing atomic.Bool
}

var errMapper = errors.New("the mapper failed")

func (c *scopeFailing) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	if c.failing.Load() {
		return false, errMapper
	}
	return c.Client.IsObjectNamespaced(obj)
}

// TestAScopeTheMapperCannotTellIsNotWritten: when the REST mapper fails to
// tell whether the child's kind is namespaced, CreateOrUpdate and Apply of
// a namespaced owner write nothing (no create, no update) and return the
// mapper's error, not an *InvalidOwnerError (the kind is not known to be
// cluster-scoped); nothing of the failure is remembered: once the mapper
// answers, the next call writes.
func TestAScopeTheMapperCannotTellIsNotWritten(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	for _, fn := range allFns {
		for _, exists := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exists=%v", fn.name, exists), func(t *testing.T) {
				// A REST mapper of its own: a cluster ownership has learnt
				// nothing of.
				direct, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
				if err != nil {
					t.Fatal(err)
				}
				sc := &scopeFailing{Client: direct}
				sc.failing.Store(true)
				c := testapi.Remembering(sc, env.Scheme)
				name := fmt.Sprintf("%s-%v", strings.ToLower(fn.name), exists)
				key := client.ObjectKey{Namespace: ns, Name: name}
				rv := ""
				if exists {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"theirs": "x"}}
					if err := env.Client.Create(ctx, cm); err != nil {
						t.Fatal(err)
					}
					rv = cm.ResourceVersion
				}
				write := func() (string, error) {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					op, err := fn.fn(ctx, c, o, cm, func() error { cm.Data = map[string]string{"k": "new"}; return nil })
					return string(op), err
				}
				op, err := write()
				var ioe *ownership.InvalidOwnerError
				if !errors.Is(err, errMapper) || errors.As(err, &ioe) || op != "" {
					t.Errorf("mapper failing: %q, %v; want an empty result and the mapper's error", op, err)
				}
				var got corev1.ConfigMap
				switch err := env.Client.Get(ctx, key, &got); {
				case !exists && !apierrors.IsNotFound(err):
					t.Errorf("mapper failing: the child was created (%v, data %v)", err, got.Data)
				case exists && (err != nil || got.ResourceVersion != rv || len(got.OwnerReferences) != 0):
					t.Errorf("mapper failing: the child was written (%v, data %v, owners %v)", err, got.Data, got.OwnerReferences)
				}
				sc.failing.Store(false)
				want := "created"
				if exists {
					want = "updated"
				}
				if op, err := write(); err != nil || op != want {
					t.Errorf("mapper back: %q, %v; want %s", op, err, want)
				}
				if err := env.Client.Get(ctx, key, &got); err != nil || got.Data["k"] != "new" || !metav1.IsControlledBy(&got, o) {
					t.Errorf("mapper back: %v, data %v, owners %v; want ours written", err, got.Data, got.OwnerReferences)
				}
			})
		}
	}
}
