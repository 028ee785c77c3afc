package applyset

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/steadyk8s/steady/internal/object"
)

// member is one object to apply.
type member struct {
	obj     *unstructured.Unstructured // a copy of the input, namespaced and labelled
	index   int                        // its index in the input
	id      ObjectID
	mapping *meta.RESTMapping          // nil until its CRD is established
	live    *unstructured.Unstructured // as listed with the part-of label; nil if not listed
	other   string                     // the ID of another set it is listed a member of ("": none)
	checked bool                       // validated (by the fast path or a dry run)
	changed bool                       // an apply would change it
}

// prepare checks the input without a request (but REST mappings), defaults
// namespaces and labels the members part of the set. It returns the members
// and the group-kinds that CRDs of the set define.
func (s *Set) prepare(objs []*unstructured.Unstructured) ([]*member, sets.Set[schema.GroupKind], error) {
	crdKinds := sets.New[schema.GroupKind]()
	crdScope := map[schema.GroupKind]string{}
	for _, o := range objs {
		if o != nil && o.GroupVersionKind().GroupKind() == crdGK {
			gk := crdKind(o)
			scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
			crdKinds.Insert(gk)
			crdScope[gk] = scope
		}
	}
	var members []*member
	var errs, failures []error
	seen := map[ObjectID]int{}
	refuse := func(i int, id ObjectID, field string, err error) {
		errs = append(errs, &ObjectError{Index: i, ID: id, Field: field, Err: err})
	}
	for i, in := range objs {
		if in == nil {
			refuse(i, ObjectID{}, "", errors.New("nil"))
			continue
		}
		if pe := checkObject(in.Object); pe != nil {
			refuse(i, idOf(in), pe.Path, pe.Err)
			continue
		}
		// A copy of in in the JSON types that the API machinery takes
		// (int64, float64, []any), whose values an operator may have
		// written in Go (int, int32, uint, float32, []string in a map
		// literal): unstructured's DeepCopy panics on the others. A value
		// of no JSON type is refused, by its field path.
		content, err := object.ToJSONTypes(in.Object)
		if pe := (*object.PathError)(nil); errors.As(err, &pe) {
			refuse(i, idOf(in), pe.Path, pe.Err)
			continue
		}
		o := &unstructured.Unstructured{Object: content}
		gvk := o.GroupVersionKind()
		m := &member{obj: o, index: i}
		mapping, err := s.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			m.mapping = mapping
		case crdKinds.Has(gvk.GroupKind()):
			// defined by a CRD of this set: mapped once it is established
		case !meta.IsNoMatchError(err) || discoveryFailed(err):
			// Discovery failed (a 503, a timeout): not the input's fault.
			failures = append(failures, fmt.Errorf("object %d, %s: mapping its kind failed: %w", i, idOf(o), err))
			continue
		default:
			refuse(i, idOf(o), s.unknownField(gvk.GroupKind()), fmt.Errorf("unknown kind: %w", err))
			continue
		}
		namespaced := crdScope[gvk.GroupKind()] != "Cluster"
		if m.mapping != nil {
			namespaced = m.mapping.Scope.Name() == meta.RESTScopeNameNamespace
		}
		switch {
		case namespaced && o.GetNamespace() == "" && s.namespaced:
			o.SetNamespace(s.parent.GetNamespace())
		case namespaced && o.GetNamespace() == "":
			refuse(i, idOf(o), "metadata.namespace", errors.New("a namespaced member of a cluster-scoped parent needs a namespace"))
			continue
		case !namespaced && o.GetNamespace() != "":
			refuse(i, idOf(o), "metadata.namespace", errors.New("set on a cluster-scoped kind"))
			continue
		}
		m.id = idOf(o)
		if first, dup := seen[m.id]; dup {
			refuse(i, m.id, "", fmt.Errorf("appears twice (also object %d)", first))
			continue
		}
		seen[m.id] = i
		if m.id == idOf(s.parent) {
			refuse(i, m.id, "", errors.New("the parent of the set cannot be a member of it"))
			continue
		}
		labels := o.GetLabels() // checked: every value is a string
		if labels == nil {
			labels = map[string]string{}
		}
		labels[PartOfLabel] = s.ID()
		o.SetLabels(labels)
		members = append(members, m)
	}
	if len(failures) > 0 {
		return nil, nil, fmt.Errorf("applyset: nothing written, the kinds could not be mapped: %w", errors.Join(append(failures, errs...)...))
	}
	if len(errs) > 0 {
		return nil, nil, &ValidationError{Errors: errs}
	}
	return members, crdKinds, nil
}

// unknownField is the field that makes a kind unknown: apiVersion when
// another version of gk is served, kind otherwise.
func (s *Set) unknownField(gk schema.GroupKind) string {
	if _, err := s.c.RESTMapper().RESTMapping(gk); err == nil {
		return "apiVersion"
	}
	return "kind"
}
