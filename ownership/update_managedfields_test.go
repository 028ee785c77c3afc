package ownership_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestUpdateSendsNoManagedFields: the update that repairs a child is sent
// without the child's managedFields (the API server keeps the live ones
// when an update has none), and the child then holds the server's, the
// creator's entry kept beside the update's; an update that fails leaves
// the child's managedFields as they were.
func TestUpdateSendsNoManagedFields(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "mf-owner")
	var sent [][]metav1.ManagedFieldsEntry
	fail := false
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			sent = append(sent, obj.GetManagedFields())
			if fail {
				return errors.New("refused")
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	want := func(cm *corev1.ConfigMap, v string) ownership.MutateFn {
		return func() error { cm.Data = map[string]string{"k": v}; return nil }
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mf"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, o, cm, want(cm, "1")); err != nil {
		t.Fatal(err)
	}
	// Another writer changes the child (our data, and an annotation of its
	// own): the next call repairs the data and keeps the annotation.
	other := cm.DeepCopy()
	other.Data["k"] = "drift"
	other.Annotations = map[string]string{"drifter": "x"}
	if err := env.Client.Update(ctx, other, client.FieldOwner("drifter")); err != nil {
		t.Fatal(err)
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mf"}}
	res, err := ownership.CreateOrUpdate(ctx, c, o, cm, want(cm, "1"))
	if err != nil || res != controllerutil.OperationResultUpdated {
		t.Fatalf("repair: %v, %v", res, err)
	}
	if len(sent) != 1 || len(sent[0]) != 0 {
		t.Fatalf("updates sent %d, with managedFields %v", len(sent), sent)
	}
	// The server kept the live entries: the drifter still manages its
	// annotation, and the child holds them.
	var live corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &live); err != nil {
		t.Fatal(err)
	}
	for _, mf := range [][]metav1.ManagedFieldsEntry{cm.ManagedFields, live.ManagedFields} {
		drifter := false
		for _, e := range mf {
			drifter = drifter || e.Manager == "drifter" && strings.Contains(string(e.FieldsV1.Raw), "f:drifter")
		}
		if len(mf) != 2 || !drifter {
			t.Fatalf("managedFields after the update: %v", mf)
		}
	}

	// A failed update: the child keeps the managedFields it was read with.
	other = live.DeepCopy()
	other.Data["k"] = "drift again"
	if err := env.Client.Update(ctx, other, client.FieldOwner("drifter")); err != nil {
		t.Fatal(err)
	}
	fail = true
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mf"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, o, cm, want(cm, "1")); err == nil {
		t.Fatal("the refused update returned no error")
	}
	if len(sent) != 2 || len(sent[1]) != 0 {
		t.Fatalf("updates sent %d, the last with managedFields %v", len(sent), sent[len(sent)-1])
	}
	if len(cm.ManagedFields) != 2 {
		t.Fatalf("after a failed update the child holds managedFields %v", cm.ManagedFields)
	}
}
