package applyset_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/applyset"
)

// TestPruneSparesWhatLeftTheSetSinceTheList: Apply lists the members at its
// start and prunes after every member is applied (and, with WaitCurrent,
// after they are all Current: seconds, minutes). An object that stopped
// being ours in that window is not ours to delete: another set took it
// over (kubectl apply --applyset=other relabels it), someone detached it
// (kubectl label ... applyset.kubernetes.io/part-of-), or someone
// annotated it to be kept (cli-utils.sigs.k8s.io/on-remove: keep). The
// other writer acts here just before the first delete of the prune, after
// the list: deterministic, as a slow apply or a WaitCurrent makes it.
func TestPruneSparesWhatLeftTheSetSinceTheList(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
	first, err := applyset.New(env.Client, parent, applyset.FieldManager("shop"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Apply(ctx, parse(t, cm("a")+cm("taken")+cm("detached")+cm("kept")+cm("gone"))); err != nil {
		t.Fatal(err)
	}

	otherSet := applyset.ID(schema.GroupKind{Kind: "Secret"}, ns, "other-set")
	var once sync.Once
	c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			once.Do(func() {
				change := func(name string, f func(*corev1.ConfigMap)) {
					o := configMap(ns, name)
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
						t.Error(err)
						return
					}
					f(o)
					if err := env.Client.Update(ctx, o); err != nil {
						t.Error(err)
					}
				}
				change("taken", func(o *corev1.ConfigMap) { o.Labels[applyset.PartOfLabel] = otherSet })
				change("detached", func(o *corev1.ConfigMap) { delete(o.Labels, applyset.PartOfLabel) })
				change("kept", func(o *corev1.ConfigMap) {
					o.Annotations = map[string]string{"cli-utils.sigs.k8s.io/on-remove": "keep"}
				})
			})
			return c.Delete(ctx, obj, opts...)
		},
	})
	set, err := applyset.New(c, parent, applyset.FieldManager("shop"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(ctx, parse(t, cm("a")))
	t.Logf("result: %+v, %v", res.Objects, err)
	if exists(t, configMap(ns, "gone")) {
		t.Error("gone, still a member, was not pruned")
	}
	for _, name := range []string{"a", "taken", "detached", "kept"} {
		if !exists(t, configMap(ns, name)) {
			t.Errorf("%s was deleted: it was no longer a member of the set (or was to be kept) when the prune deleted it", name)
		}
	}
	if o := configMap(ns, "kept"); exists(t, o) && o.Labels[applyset.PartOfLabel] != "" {
		t.Errorf("kept is still labelled part of the set: %v", o.Labels)
	}
	if o := configMap(ns, "taken"); exists(t, o) && o.Labels[applyset.PartOfLabel] != otherSet {
		t.Errorf("taken's part-of label is %q, not the other set's", o.Labels[applyset.PartOfLabel])
	}
}

// watchClient is a direct client that interceptor.NewClient can wrap.
func watchClient(t *testing.T) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
