package ownership_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// form is how a test hands a child to ownership: typed, or unstructured
// (the same object as a map, mutated through its typed form).
type form struct {
	name string
	// child returns the child to pass and a mutate that runs f on it.
	child func(t *testing.T, typed client.Object, f func(client.Object)) (client.Object, ownership.MutateFn)
}

var forms = []form{
	{"typed", func(t *testing.T, typed client.Object, f func(client.Object)) (client.Object, ownership.MutateFn) {
		return typed, func() error { f(typed); return nil }
	}},
	{"unstructured", func(t *testing.T, typed client.Object, f func(client.Object)) (client.Object, ownership.MutateFn) {
		gvk, err := apiutil.GVKForObject(typed, env.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(typed.GetNamespace())
		u.SetName(typed.GetName())
		return u, func() error {
			obj := typed.DeepCopyObject().(client.Object)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
				return err
			}
			f(obj)
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return err
			}
			u.Object = m
			u.SetGroupVersionKind(gvk)
			return nil
		}
	}},
}

func webSpec(name string, paused bool, replicas int32, podAnnotations map[string]string) appsv1.DeploymentSpec {
	labels := map[string]string{"app": name}
	return appsv1.DeploymentSpec{
		Replicas: &replicas,
		Paused:   paused,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: podAnnotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
		},
	}
}

// TestRemovalIsAChange: a field the desired state drops, or sets back to
// its zero value, is written, on typed and unstructured children alike, and
// then the same call writes nothing.
func TestRemovalIsAChange(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	seq := 0
	egressRule := []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}}}
	for _, tc := range []struct {
		name          string
		new           func() client.Object
		before, after func(client.Object)
		removed       func(client.Object) bool // true when the stored object shows the removal
	}{
		{"label dropped", func() client.Object { return &corev1.ConfigMap{} },
			func(o client.Object) { o.SetLabels(map[string]string{"keep": "1", "drop": "1"}) },
			func(o client.Object) { o.SetLabels(map[string]string{"keep": "1"}) },
			func(o client.Object) bool { _, ok := o.GetLabels()["drop"]; return !ok && o.GetLabels()["keep"] == "1" }},
		{"every label dropped", func() client.Object { return &corev1.ConfigMap{} },
			func(o client.Object) { o.SetLabels(map[string]string{"drop": "1"}) },
			func(o client.Object) { o.SetLabels(nil) },
			func(o client.Object) bool { return len(labelsBesidesTheRecord(o)) == 0 }},
		{"annotation dropped", func() client.Object { return &corev1.ConfigMap{} },
			func(o client.Object) { o.SetAnnotations(map[string]string{"keep": "1", "drop": "1"}) },
			func(o client.Object) { o.SetAnnotations(map[string]string{"keep": "1"}) },
			func(o client.Object) bool { _, ok := o.GetAnnotations()["drop"]; return !ok }},
		{"map emptied", func() client.Object { return &corev1.ConfigMap{} },
			func(o client.Object) { o.(*corev1.ConfigMap).Data = map[string]string{"k": "v"} },
			func(o client.Object) { o.(*corev1.ConfigMap).Data = map[string]string{} },
			func(o client.Object) bool { return len(o.(*corev1.ConfigMap).Data) == 0 }},
		{"bool set to false", func() client.Object { return &appsv1.Deployment{} },
			func(o client.Object) { o.(*appsv1.Deployment).Spec = webSpec(o.GetName(), true, 2, nil) },
			func(o client.Object) { o.(*appsv1.Deployment).Spec = webSpec(o.GetName(), false, 2, nil) },
			func(o client.Object) bool { return !o.(*appsv1.Deployment).Spec.Paused }},
		{"number set to 0", func() client.Object { return &appsv1.Deployment{} },
			func(o client.Object) { o.(*appsv1.Deployment).Spec = webSpec(o.GetName(), false, 2, nil) },
			func(o client.Object) { o.(*appsv1.Deployment).Spec = webSpec(o.GetName(), false, 0, nil) },
			func(o client.Object) bool { return *o.(*appsv1.Deployment).Spec.Replicas == 0 }},
		{"omitempty number set to 0", func() client.Object { return &testapi.Widget{} },
			func(o client.Object) { o.(*testapi.Widget).Spec.Size = 3 },
			func(o client.Object) { o.(*testapi.Widget).Spec.Size = 0 },
			func(o client.Object) bool { return o.(*testapi.Widget).Spec.Size == 0 }},
		{"nested map emptied", func() client.Object { return &appsv1.Deployment{} },
			func(o client.Object) {
				o.(*appsv1.Deployment).Spec = webSpec(o.GetName(), false, 1, map[string]string{"a": "b"})
			},
			func(o client.Object) { o.(*appsv1.Deployment).Spec = webSpec(o.GetName(), false, 1, nil) },
			func(o client.Object) bool { return len(o.(*appsv1.Deployment).Spec.Template.Annotations) == 0 }},
		{"egress rules dropped (deny all egress)", func() client.Object { return &networkingv1.NetworkPolicy{} },
			func(o client.Object) {
				o.(*networkingv1.NetworkPolicy).Spec = networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"}, Egress: egressRule}
			},
			func(o client.Object) {
				o.(*networkingv1.NetworkPolicy).Spec = networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"}}
			},
			func(o client.Object) bool { return len(o.(*networkingv1.NetworkPolicy).Spec.Egress) == 0 }},
		{"removal beside another change", func() client.Object { return &corev1.ConfigMap{} },
			func(o client.Object) {
				o.SetLabels(map[string]string{"drop": "1"})
				o.(*corev1.ConfigMap).Data = map[string]string{"k": "v"}
			},
			func(o client.Object) { o.SetLabels(nil); o.(*corev1.ConfigMap).Data = map[string]string{"k": "w"} },
			func(o client.Object) bool {
				return len(labelsBesidesTheRecord(o)) == 0 && o.(*corev1.ConfigMap).Data["k"] == "w"
			}},
	} {
		for _, fn := range fns {
			for _, f := range forms {
				seq++
				name := fmt.Sprintf("child-%d", seq)
				t.Run(fmt.Sprintf("%s/%s/%s", tc.name, fn.name, f.name), func(t *testing.T) {
					typed := func() client.Object {
						obj := tc.new()
						obj.SetNamespace(ns)
						obj.SetName(name)
						return obj
					}
					wantUpdate := controllerutil.OperationResultUpdated
					rv := ""
					for i, step := range []struct {
						mutate func(client.Object)
						want   controllerutil.OperationResult
						writes int // at most, when unchanged
					}{{tc.before, controllerutil.OperationResultCreated, 0}, {tc.after, wantUpdate, 0}, {tc.after, controllerutil.OperationResultNone, 1}, {tc.after, controllerutil.OperationResultNone, 0}} {
						child, mutate := f.child(t, typed(), step.mutate)
						n.Reset()
						op, err := fn.fn(ctx, c, o, child, mutate)
						if err != nil || op != step.want {
							t.Fatalf("call %d: %s, %v; want %s", i, op, err, step.want)
						}
						stored := typed()
						if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
							t.Fatal(err)
						}
						// Unchanged: nothing stored. A write the server finds
						// nothing in may be sent once (a mutate that drops
						// defaults), then the verdict is remembered.
						if op == controllerutil.OperationResultNone && (n.Writes() > step.writes || stored.GetResourceVersion() != rv) {
							t.Errorf("call %d: unchanged, but requests %s, resourceVersion %s -> %s", i, n, rv, stored.GetResourceVersion())
						}
						rv = stored.GetResourceVersion()
					}
					stored := typed()
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
						t.Fatal(err)
					}
					if !tc.removed(stored) {
						t.Errorf("the removal was not written: %+v", stored)
					}
				})
			}
		}
	}
}

// labelsBesidesTheRecord is o's labels without the owner record's
// (ownership.OwnerKindLabel and OwnerNameLabel), which stay when a mutate
// drops every label: they are not the mutate's.
func labelsBesidesTheRecord(o client.Object) map[string]string {
	l := maps.Clone(o.GetLabels())
	delete(l, ownership.OwnerKindLabel)
	delete(l, ownership.OwnerNameLabel)
	return l
}
