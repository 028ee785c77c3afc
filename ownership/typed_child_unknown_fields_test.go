package ownership_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// oldGizmo is a Go type of Gizmo older than what is stored: it knows
// spec.size only, as an operator built against an older release of a
// kind's Go types does, while another controller sets a field added
// since (spec.color).
type oldGizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int `json:"size,omitempty"`
	} `json:"spec,omitempty"`
}

func (g *oldGizmo) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(g)
	out := &oldGizmo{}
	_ = json.Unmarshal(b, out)
	return out
}

type oldGizmoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []oldGizmo `json:"items"`
}

func (l *oldGizmoList) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(l)
	out := &oldGizmoList{}
	_ = json.Unmarshal(b, out)
	return out
}

// TestAFieldTheChildsGoTypeLacksIsNotLostSilently: docs/ownership.md (Do): "Set, in
// the mutate function, the fields you own, one by one, on the child as
// read: what other writers set stays", and a write that removes a field
// another field manager set "says so on the context's logger". A child
// read into a Go type that lacks a field another controller set (kubectl
// patch of spec.color on a Gizmo read as oldGizmo) is written whole by
// CreateOrUpdate's update: the field must stay, or at least its removal
// must be logged.
func TestAFieldTheChildsGoTypeLacksIsNotLostSilently(t *testing.T) {
	env.Require(t)
	ctx, logged := loggedContext()
	ns := env.Namespace(t)
	o := owner(t, ns, "o")
	scheme := testapi.Scheme()
	scheme.AddKnownTypeWithName(gizmoGVK, &oldGizmo{})
	scheme.AddKnownTypeWithName(gizmoGVK.GroupVersion().WithKind("GizmoList"), &oldGizmoList{})
	c, err := client.New(env.Config, client.Options{Scheme: scheme, Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	size := func(n int) (*oldGizmo, ownership.MutateFn) {
		g := &oldGizmo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}}
		return g, func() error { g.Spec.Size = n; return nil }
	}
	g, f := size(1)
	if op, err := ownership.CreateOrUpdate(ctx, c, o, g, f); err != nil || op != controllerutil.OperationResultCreated {
		t.Fatalf("create: %s, %v", op, err)
	}
	u := unstructuredChild(gizmoGVK, ns, "g")
	if err := env.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"red"}}`)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	logged()
	g, f = size(2)
	if op, err := ownership.CreateOrUpdate(ctx, c, o, g, f); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("update: %s, %v", op, err)
	}
	got := logged()
	t.Logf("logged: %s", got)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	color, _, _ := unstructured.NestedString(u.Object, "spec", "color")
	if color != "red" && !strings.Contains(got, "spec.color (kubectl-patch)") {
		t.Errorf("kubectl's spec.color, which oldGizmo cannot hold, was removed (spec %v) and the log says %q", u.Object["spec"], got)
	}
}
