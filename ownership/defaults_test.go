package ownership_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

func TestNoWriteWhenTheServerDefaultedFields(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		name string
		fn   createOr
	}{{"CreateOrUpdate", createOrUpdate}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, n := counting(t)
			ns := env.Namespace(t)
			o := owner(t, ns, "app")
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			rv := func(obj client.Object) string {
				t.Helper()
				live := obj.DeepCopyObject().(client.Object)
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
					t.Fatal(err)
				}
				return live.GetResourceVersion()
			}
			// After a create, what the answer holds besides what was asked
			// for is what the server filled in: the next call writes
			// nothing. After an update likewise.
			for i, step := range []struct {
				image string
				want  controllerutil.OperationResult
				noOps int // writes the server finds nothing in
			}{{"nginx:1", "created", 0}, {"nginx:1", "unchanged", 0}, {"nginx:1", "unchanged", 0}, {"nginx:2", "updated", 0}, {"nginx:2", "unchanged", 0}, {"nginx:2", "unchanged", 0}} {
				var dRV, sRV string
				if i > 0 {
					dRV, sRV = rv(d), rv(s)
				}
				n.Reset()
				d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				op, err := tc.fn(ctx, c, o, d, deployment(d, step.image))
				if err != nil || op != step.want {
					t.Fatalf("deployment %s: %s, %v; want %s", step.image, op, err, step.want)
				}
				s = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
				sop, err := tc.fn(ctx, c, o, s, service(s))
				if err != nil {
					t.Fatal(err)
				}
				wantWrites := step.noOps
				if op != controllerutil.OperationResultNone {
					wantWrites++
				}
				if sop == controllerutil.OperationResultCreated {
					wantWrites++
				} else if sop != controllerutil.OperationResultNone {
					t.Errorf("service: %s, want unchanged", sop)
				}
				if n.Writes() != wantWrites || n.Get("GET") != 2 || n.Get("DRYRUN-PUT")+n.Get("DRYRUN-PATCH") != 0 {
					t.Errorf("call %d, after %s/%s: requests %s, want GET=2, %d writes, no dry run", i, op, sop, n, wantWrites)
				}
				// Unchanged means nothing stored: the resourceVersion stays.
				if i > 0 && op == controllerutil.OperationResultNone && rv(d) != dRV {
					t.Errorf("call %d: deployment unchanged, but its resourceVersion moved from %s to %s", i, dRV, rv(d))
				}
				if i > 0 && sop == controllerutil.OperationResultNone && rv(s) != sRV {
					t.Errorf("call %d: service unchanged, but its resourceVersion moved from %s to %s", i, sRV, rv(s))
				}
			}
			var got appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Template.Spec.Containers[0].Image != "nginx:2" || !metav1.IsControlledBy(&got, o) {
				t.Errorf("stored deployment: image %s, controlled by owner %v", got.Spec.Template.Spec.Containers[0].Image, metav1.IsControlledBy(&got, o))
			}
			if got.Spec.Template.Spec.Containers[0].ImagePullPolicy == "" || got.Spec.RevisionHistoryLimit == nil {
				t.Error("the server's defaults are not on the stored object; the test proves nothing")
			}
		})
	}
}

// TestControllerutilLoopsOnTheSameMutate is the baseline: controllerutil's
// CreateOrUpdate writes on every call for the same wholesale mutate.
func TestControllerutilLoopsOnTheSameMutate(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for i := 0; i < 3; i++ {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		mutate := deployment(d, "nginx:1")
		n.Reset()
		op, err := controllerutil.CreateOrUpdate(ctx, c, d, func() error {
			_ = mutate()
			return controllerutil.SetControllerReference(o, d, c.Scheme())
		})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (op != controllerutil.OperationResultUpdated || n.Get("PUT") != 1) {
			t.Errorf("call %d: %s, %s; the baseline no longer loops", i, op, n)
		}
	}
}

// TestNoWriteWhenTheSchemaDefaultedFields: a wholesale unstructured spec
// of a custom resource whose schema defaults fields (a number, a bool, a
// nested object) is written once; the same call then costs a GET and at
// most one write the server finds nothing in (its resourceVersion stays),
// and nothing once that is known. Setting a defaulted field away from
// its default and back, or dropping a list, is written.
func TestNoWriteWhenTheSchemaDefaultedFields(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	gvk := gizmoGVK.GroupVersion().WithKind("Doodad")
	for _, fn := range fns {
		t.Run(fn.name, func(t *testing.T) {
			prevRV := ""
			for i, step := range []struct {
				spec map[string]any
				want controllerutil.OperationResult
			}{
				{map[string]any{"color": "red", "tags": []any{"a"}}, "created"},
				{map[string]any{"color": "red", "tags": []any{"a"}}, "unchanged"},
				{map[string]any{"color": "red", "tags": []any{"a"}}, "unchanged"},
				{map[string]any{"color": "red", "replicas": int64(3)}, "updated"},
				{map[string]any{"color": "red", "replicas": int64(3)}, "unchanged"},
				{map[string]any{"color": "red"}, "updated"},
				{map[string]any{"color": "red", "replicas": int64(1)}, "unchanged"},
				{map[string]any{"color": "red", "policy": map[string]any{"mode": "manual"}}, "updated"},
				{map[string]any{"color": "red", "policy": map[string]any{"mode": "manual"}}, "unchanged"},
				{map[string]any{"color": "red", "policy": map[string]any{}}, "updated"},
				{map[string]any{"color": "red"}, "unchanged"},
			} {
				u := unstructuredChild(gvk, ns, "d-"+strings.ToLower(fn.name))
				n.Reset()
				op, err := fn.fn(ctx, c, o, u, func() error { u.Object["spec"] = runtime.DeepCopyJSON(step.spec); return nil })
				if err != nil || op != step.want {
					t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
				}
				if n.Get("GET") != 1 || n.Get("DRYRUN-PUT")+n.Get("DRYRUN-PATCH") != 0 || n.Writes() > 1 {
					t.Errorf("call %d (%s): requests %s", i, op, n)
				}
				stored := unstructuredChild(gvk, ns, "d-"+strings.ToLower(fn.name))
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
					t.Fatal(err)
				}
				tags, _, _ := unstructured.NestedStringSlice(stored.Object, "spec", "tags")
				if _, want := step.spec["tags"]; want != (len(tags) > 0) {
					t.Errorf("call %d: stored tags %v", i, tags)
				}
				if op == controllerutil.OperationResultNone && stored.GetResourceVersion() != prevRV {
					t.Errorf("call %d: unchanged, but the resourceVersion moved from %s to %s", i, prevRV, stored.GetResourceVersion())
				}
				prevRV = stored.GetResourceVersion()
			}
		})
	}
}
