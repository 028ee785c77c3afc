package applyset

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// parentState is what the parent's annotations list.
type parentState struct {
	gks        sets.Set[schema.GroupKind]
	namespaces sets.Set[string]
}

// readParent reads the parent and checks that this set may use it.
func (s *Set) readParent(ctx context.Context) (parentState, error) {
	st := parentState{gks: sets.New[schema.GroupKind](), namespaces: sets.New[string]()}
	live := object.EmptyLike(s.parent)
	err := s.c.Get(ctx, client.ObjectKeyFromObject(s.parent), live)
	s.live = nil
	secretOrConfigMap := false
	switch s.parent.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Secret"}, schema.GroupKind{Kind: "ConfigMap"}:
		secretOrConfigMap = true
	}
	if apierrors.IsNotFound(err) {
		if secretOrConfigMap {
			return st, nil
		}
		return st, fmt.Errorf("applyset: parent %s does not exist; only a Secret or ConfigMap parent is created", idOf(s.parent))
	}
	if err != nil {
		return st, fmt.Errorf("applyset: reading parent %s: %w", idOf(s.parent), err)
	}
	if err := s.checkParentType(ctx); err != nil {
		return st, err
	}
	ann := live.GetAnnotations()
	t, hasTooling := ann[toolingAnnotation]
	id, hasID := live.GetLabels()[IDLabel]
	switch {
	case hasTooling && toolingName(t) != s.toolName() && !s.o.Adopt:
		return st, &ToolingError{Parent: idOf(s.parent).String(), Tooling: t, Want: s.o.Tooling}
	case secretOrConfigMap && !hasTooling && !hasID && !s.o.Adopt:
		// An unrelated Secret or ConfigMap: kubectl refuses it too.
		return st, &ToolingError{Parent: idOf(s.parent).String(), Want: s.o.Tooling}
	case hasID && id != s.ID():
		return st, fmt.Errorf("applyset: parent %s has %s=%s, want %s", idOf(s.parent), IDLabel, id, s.ID())
	}
	s.live = live
	for _, g := range splitList(ann[groupKindsAnnotation]) {
		st.gks.Insert(schema.ParseGroupKind(g))
	}
	st.namespaces.Insert(splitList(ann[namespacesAnnotation])...)
	return st, nil
}

// checkParentType allows Secrets, ConfigMaps and custom resources whose CRD
// is labelled as a parent type.
func (s *Set) checkParentType(ctx context.Context) error {
	gk := s.parent.GroupVersionKind().GroupKind()
	if gk == (schema.GroupKind{Kind: "Secret"}) || gk == (schema.GroupKind{Kind: "ConfigMap"}) {
		return nil
	}
	mapping, err := s.c.RESTMapper().RESTMapping(gk)
	if err != nil {
		return fmt.Errorf("applyset: parent %s: %w", idOf(s.parent), err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := s.c.Get(ctx, client.ObjectKey{Name: mapping.Resource.Resource + "." + gk.Group}, crd); err != nil {
		return fmt.Errorf("applyset: parent %s must be a Secret, a ConfigMap or a custom resource: %w", idOf(s.parent), err)
	}
	if crd.GetLabels()[parentTypeLabel] != "true" {
		return fmt.Errorf("applyset: parent %s: its CRD %s lacks the label %s=true", idOf(s.parent), crd.GetName(), parentTypeLabel)
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// writeParent sets the parent's label and annotations, unless it already
// has them. An absent parent is created (failing if it appeared since it
// was read); an existing one is server-side applied with the
// resourceVersion that was read, so that a parent changed since (or read
// stale) fails with a Conflict instead of losing group-kinds.
func (s *Set) writeParent(ctx context.Context, gks sets.Set[schema.GroupKind], namespaces sets.Set[string]) (wrote bool, err error) {
	ns := sets.List(namespaces.Clone().Delete(s.parent.GetNamespace()))
	ann := map[string]string{
		toolingAnnotation:    s.o.Tooling,
		groupKindsAnnotation: strings.Join(kindStrings(gks), ","),
		namespacesAnnotation: strings.Join(ns, ","),
	}
	if s.live != nil && s.live.GetLabels()[IDLabel] == s.ID() && subsetOf(ann, s.live.GetAnnotations()) {
		return false, nil // already says so: no write
	}
	owner := client.FieldOwner(s.toolName() + defaultFieldManagerAffix)
	p := object.EmptyLike(s.parent)
	p.SetLabels(map[string]string{IDLabel: s.ID()})
	p.SetAnnotations(ann)
	if s.live == nil {
		err = s.c.Create(ctx, p, owner)
	} else {
		p.SetResourceVersion(s.live.GetResourceVersion())
		err = s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(p), owner, client.ForceOwnership)
	}
	if err != nil {
		return false, fmt.Errorf("applyset: writing parent %s: %w", idOf(s.parent), err)
	}
	s.live = p
	return true, nil
}

func subsetOf(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}
