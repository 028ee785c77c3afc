package ownership

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steadyk8s/steady/internal/scope"
)

// rememberCreated only reads the map of what was asked for (CreateOrPatch's,
// which goes on using it): the server metadata and the empty labels it
// drops to compare stay in asked.
func TestRememberCreatedLeavesAskedWhole(t *testing.T) {
	st := scope.New(fake.NewClientBuilder().Build(), nil, nil)
	key := memKey{s: st, obj: scope.Key{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: "ns", Name: "c"}, slot: "s"}
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"a": "1"}}
	child := desired.DeepCopy()
	child.ResourceVersion, child.UID = "5", "u1"
	child.Annotations = map[string]string{"filled": "by a webhook"} // the server filled something in
	asked := map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "c", "resourceVersion": "4", "labels": map[string]any{}},
		"data":     map[string]any{"a": "1"},
	}
	want := runtime.DeepCopyJSON(asked)
	rememberCreated(key, desired, child, asked, nil)
	if !reflect.DeepEqual(asked, want) {
		t.Errorf("rememberCreated changed what was asked for: %v, was %v", asked, want)
	}
}
