package conditions

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// unstructuredSetter is a Setter over an Unstructured's status.conditions.
// It embeds the object, so marks see its generation.
type unstructuredSetter struct {
	*unstructured.Unstructured
	conditions []metav1.Condition
}

var _ Setter = &unstructuredSetter{}

// ForUnstructured returns a Setter over u's status.conditions: marks on it
// change u. It returns a [*FieldError] when status or status.conditions is
// not of the shape of a []metav1.Condition (a list of objects, each with a
// type and a status of True, False or Unknown), and leaves u as it was.
func ForUnstructured(u *unstructured.Unstructured) (Setter, error) {
	conds, err := unstructuredConditions(u)
	if err != nil {
		return nil, err
	}
	return &unstructuredSetter{Unstructured: u, conditions: conds}, nil
}

// GetConditions implements Getter.
func (s *unstructuredSetter) GetConditions() []metav1.Condition { return s.conditions }

// SetConditions implements Setter, writing status.conditions of the object.
func (s *unstructuredSetter) SetConditions(conds []metav1.Condition) {
	s.conditions = conds
	list := make([]any, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			panic(fmt.Sprintf("conditions: converting a metav1.Condition: %v", err)) // cannot happen for this type
		}
		list[i] = m
	}
	status, ok := s.Object["status"].(map[string]any)
	if !ok {
		status = map[string]any{}
		s.Object["status"] = status
	}
	if len(list) == 0 {
		delete(status, "conditions")
		return
	}
	status["conditions"] = list
}

func unstructuredConditions(u *unstructured.Unstructured) ([]metav1.Condition, error) {
	fail := func(format string, args ...any) error {
		return &FieldError{Object: describe(u), Field: "status.conditions", Err: fmt.Errorf(format, args...)}
	}
	rawStatus := u.Object["status"]
	if rawStatus == nil { // absent or null
		return nil, nil
	}
	status, ok := rawStatus.(map[string]any)
	if !ok {
		return nil, &FieldError{Object: describe(u), Field: "status", Err: fmt.Errorf("is a %T, want an object", rawStatus)}
	}
	raw := status["conditions"]
	if raw == nil { // absent or null
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fail("is a %T, want a list of conditions", raw)
	}
	conds := make([]metav1.Condition, len(list))
	seen := map[string]bool{}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fail("item %d is a %T, want an object", i, item)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, &conds[i], true); err != nil {
			return nil, fail("item %d: %w", i, err)
		}
		c := conds[i]
		switch {
		case c.Type == "":
			return nil, fail("item %d has no type", i)
		case c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse && c.Status != metav1.ConditionUnknown:
			return nil, fail("item %d (%s) has status %q, want True, False or Unknown", i, c.Type, c.Status)
		case seen[c.Type]:
			return nil, fail("item %d repeats type %s", i, c.Type)
		}
		seen[c.Type] = true
	}
	return conds, nil
}

// describe names an object as "Kind namespace/name".
func describe(u *unstructured.Unstructured) string {
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	if k := u.GetKind(); k != "" {
		return k + " " + name
	}
	return name
}
