package predicates_test

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/steadyk8s/steady/predicates"
)

type mod func(*corev1.ConfigMap)

func cm(name string, mods ...mod) *corev1.ConfigMap {
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1}}
	for _, m := range mods {
		m(o)
	}
	return o
}

func ns(n string) mod       { return func(o *corev1.ConfigMap) { o.Namespace = n } }
func gen(g int64) mod       { return func(o *corev1.ConfigMap) { o.Generation = g } }
func label(k, v string) mod { return func(o *corev1.ConfigMap) { o.Labels = map[string]string{k: v} } }
func annotation(k, v string) mod {
	return func(o *corev1.ConfigMap) { o.Annotations = map[string]string{k: v} }
}
func finalizers(f ...string) mod { return func(o *corev1.ConfigMap) { o.Finalizers = f } }
func deleting() mod {
	return func(o *corev1.ConfigMap) { t := metav1.Now(); o.DeletionTimestamp = &t }
}

// ev is one event: kind is create, update, delete, tombstone or generic.
type ev struct {
	kind     string
	old, obj client.Object
	want     bool
}

func run(p predicate.Predicate, e ev) bool {
	switch e.kind {
	case "create":
		return p.Create(event.CreateEvent{Object: e.obj})
	case "update":
		return p.Update(event.UpdateEvent{ObjectOld: e.old, ObjectNew: e.obj})
	case "delete":
		return p.Delete(event.DeleteEvent{Object: e.obj})
	case "tombstone":
		return p.Delete(event.DeleteEvent{Object: e.obj, DeleteStateUnknown: true})
	case "generic":
		return p.Generic(event.GenericEvent{Object: e.obj})
	}
	panic(e.kind)
}

var typedNil *corev1.ConfigMap

// nilEvents are passed on by no predicate.
var nilEvents = []ev{
	{"create", nil, nil, false}, {"delete", nil, nil, false}, {"tombstone", nil, nil, false},
	{"generic", nil, nil, false}, {"update", nil, nil, false},
	{"create", nil, typedNil, false}, {"update", typedNil, typedNil, false},
}

func TestPredicates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      predicate.Predicate
		events []ev
	}{
		{"GenerationChanged", predicates.GenerationChanged(), []ev{
			{"create", nil, cm("a"), true}, {"delete", nil, cm("a"), true}, {"tombstone", nil, cm("a"), true}, {"generic", nil, cm("a"), true},
			{"update", cm("a"), cm("a", gen(2)), true},
			{"update", cm("a"), cm("a", label("x", "y")), false},
			{"update", cm("a"), cm("a", deleting()), true},
			{"update", cm("a", deleting()), cm("a", deleting(), label("x", "y")), false},
			{"update", cm("a", finalizers("f")), cm("a"), true},
			{"update", cm("a"), cm("a", finalizers("f")), true},
		}},
		{"GenerationOrMetadataChanged", predicates.GenerationOrMetadataChanged(), []ev{
			{"create", nil, cm("a"), true}, {"tombstone", nil, cm("a"), true},
			{"update", cm("a"), cm("a", label("x", "y")), true},
			{"update", cm("a"), cm("a", annotation("x", "y")), true},
			{"update", cm("a", label("x", "y")), cm("a", label("x", "y")), false},
			{"update", cm("a"), cm("a", deleting()), true},
			{"update", cm("a"), cm("a", gen(3)), true},
		}},
		{"DeletionStarted", predicates.DeletionStarted(), []ev{
			{"create", nil, cm("a"), false}, {"generic", nil, cm("a"), false},
			{"delete", nil, cm("a"), true}, {"tombstone", nil, cm("a"), true},
			{"update", cm("a"), cm("a", deleting()), true},
			{"update", cm("a", deleting()), cm("a", deleting(), finalizers()), false},
			{"update", cm("a"), cm("a", gen(2)), false},
		}},
		{"Names", predicates.Names("a", "b"), []ev{
			{"create", nil, cm("a"), true}, {"create", nil, cm("c"), false},
			{"delete", nil, cm("b", ns("other")), true}, {"tombstone", nil, cm("b"), true}, {"tombstone", nil, cm("c"), false},
			{"generic", nil, cm("c"), false}, {"update", cm("a"), cm("a", gen(2)), true}, {"update", cm("c"), cm("c"), false},
		}},
		{"NamespacedNames", predicates.Filter(func(o client.Object) bool { return o.GetNamespace() == "ns" && o.GetName() == "a" }), []ev{
			{"create", nil, cm("a"), true}, {"create", nil, cm("a", ns("other")), false},
			{"delete", nil, cm("a"), true}, {"generic", nil, cm("b"), false}, {"update", cm("a"), cm("a"), true},
		}},
		{"NameMatches", predicates.Filter(func(o client.Object) bool { return regexp.MustCompile(`^tenant-[a-z]+$`).MatchString(o.GetName()) }), []ev{
			{"create", nil, cm("tenant-acme"), true}, {"create", nil, cm("tenant-1"), false},
			{"tombstone", nil, cm("tenant-x"), true}, {"generic", nil, cm("other"), false},
			{"update", cm("tenant-a"), cm("tenant-a"), true},
		}},
		{"Namespaces", predicates.Filter(func(o client.Object) bool { return o.GetNamespace() == "team-a" }), []ev{
			{"create", nil, cm("x", ns("team-a")), true}, {"create", nil, cm("x"), false},
			{"delete", nil, cm("x", ns("team-a")), true}, {"generic", nil, cm("x", ns("team-b")), false},
			{"update", cm("x", ns("team-a")), cm("x", ns("team-a")), true},
		}},
		{"LabelSelector", predicates.Filter(func(o client.Object) bool {
			return labels.SelectorFromSet(labels.Set{"app": "web"}).Matches(labels.Set(o.GetLabels()))
		}), []ev{
			{"create", nil, cm("a", label("app", "web")), true}, {"create", nil, cm("a"), false},
			{"tombstone", nil, cm("a", label("app", "web")), true}, {"generic", nil, cm("a", label("app", "db")), false},
			{"update", cm("a", label("app", "web")), cm("a", label("app", "db")), true}, // leaves the selection: seen once more
			{"update", cm("a"), cm("a", label("app", "web")), true},
			{"update", cm("a"), cm("a", label("app", "db")), false},
		}},
		{"NotPaused", predicates.NotPaused("example.com/paused"), []ev{
			{"create", nil, cm("a"), true}, {"create", nil, cm("a", annotation("example.com/paused", "")), false},
			{"delete", nil, cm("a", annotation("example.com/paused", "true")), false}, {"generic", nil, cm("a"), true},
			{"update", cm("a", annotation("example.com/paused", "true")), cm("a"), true}, // resumed
			{"update", cm("a"), cm("a", annotation("example.com/paused", "true")), false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, e := range append(tc.events, nilEvents...) {
				if got := run(tc.p, e); got != e.want {
					t.Errorf("event %d (%s of %v): got %v, want %v", i, e.kind, name(e.obj), got, e.want)
				}
			}
		})
	}
}

func name(o client.Object) string {
	if o == nil || o == client.Object(typedNil) {
		return "nil"
	}
	return o.GetName()
}

// TestTypedVariants runs typed predicates on typed events.
func TestTypedVariants(t *testing.T) {
	p := predicates.TypedGenerationChanged[*corev1.ConfigMap]()
	if p.Update(event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: cm("a"), ObjectNew: cm("a", label("x", "y"))}) {
		t.Error("a label change passed the typed generation predicate")
	}
	if !p.Update(event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: cm("a"), ObjectNew: cm("a", deleting())}) {
		t.Error("the start of deletion was dropped")
	}
	if p.Create(event.TypedCreateEvent[*corev1.ConfigMap]{Object: nil}) {
		t.Error("a typed nil object passed")
	}
	names := predicates.TypedNames[*corev1.ConfigMap]("a")
	if !names.Generic(event.TypedGenericEvent[*corev1.ConfigMap]{Object: cm("a")}) || names.Generic(event.TypedGenericEvent[*corev1.ConfigMap]{Object: cm("b")}) {
		t.Error("typed Names filters wrongly")
	}
	for _, p := range []predicate.TypedPredicate[*corev1.ConfigMap]{
		predicates.TypedFilter(func(*corev1.ConfigMap) bool { return true }),
		predicates.TypedNotPaused[*corev1.ConfigMap]("p"), predicates.TypedGenerationOrMetadataChanged[*corev1.ConfigMap](),
		predicates.TypedDeletionStarted[*corev1.ConfigMap](),
	} {
		if p.Delete(event.TypedDeleteEvent[*corev1.ConfigMap]{Object: nil}) {
			t.Errorf("%T passed a nil object", p)
		}
	}
}
