package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
	"github.com/steadyk8s/steady/testenv"
)

// readers are the two ways a call reads a child again when its cached read
// proved stale: the cached client again (backing off), or the manager's API
// reader, which steady.NewClient's client carries.
func readers(cc *testapi.Cached) []struct {
	name string
	c    client.Client
} {
	return []struct {
		name string
		c    client.Client
	}{{"cache", cc.CacheOnly}, {"APIReader", cc.Client}}
}

// TestAChildTheCacheHasNotSeenIsNoError: through a manager's cached client
// held 300ms back, a second call right after the one that created the
// child (the cache has not seen it: the create answers AlreadyExists) is
// no error: it reads the child again and goes on as an update, unchanged
// for the same desired state, updated for a new one. An operator that
// reports child errors no longer flips Ready.
func TestAChildTheCacheHasNotSeenIsNoError(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	seq := 0
	for _, fn := range fns {
		for _, r := range readers(cc) {
			seq++
			name := fmt.Sprintf("web-%d", seq)
			t.Run(fn.name+"/"+r.name, func(t *testing.T) {
				call := func(image string) (controllerutil.OperationResult, error) {
					d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					return fn.fn(ctx, r.c, o, d, deployment(d, image))
				}
				for i, step := range []struct {
					image string
					want  controllerutil.OperationResult
				}{{"nginx:1", "created"}, {"nginx:1", "unchanged"}, {"nginx:2", "updated"}} {
					cc.Counter.Reset()
					op, err := call(step.image)
					if err != nil || op != step.want {
						t.Fatalf("call %d (%s): %s, %v; want %s, no error", i, step.image, op, err, step.want)
					}
					t.Logf("call %d: %s, requests %s", i, op, cc.Counter)
				}
				var got appsv1.Deployment
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				if got.Spec.Template.Spec.Containers[0].Image != "nginx:2" || !metav1.IsControlledBy(&got, o) {
					t.Errorf("stored image %s, controlled by the owner %v", got.Spec.Template.Spec.Containers[0].Image, metav1.IsControlledBy(&got, o))
				}
			})
		}
	}
}

// TestAChildDeletedMeanwhileIsCreatedAgain: a child the cache still holds
// but that was deleted since is created again (the update or patch
// answered NotFound), not an error; the same when the deletion falls
// between the read and the write of one call.
func TestAChildDeletedMeanwhileIsCreatedAgain(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	check := func(t *testing.T, name string) {
		t.Helper()
		var got appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Template.Spec.Containers[0].Image != "nginx:2" || !metav1.IsControlledBy(&got, o) || got.ResourceVersion == "" {
			t.Errorf("stored image %s, controlled by the owner %v", got.Spec.Template.Spec.Containers[0].Image, metav1.IsControlledBy(&got, o))
		}
	}
	for _, fn := range fns {
		t.Run(fn.name+"/cached", func(t *testing.T) {
			name := "gone-" + strings.ToLower(fn.name)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if _, err := fn.fn(ctx, env.Client, o, d, deployment(d, "nginx:1")); err != nil {
				t.Fatal(err)
			}
			cachedSees(t, cc, d)
			if err := env.Client.Delete(ctx, d); err != nil {
				t.Fatal(err)
			}
			d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if op, err := fn.fn(ctx, cc.Client, o, d, deployment(d, "nginx:2")); err != nil || op != controllerutil.OperationResultCreated {
				t.Fatalf("after the deletion: %s, %v; want created", op, err)
			}
			check(t, name)
		})
		t.Run(fn.name+"/between the read and the write", func(t *testing.T) {
			name := "between-" + strings.ToLower(fn.name)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if _, err := fn.fn(ctx, env.Client, o, d, deployment(d, "nginx:1")); err != nil {
				t.Fatal(err)
			}
			deleted := false
			c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if err := c.Get(ctx, key, obj, opts...); err != nil || deleted {
						return err
					}
					deleted = true
					return env.Client.Delete(ctx, obj.DeepCopyObject().(client.Object))
				},
			})
			d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if op, err := fn.fn(ctx, c, o, d, deployment(d, "nginx:2")); err != nil || op != controllerutil.OperationResultCreated {
				t.Fatalf("deleted between the read and the write: %s, %v; want created", op, err)
			}
			check(t, name)
		})
	}
}

// TestAnotherOwnersChildTheCacheHasNotSeenIsNotTaken: a child another
// owner created a moment ago, which the cache has not seen, is read again
// after the create's AlreadyExists and refused with an
// *AlreadyOwnedError, as a child read at once is; with Adopt{} it is taken
// over.
func TestAnotherOwnersChildTheCacheHasNotSeenIsNotTaken(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	seq := 0
	for _, fn := range fns {
		for _, r := range readers(cc) {
			for _, adopt := range []bool{false, true} {
				seq++
				name := fmt.Sprintf("cm-%d", seq)
				t.Run(fmt.Sprintf("%s/%s/adopt=%v", fn.name, r.name, adopt), func(t *testing.T) {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					if _, err := fn.fn(ctx, env.Client, a, cm, func() error { cm.Data = map[string]string{"k": "a"}; return nil }); err != nil {
						t.Fatal(err)
					}
					var opts []option
					if adopt {
						opts = append(opts, ownership.Adopt{})
					}
					cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					op, err := fn.fn(ctx, r.c, b, cm, func() error { cm.Data = map[string]string{"k": "b"}; return nil }, opts...)
					var got corev1.ConfigMap
					if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
						t.Fatal(err)
					}
					var aoe *ownership.AlreadyOwnedError
					switch {
					case !adopt && (!errors.As(err, &aoe) || aoe.Controller != "Widget a"):
						t.Errorf("%s, %v; want an *AlreadyOwnedError naming Widget a", op, err)
					case !adopt && (!metav1.IsControlledBy(&got, a) || got.Data["k"] != "a"):
						t.Errorf("a's child was written: %v, %v", got.OwnerReferences, got.Data)
					case adopt && (err != nil || op != controllerutil.OperationResultUpdated):
						t.Errorf("adopting: %s, %v; want updated", op, err)
					case adopt && (!metav1.IsControlledBy(&got, b) || got.Data["k"] != "b" || len(got.OwnerReferences) != 1):
						t.Errorf("after adopting: %v, %v", got.OwnerReferences, got.Data)
					}
					if apierrors.IsAlreadyExists(err) {
						t.Errorf("the create's AlreadyExists came back: %v", err)
					}
				})
			}
		}
	}
}

// TestReadingAgainIsBounded: a create that keeps answering AlreadyExists
// while every read finds nothing ends in that error, after a bounded
// number of reads (the client backing off, about 2.5s) or rounds (with an
// API reader), saying what happened; nothing is written. Without an API
// reader the error says how to get one; with one that is refused
// (Forbidden), it says so instead.
func TestReadingAgainIsBounded(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, fn := range fns {
		for _, reader := range []string{"none", "API reader", "refused API reader"} {
			t.Run(fn.name+"/"+reader, func(t *testing.T) {
				var gets, creates, writes int
				exists := apierrors.NewAlreadyExists(corev1.Resource("configmaps"), "cm")
				notFound := apierrors.NewNotFound(corev1.Resource("configmaps"), "cm")
				c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
					Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
						gets++
						return notFound
					},
					Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
						creates++
						return exists
					},
					Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
						writes++
						return nil
					},
					Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
						writes++
						return nil
					},
				})
				var cc client.Client = c
				switch reader {
				case "API reader":
					cc = readingThrough(c, c)
				case "refused API reader":
					cc = readingThrough(c, interceptor.NewClient(watchClient(t), interceptor.Funcs{
						Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
							return apierrors.NewForbidden(corev1.Resource("configmaps"), "cm", errors.New("no get"))
						},
					}))
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
				start := time.Now()
				op, err := fn.fn(ctx, cc, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil })
				t.Logf("%s, %v after %d reads, %d creates in %v", op, err, gets, creates, time.Since(start))
				if !apierrors.IsAlreadyExists(err) || op != "" || writes != 0 {
					t.Errorf("%s, %v, %d writes; want AlreadyExists, no result, no write", op, err, writes)
				}
				switch msg := err.Error(); {
				case reader == "none" && !strings.Contains(msg, "steady.NewClient"):
					t.Errorf("the error does not say how to read the API server: %v", err)
				case reader == "refused API reader" && (strings.Contains(msg, "steady.NewClient") || !strings.Contains(msg, "API reader was refused") || !strings.Contains(msg, "no get")):
					t.Errorf("the error does not say the API reader was refused: %v", err)
				}
				if gets > 20 || creates > 3 {
					t.Errorf("%d reads, %d creates: not bounded", gets, creates)
				}
			})
		}
	}
}

// TestOwnCreateTheCacheHasNotSeenIsReadNotCreated: the call right after
// this process created a child, through a cache held back that does not
// show it yet, reads it through the API reader (one GET) instead of
// creating it again: no create refused with AlreadyExists. A child of ours
// deleted since is forgotten when the manager's informer shows the
// deletion (steady.NewClient's memory follows the informer), and created
// again with no read first.
func TestOwnCreateTheCacheHasNotSeenIsReadNotCreated(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for i, fn := range fns {
		name := fmt.Sprintf("web-own-%d", i)
		t.Run(fn.name, func(t *testing.T) {
			call := func() (controllerutil.OperationResult, error) {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				return fn.fn(ctx, cc.Client, o, d, deployment(d, "nginx:1"))
			}
			expect := func(what string, want controllerutil.OperationResult, gets, posts int) {
				t.Helper()
				cc.Counter.Reset()
				op, err := call()
				if err != nil || op != want || cc.Counter.Get("GET") != gets || cc.Counter.Get("POST") != posts || cc.Counter.Writes() != posts {
					t.Fatalf("%s: %s, %v, requests %s; want %s, %d GET, %d POST and no other write", what, op, err, cc.Counter, want, gets, posts)
				}
			}
			expect("create", controllerutil.OperationResultCreated, 0, 1)
			expect("the call right after it", controllerutil.OperationResultNone, 1, 0)

			key := client.ObjectKey{Namespace: ns, Name: name}
			testenv.Eventually(t, "cached", func() error { return cc.Client.Get(ctx, key, &appsv1.Deployment{}) })
			if err := env.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "gone from the cache", func() error {
				if err := cc.Client.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("still cached (%v)", err)
				}
				return nil
			})
			// The manager's informer showed the deletion: what was
			// remembered of the child went with it, and the create asks
			// nothing first. (The cache's store shows the deletion a
			// moment before the informer's handlers, steady's among them,
			// are told: wait for steady's.)
			testenv.Eventually(t, "forgotten", func() error {
				if ownership.Remembered(ctx, cc.Client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}) {
					return errors.New("still remembered")
				}
				return nil
			})
			expect("created again after a deletion", controllerutil.OperationResultCreated, 0, 1)
		})
	}
}
