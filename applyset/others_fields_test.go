package applyset_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
)

// TestAMembersFieldsOfOtherManagers: between two applies of the set,
// kubectl adds a data key and a label to a member (kubectl patch) and
// takes over one of our data keys (kubectl edit changes its value). The
// same manifest applied again keeps theirs and does not fight over the
// key kubectl took: a conflict, refused before any write (a
// ValidationError naming the field). A manifest that drops that key and
// one more of ours removes ours only: the key kubectl took stays with its
// value, and so do kubectl's key and label. The next apply of it is
// unchanged, with no write.
func TestAMembersFieldsOfOtherManagers(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	set, err := applyset.New(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}, applyset.FieldManager("shop"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {ours: \"1\"}}\ndata: {k1: ours, k2: ours, k3: ours}\n"
	if _, err := set.Apply(ctx, parse(t, v1)); err != nil {
		t.Fatal(err)
	}
	a := configMap(ns, "a")
	for manager, p := range map[string]string{
		"kubectl-patch": `{"metadata":{"labels":{"theirs":"1"}},"data":{"theirs":"1"}}`,
		"kubectl-edit":  `{"data":{"k2":"theirs"}}`,
	} {
		if err := env.Client.Patch(ctx, a, client.RawPatch(types.MergePatchType, []byte(p)), client.FieldOwner(manager)); err != nil {
			t.Fatal(err)
		}
	}
	theirs := func(what string) {
		t.Helper()
		got := configMap(ns, "a")
		if !exists(t, got) {
			t.Fatalf("%s: the member is gone", what)
		}
		if got.Data["theirs"] != "1" || got.Labels["theirs"] != "1" || got.Data["k2"] != "theirs" {
			t.Errorf("%s: data %v, labels %v; want kubectl's key, label and k2 kept", what, got.Data, got.Labels)
		}
	}

	n.Reset()
	res, err := set.Apply(ctx, parse(t, v1))
	var verr *applyset.ValidationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "k2") || n.Writes() != 0 {
		t.Errorf("the same manifest again: %+v, %v (requests %s); want a ValidationError naming k2, no write", res.Objects, err, n)
	}
	theirs("after the refused apply")

	v2 := strings.Replace(v1, "{k1: ours, k2: ours, k3: ours}", "{k1: ours}", 1)
	if res, err := set.Apply(ctx, parse(t, v2)); err != nil || res.Count(applyset.Applied) != 1 {
		t.Fatalf("dropping k2 and k3: %+v, %v", res.Objects, err)
	}
	theirs("after dropping k2 and k3")
	if got := configMap(ns, "a"); exists(t, got) && (got.Data["k3"] != "" || got.Data["k1"] != "ours" || got.Labels["ours"] != "1") {
		t.Errorf("data %v, labels %v; want k3 gone, k1 and our label kept", got.Data, got.Labels)
	}
	n.Reset()
	if res, err := set.Apply(ctx, parse(t, v2)); err != nil || res.Count(applyset.Unchanged) != 1 || n.Writes() != 0 {
		t.Errorf("the same manifest again: %+v, %v (requests %s); want unchanged, no write", res.Objects, err, n)
	}
	theirs("after the unchanged apply")
}
