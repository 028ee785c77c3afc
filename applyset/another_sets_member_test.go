package applyset_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/applyset"
)

// TestAnotherSetsMemberIsNotTakenSilently: two sets in one namespace, each
// with its own parent, both with the default options (field manager
// "steady"). Set B's manifest names a ConfigMap that is a member of set A.
// It is A's: B's Apply must not relabel it part of B without saying so
// (with distinct field managers the API server refuses it: a conflict on
// the part-of label), and B's next Apply, without it, must not prune an
// object that set A still holds. With the default field manager there is
// no conflict: B took A's member silently, and its prune then deleted it.
// Now the member is refused (with and without the dry run, and with
// another field manager, where the API server refuses it too), and Force
// takes it.
func TestAnotherSetsMemberIsNotTakenSilently(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	a, err := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-a"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, parse(t, cm("shared")+cm("only-a"))); err != nil {
		t.Fatal(err)
	}
	res, err := b.Apply(ctx, parse(t, cm("shared")+cm("only-b")))
	t.Logf("B applies A's member: %+v, %v", res.Objects, err)
	shared := configMap(ns, "shared")
	if !exists(t, shared) {
		t.Fatal("A's member is gone")
	}
	if got := shared.Labels[applyset.PartOfLabel]; got != a.ID() && err == nil {
		t.Errorf("B took A's member silently: its part-of label is %q (B's: %v), and B's Apply returned no error", got, got == b.ID())
	}
	res, err = b.Apply(ctx, parse(t, cm("only-b")))
	t.Logf("B without it: %+v, %v", res.Objects, err)
	if !exists(t, configMap(ns, "shared")) {
		t.Error("B's prune deleted A's member")
	}
	for _, opts := range [][]applyset.SetOption{{applyset.NoDryRun{}}, {applyset.FieldManager("team-b")}} {
		other, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-b"}}, opts...)
		if _, err := other.Apply(ctx, parse(t, cm("shared")+cm("only-b"))); err == nil {
			t.Errorf("B with %v took A's member without an error", opts)
		}
		if shared := configMap(ns, "shared"); !exists(t, shared) || shared.Labels[applyset.PartOfLabel] != a.ID() {
			t.Errorf("with %v: A's member is gone or relabelled: %v", opts, shared.Labels)
		}
	}
	// Force takes it, as it takes another field manager's fields.
	forced, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-b"}}, applyset.Force{})
	if _, err := forced.Apply(ctx, parse(t, cm("shared")+cm("only-b"))); err != nil {
		t.Fatalf("with Force: %v", err)
	}
	if shared := configMap(ns, "shared"); !exists(t, shared) || shared.Labels[applyset.PartOfLabel] != b.ID() {
		t.Errorf("with Force: %v; want B's", shared.Labels)
	}
}
