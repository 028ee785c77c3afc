package applyset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/applyset"
)

// TestAConvergedApplyReadsNoOtherSetsMembers: many sets in one namespace
// (an operator with a set per custom resource). A converged Apply of one
// set, whose members are all listed as its own, has no member to tell from
// another set's; its LISTs should not carry every other set's members of
// its kinds in its namespaces, which makes each set's converged Apply cost
// grow with the others' (a resync of N sets reads N times N sets' objects).
func TestAConvergedApplyReadsNoOtherSetsMembers(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	var big strings.Builder
	for i := range 30 {
		big.WriteString(cm(fmt.Sprintf("b-%d", i)))
	}
	b, err := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Apply(ctx, parse(t, big.String())); err != nil {
		t.Fatal(err)
	}
	a, err := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, parse(t, cm("a-0"))); err != nil {
		t.Fatal(err)
	}
	foreign := 0
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	counted := interceptor.NewClient(c, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		err := c.List(ctx, list, opts...)
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			if o, ok := it.(metav1.Object); ok && o.GetLabels()[applyset.PartOfLabel] != a.ID() {
				foreign++
			}
		}
		return err
	}})
	again, err := applyset.New(counted, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set-a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Apply(ctx, parse(t, cm("a-0"))); err != nil {
		t.Fatal(err)
	}
	if foreign > 0 {
		t.Errorf("a converged Apply of set A (1 member) listed %d objects of other sets", foreign)
	}
}
