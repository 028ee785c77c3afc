package reconcile

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/object"
)

// checkInput refuses, before any write, what this change adds that the API
// server would refuse in one write after another was made: a finalizer name
// that is no qualified name (an invalid-name error), and a condition added
// or changed that [conditions.Validate] refuses ([*conditions.FieldError]
// naming status.conditions[i] and its field). Entries that were there
// before are not judged: they are not this change's.
func (p *Patcher) checkInput(obj client.Object, lists [][]string) error {
	for _, f := range obj.GetFinalizers() {
		if slices.Contains(p.before.GetFinalizers(), f) {
			continue
		}
		if err := object.ValidateFinalizerName(obj, f); err != nil {
			var ne *object.FinalizerNameError
			if errors.As(err, &ne) {
				ne.Object = p.describe()
			}
			return err
		}
	}
	bad := func(path string, i int, err error) error {
		var fe *conditions.FieldError
		if errors.As(err, &fe) {
			fe.Object, fe.Field = p.describe(), fmt.Sprintf("%s[%d].%s", path, i, fe.Field)
		}
		return err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		b, _ := p.before.(*unstructured.Unstructured)
		for i := -1; i < len(lists); i++ {
			path := statusConditions
			if i >= 0 {
				path = lists[i]
			}
			after, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
			var prev any
			if b != nil {
				prev, _, _ = unstructured.NestedFieldNoCopy(b.Object, path...)
			}
			al, _ := after.([]any)
			pl, _ := prev.([]any)
			for j, e := range al {
				c, ok := mapCondition(e)
				if !ok || slices.ContainsFunc(pl, func(pe any) bool {
					pc, ok := mapCondition(pe)
					return ok && sameCondition(pc, c)
				}) {
					continue
				}
				if err := conditions.Validate(c); err != nil {
					return bad(strings.Join(path, "."), j, err)
				}
			}
		}
		return nil
	}
	after, ok := conditionsOf(obj)
	before, bok := conditionsOf(p.before)
	if !ok || !bok {
		return nil
	}
	for i, c := range after {
		if prev := meta.FindStatusCondition(before, c.Type); prev != nil && sameCondition(*prev, c) {
			continue
		}
		if err := conditions.Validate(c); err != nil {
			return bad("status.conditions", i, err)
		}
	}
	return nil
}

var statusConditions = []string{"status", "conditions"}

// mapCondition reads the fields of a condition of any shape that
// [conditions.Validate] judges.
func mapCondition(e any) (metav1.Condition, bool) {
	m, ok := e.(map[string]any)
	if !ok {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: mapString(m, "type"), Status: metav1.ConditionStatus(mapString(m, "status")),
		Reason: mapString(m, "reason"), Message: mapString(m, "message")}, true
}

// mapString is m[k] as a string; a value of another type is printed, so
// that Validate refuses it.
func mapString(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

// conditionsOf returns the status conditions of a typed object: through
// GetConditions, or its status.conditions field of type
// []metav1.Condition (the kubebuilder shape, no methods); false where it
// has neither.
func conditionsOf(obj client.Object) ([]metav1.Condition, bool) {
	if g, ok := obj.(conditions.Getter); ok {
		return g.GetConditions(), true
	}
	if l := object.ConditionList(obj, false); l != nil {
		return *l, true
	}
	return nil, object.HasConditionList(reflect.TypeOf(obj)) // a nil status pointer: none
}

// setter returns obj as a [conditions.Setter]: obj itself where it has
// GetConditions and SetConditions, else one over its status.conditions
// field ([checkOptions] made sure of one).
func setter(obj client.Object) conditions.Setter {
	if s, ok := obj.(conditions.Setter); ok {
		return s
	}
	return conditions.On(obj, object.ConditionList(obj, true))
}

// checkOptions refuses the options of [For] that cannot work on obj's Go
// type, with an *optionError. An unstructured object's observedGeneration
// is not judged (its schema is not known here); the Ready summary is
// refused on it, as on any type without a Setter or the field ([setter]
// has no list to set).
func checkOptions(obj client.Object, cfg ForOptions) error {
	if _, ok := obj.(conditions.Setter); cfg.ReadySummary && !ok && !object.HasConditionList(reflect.TypeOf(obj)) {
		const methods = "GetConditions() []metav1.Condition and SetConditions([]metav1.Condition) methods"
		missing := methods + ", or a status.conditions field of type []metav1.Condition"
		if _, isU := obj.(*unstructured.Unstructured); isU {
			missing = methods + " (on an unstructured object, set Ready in the body: conditions.ForUnstructured, conditions.SetSummary)"
		}
		return &optionError{Type: fmt.Sprintf("%T", obj), Option: "WithReadySummary", Missing: missing}
	}
	po := PatchOptions{}
	for _, o := range cfg.PatchOptions {
		o.ApplyToPatch(&po)
	}
	return checkPatchOptions(obj, po)
}

// checkPatchOptions refuses the Patch options that cannot work on obj's Go
// type: [WithObservedGeneration] on a type whose status has no int64
// field observedGeneration (the API server would prune what Patch writes,
// and every reconcile would write it again).
func checkPatchOptions(obj client.Object, o PatchOptions) error {
	if !o.ObservedGeneration {
		return nil
	}
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return nil
	}
	if ft, ok := object.StatusFieldType(reflect.TypeOf(obj), "observedGeneration"); !ok || ft.Kind() != reflect.Int64 {
		return &optionError{Type: fmt.Sprintf("%T", obj), Option: "WithObservedGeneration",
			Missing: "status.observedGeneration field of type int64"}
	}
	return nil
}
