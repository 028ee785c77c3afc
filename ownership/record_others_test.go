package ownership_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestAnotherWritersRecordOnAControlledChildIsKept: a child
// this owner already controls, on which another writer put a record naming
// another owner. Called without RecordOwner{} and without Adopt{}, no call
// wrote that record and none adopts anything: the labels are not ours to
// delete (docs: "Without it no record is written"; Adopt "removes the other
// owner's record"). Before the fix, each call removed them all the same, one
// write each.
func TestAnotherWritersRecordOnAControlledChildIsKept(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	for _, fn := range allFns {
		t.Run(fn.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-record-" + strings.ToLower(fn.name)}}
			if _, err := fn.fn(ctx, env.Client, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }); err != nil {
				t.Fatal(err)
			}
			// Another writer labels the child (another tool's record).
			var live corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &live); err != nil {
				t.Fatal(err)
			}
			live.Labels = map[string]string{ownership.OwnerKindLabel: "Widget.example.com", ownership.OwnerNameLabel: "someone-else"}
			if err := env.Client.Update(ctx, &live); err != nil {
				t.Fatal(err)
			}
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cm.Name}}
			op, err := fn.fn(ctx, env.Client, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &live); err != nil {
				t.Fatal(err)
			}
			if live.Labels[ownership.OwnerNameLabel] != "someone-else" || op != controllerutil.OperationResultNone {
				t.Errorf("without RecordOwner or Adopt: result %s, labels %v; want none, another writer's record kept", op, live.Labels)
			}
		})
	}
}
