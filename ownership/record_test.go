package ownership_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

// TestAnOwnersLabelsCopiedToItsChild: an owner that is itself a child
// (steady recorded its own owner in its labels) passes its labels on to
// its children, as operators commonly do (mutate copies owner.Labels). The
// labels the mutate copied name the grandparent; they are not a record of
// the child's owner on the cluster: a new child is created, and a restored
// child (no controller reference, its labels recording the owner) is taken
// back, by each way of writing a child, and records its own owner.
func TestAnOwnersLabelsCopiedToItsChild(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	root := owner(t, ns, "root")
	mid := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mid"}}
	if _, err := ownership.CreateOrUpdate(ctx, remembering(), root, mid, func() error {
		mid.Labels = map[string]string{"team": "shop"}
		return nil
	}, ownership.RecordOwner{}); err != nil {
		t.Fatal(err)
	}
	if mid.Labels[ownership.OwnerNameLabel] != "root" {
		t.Fatalf("mid's labels %v: want its record of root", mid.Labels)
	}
	cc := startCached(t)
	for _, via := range []struct {
		name string
		c    client.Client
	}{{"direct", env.Client}, {"cached", cc.Client}} {
		for _, fn := range allFns {
			t.Run(via.name+"/"+fn.name, func(t *testing.T) {
				name := "copied-" + via.name + "-" + strings.ToLower(fn.name)
				write := func() (controllerutil.OperationResult, error) {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					return fn.fn(ctx, via.c, mid, cm, func() error {
						cm.Labels = maps.Clone(mid.Labels) // the owner's labels, passed on
						cm.Data = map[string]string{"k": "v"}
						return nil
					}, ownership.RecordOwner{})
				}
				check := func(what string) {
					t.Helper()
					var got corev1.ConfigMap
					if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
						t.Fatal(err)
					}
					if !metav1.IsControlledBy(&got, mid) || got.Labels[ownership.OwnerNameLabel] != "mid" || got.Labels["team"] != "shop" {
						t.Errorf("%s: owners %v, labels %v; want mid's child, recorded as such, team=shop", what, got.OwnerReferences, got.Labels)
					}
				}
				if op, err := write(); err != nil || op != controllerutil.OperationResultCreated {
					t.Fatalf("create: %s, %v", op, err)
				}
				check("created")
				// Restored: the child without owner references, its labels kept.
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				got.OwnerReferences = nil
				if err := env.Client.Update(ctx, &got); err != nil {
					t.Fatal(err)
				}
				if via.name == "cached" {
					cachedSees(t, cc, &got)
				}
				if _, err := write(); err != nil {
					t.Fatalf("take back: %v", err)
				}
				check("taken back")
			})
		}
	}
}

// TestAnotherGroupsOwnerIsNamedWithItsGroup: a child recorded for an owner
// of the owner's kind and name in another group is refused, and the error
// names the recorded owner with its group: "Widget a" (or "Widget ns/a")
// beside the owner "Widget ns/a" would say the child is refused for the
// owner it records. In both forms of the record.
func TestAnotherGroupsOwnerIsNamedWithItsGroup(t *testing.T) {
	s := testapi.Scheme()
	a := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	for _, tc := range []struct {
		form                string
		labels, annotations map[string]string
	}{
		{"labels", map[string]string{ownership.OwnerKindLabel: "Widget.other.example", ownership.OwnerNameLabel: "a"}, nil},
		{"annotation", nil, map[string]string{ownership.OwnerAnnotation: "other.example/Widget/ns/a"}},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: tc.labels, Annotations: tc.annotations}}
		_, err := ownership.SetControllerReference(a, cm, s, ownership.RecordOwner{})
		var aoe *ownership.AlreadyOwnedError
		if !errors.As(err, &aoe) || aoe.RecordedIn != tc.form {
			t.Fatalf("%s: %v; want an *AlreadyOwnedError from the %s", tc.form, err, tc.form)
		}
		if !strings.Contains(aoe.Recorded, "other.example") || !strings.Contains(err.Error(), "other.example") {
			t.Errorf("%s: Recorded %q, message %q: the recorded owner is not told apart from Widget ns/a", tc.form, aoe.Recorded, err)
		}
	}
}

// TestRemovingTheControllerRemovesAPartOfItsRecord: a child whose record of
// its controller lost one of its labels (another writer removed it) is
// released by RemoveOwnerReference without the other label: left alone,
// the fragment would refuse every other owner as a record of another.
func TestRemovingTheControllerRemovesAPartOfItsRecord(t *testing.T) {
	s := testapi.Scheme()
	a := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	b := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}}
	for _, drop := range []string{ownership.OwnerKindLabel, ownership.OwnerNameLabel} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{"app": "x"}}}
		if _, err := ownership.SetControllerReference(a, cm, s, ownership.RecordOwner{}); err != nil {
			t.Fatal(err)
		}
		delete(cm.Labels, drop) // another writer's doing
		if !ownership.RemoveOwnerReference(a, cm) {
			t.Fatalf("without %s: a's reference not removed", drop)
		}
		if len(cm.Labels) != 1 || cm.Labels["app"] != "x" {
			t.Errorf("without %s: labels %v after a released the child; want app=x alone", drop, cm.Labels)
		}
		if _, err := ownership.SetControllerReference(b, cm, s, ownership.RecordOwner{}); err != nil {
			t.Errorf("without %s: the released child refused to b: %v", drop, err)
		}
	}
	// A label that names another owner stays.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	if _, err := ownership.SetControllerReference(a, cm, s, ownership.RecordOwner{}); err != nil {
		t.Fatal(err)
	}
	cm.Labels[ownership.OwnerNameLabel] = "b"
	delete(cm.Labels, ownership.OwnerKindLabel)
	ownership.RemoveOwnerReference(a, cm)
	if cm.Labels[ownership.OwnerNameLabel] != "b" {
		t.Errorf("labels %v: another owner's label removed", cm.Labels)
	}
}

// TestApplyAdoptsFromAnotherFieldManager: a child another steady
// controller applied (its own field manager, its owner's reference and
// record in labels) is refused to Apply without Adopt{} and taken with
// it: no conflict on the record labels the other manager applied, the
// child recorded for the new owner alone, the other manager's own label
// kept. The next apply changes nothing.
func TestApplyAdoptsFromAnotherFieldManager(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	a, b := owner(t, ns, "a"), owner(t, ns, "b")
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", Labels: map[string]string{"theirs": "1"}},
		Data: map[string]string{"k": "b"}}
	if _, err := applyObject(ctx, c, b, theirs, "other-steady", ownership.RecordOwner{}); err != nil {
		t.Fatal(err)
	}
	mine := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Data: map[string]string{"mine": "a"}}
	}
	var aoe *ownership.AlreadyOwnedError
	if _, err := applyObject(ctx, c, a, mine(), "steady-test", ownership.RecordOwner{}); !errors.As(err, &aoe) || aoe.Controller != "Widget b" {
		t.Fatalf("without Adopt: %v; want an *AlreadyOwnedError naming Widget b", err)
	}
	if op, err := applyObject(ctx, c, a, mine(), "steady-test", ownership.Adopt{}, ownership.RecordOwner{}); err != nil || op != controllerutil.OperationResultUpdated {
		t.Fatalf("adopt: %s, %v", op, err)
	}
	var got corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared"}, &got); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&got, a) || len(got.OwnerReferences) != 1 || got.Labels[ownership.OwnerNameLabel] != "a" ||
		got.Labels[ownership.OwnerKindLabel] != "Widget.test.steady.dev" || got.Labels["theirs"] != "1" || got.Annotations[ownership.OwnerAnnotation] != "" {
		t.Errorf("owners %v, labels %v, annotations %v; want a's child, recorded in labels, theirs=1 kept", got.OwnerReferences, got.Labels, got.Annotations)
	}
	n.Reset()
	if op, err := applyObject(ctx, c, a, mine(), "steady-test", ownership.RecordOwner{}); err != nil || op != controllerutil.OperationResultNone || n.Writes() != 0 {
		t.Errorf("again: %s, %v (requests %s); want unchanged, no write", op, err, n)
	}
}

// TestARecordAnotherWriterChangedIsRepaired: through a manager's cached
// client, a child under this owner's controller reference whose record
// another writer changed (kubectl label: one label removed, or the name
// set to another owner's) is written once, back to this owner's record in
// full, by each way of writing a child, its other labels kept; the next
// call writes nothing.
func TestARecordAnotherWriterChangedIsRepaired(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cc := startCached(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for _, fn := range allFns {
		for _, tamper := range []struct {
			name string
			f    func(map[string]string)
		}{
			{"name removed", func(l map[string]string) { delete(l, ownership.OwnerNameLabel) }},
			{"kind removed", func(l map[string]string) { delete(l, ownership.OwnerKindLabel) }},
			{"name changed", func(l map[string]string) { l[ownership.OwnerNameLabel] = "other" }},
		} {
			t.Run(fn.name+"/"+tamper.name, func(t *testing.T) {
				name := "tampered-" + strings.ToLower(fn.name) + "-" + strings.ReplaceAll(tamper.name, " ", "-")
				write := func() (controllerutil.OperationResult, error) {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					cc.Counter.Reset()
					return fn.fn(ctx, cc.Client, o, cm, func() error {
						if cm.Labels == nil {
							cm.Labels = map[string]string{}
						}
						cm.Labels["app"] = "x"
						cm.Data = map[string]string{"k": "v"}
						return nil
					}, ownership.RecordOwner{})
				}
				if _, err := write(); err != nil {
					t.Fatal(err)
				}
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				tamper.f(got.Labels)
				got.Labels["theirs"] = "1"
				if err := env.Client.Update(ctx, &got); err != nil {
					t.Fatal(err)
				}
				cachedSees(t, cc, &got)
				if op, err := write(); err != nil || op != controllerutil.OperationResultUpdated {
					t.Fatalf("repair: %s, %v (requests %s)", op, err, cc.Counter)
				}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				if got.Labels[ownership.OwnerKindLabel] != "Widget.test.steady.dev" || got.Labels[ownership.OwnerNameLabel] != "app" || got.Labels["app"] != "x" {
					t.Errorf("labels %v; want the record of Widget app in full, app=x", got.Labels)
				}
				if got.Labels["theirs"] != "1" {
					t.Errorf("labels %v: another writer's label removed", got.Labels)
				}
				cachedSees(t, cc, &got)
				if op, err := write(); err != nil || op != controllerutil.OperationResultNone || cc.Counter.Writes() != 0 {
					t.Errorf("again: %s, %v (requests %s); want unchanged, no write", op, err, cc.Counter)
				}
			})
		}
	}
}

// recordKeys are the keys of the owner record on obj (labels and
// annotations under ownership.steady.dev/).
func recordKeys(obj client.Object) []string {
	var keys []string
	for _, m := range []map[string]string{obj.GetLabels(), obj.GetAnnotations()} {
		for k := range m {
			if strings.HasPrefix(k, "ownership.steady.dev/") {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// TestNoRecordWithoutRecordOwner: without RecordOwner{}, a new child
// written by each way of writing one carries its controller reference and
// no owner record (no ownership.steady.dev/ label or annotation), also
// for an owner recorded in the annotation (a name longer than a label
// value) and when the mutate or configuration copies a record onto it; a
// second call writes nothing. With RecordOwner{} the same child carries
// the record.
func TestNoRecordWithoutRecordOwner(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n := counting(t)
	ns := env.Namespace(t)
	short, long := owner(t, ns, "app"), owner(t, ns, strings.Repeat("l", 70))
	copied := map[string]string{"app": "x", ownership.OwnerKindLabel: "Widget.test.steady.dev", ownership.OwnerNameLabel: "other"}
	for _, o := range []*testapi.Widget{short, long} {
		for _, fn := range allFns {
			for _, tc := range []struct {
				name   string
				labels map[string]string
				opts   []option
			}{
				{"plain", map[string]string{"app": "x"}, nil},
				{"copied record", copied, nil},
				{"recording", map[string]string{"app": "x"}, []option{ownership.RecordOwner{}}},
			} {
				name := strings.ToLower(fn.name) + "-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + o.Name[:3]
				t.Run(fn.name+"/"+tc.name+"/"+o.Name[:3], func(t *testing.T) {
					write := func() (controllerutil.OperationResult, error) {
						cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
						n.Reset()
						return fn.fn(ctx, c, o, cm, func() error {
							cm.Labels = maps.Clone(tc.labels)
							cm.Data = map[string]string{"k": "v"}
							return nil
						}, tc.opts...)
					}
					if op, err := write(); err != nil || op != controllerutil.OperationResultCreated {
						t.Fatalf("create: %s, %v", op, err)
					}
					var got corev1.ConfigMap
					if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
						t.Fatal(err)
					}
					if !metav1.IsControlledBy(&got, o) || got.Labels["app"] != "x" {
						t.Fatalf("owners %v, labels %v; want o's child, app=x", got.OwnerReferences, got.Labels)
					}
					keys := recordKeys(&got)
					if tc.opts == nil && len(keys) != 0 {
						t.Errorf("labels %v, annotations %v: a record without RecordOwner", got.Labels, got.Annotations)
					}
					if tc.opts != nil && len(keys) == 0 {
						t.Errorf("labels %v, annotations %v: no record with RecordOwner", got.Labels, got.Annotations)
					}
					if op, err := write(); err != nil || op != controllerutil.OperationResultNone || n.Writes() != 0 {
						t.Errorf("again: %s, %v (requests %s); want unchanged, no write", op, err, n)
					}
				})
			}
		}
	}
}

// TestRecordOwnerOnEveryCall: a child written with RecordOwner{} and then
// without it keeps its record with CreateOrUpdate (a
// record on the child is not the mutate's to drop), and loses it with
// Apply (its field manager applied the labels, and no longer sends them).
// Either way the child stays its owner's.
func TestRecordOwnerOnEveryCall(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, _ := counting(t)
	ns := env.Namespace(t)
	o := owner(t, ns, "app")
	for _, fn := range allFns {
		t.Run(fn.name, func(t *testing.T) {
			name := "every-" + strings.ToLower(fn.name)
			write := func(opts ...option) {
				t.Helper()
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if _, err := fn.fn(ctx, c, o, cm, func() error { cm.Data = map[string]string{"k": "v"}; return nil }, opts...); err != nil {
					t.Fatal(err)
				}
			}
			read := func() *corev1.ConfigMap {
				t.Helper()
				var got corev1.ConfigMap
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				return &got
			}
			write(ownership.RecordOwner{})
			if got := read(); got.Labels[ownership.OwnerNameLabel] != "app" {
				t.Fatalf("labels %v: no record with RecordOwner", got.Labels)
			}
			write()
			got := read()
			kept := got.Labels[ownership.OwnerNameLabel] == "app" && got.Labels[ownership.OwnerKindLabel] == "Widget.test.steady.dev"
			if fn.name == "Apply" == kept || !metav1.IsControlledBy(got, o) {
				t.Errorf("%s without RecordOwner after it: owners %v, labels %v; want the record kept by CreateOrUpdate, removed by Apply", fn.name, got.OwnerReferences, got.Labels)
			}
		})
	}
}
