package ownership_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/ownership"
)

// TestATypedChildsLostFieldItsTypeHoldsIsNotBlamedOnTheType: a typed
// ConfigMap child written whole (mutate sets its annotations anew) removes
// kubectl annotate's annotation: the log before the write names it
// (metadata.annotations.note (kubectl-annotate)). The log after the write,
// of fields "its Go type cannot hold", must not name it again, coarser
// (metadata.annotations): a ConfigMap's Go type holds annotations, and the
// loss is the mutate's, already said.
func TestATypedChildsLostFieldItsTypeHoldsIsNotBlamedOnTheType(t *testing.T) {
	env.Require(t)
	ctx, logged := loggedContext()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	whole := func() (*corev1.ConfigMap, ownership.MutateFn) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
		return cm, func() error { cm.Annotations = nil; cm.Data = map[string]string{"k": "v"}; return nil }
	}
	cm, f := whole()
	if op, err := ownership.CreateOrUpdate(ctx, env.Client, o, cm, f); err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("create: %s, %v", op, err)
	}
	if err := env.Client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"theirs"}}}`)), client.FieldOwner("kubectl-annotate")); err != nil {
		t.Fatal(err)
	}
	logged()
	cm, f = whole()
	if op, err := ownership.CreateOrUpdate(ctx, env.Client, o, cm, f); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("update: %s, %v", op, err)
	}
	got := logged()
	t.Logf("logged: %s", got)
	if !strings.Contains(got, "metadata.annotations.note (kubectl-annotate)") {
		t.Errorf("the removal of kubectl's annotation is not logged: %q", got)
	}
	if strings.Contains(got, "cannot hold") {
		t.Errorf("the log blames the ConfigMap's Go type for a field it holds: %q", got)
	}
}
