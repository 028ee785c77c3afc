package applyset

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/cli-utils/pkg/object"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Options configures a [Set].
type Options struct {
	// FieldManager applies the members; "steady" when empty.
	FieldManager string
	// Tooling is the parent's tooling annotation, "name/version";
	// DefaultTooling when empty. The parent is applied by the field manager
	// "<name>-applyset", as kubectl does.
	Tooling string
	// Force takes over fields of members owned by other field managers.
	Force bool
	// Adopt takes over a parent whose tooling names another tool.
	Adopt bool
	// EstablishTimeout bounds the wait for a CRD of the set to be
	// established; 30s when zero.
	EstablishTimeout time.Duration
	// CurrentTimeout, when set, makes Apply wait, before it prunes, until
	// kstatus finds every member Current.
	CurrentTimeout time.Duration
}

// Option changes [Options].
type Option func(*Options)

// FieldManager sets the field manager of the members.
func FieldManager(name string) Option { return func(o *Options) { o.FieldManager = name } }

// Tooling sets the parent's tooling annotation ("name/version"). Only tests
// of compatibility should name another tool.
func Tooling(t string) Option { return func(o *Options) { o.Tooling = t } }

// Force takes over conflicting fields of members from other managers.
func Force() Option { return func(o *Options) { o.Force = true } }

// Adopt takes over a parent whose tooling annotation names another tool.
func Adopt() Option { return func(o *Options) { o.Adopt = true } }

// WaitCurrent makes Apply wait up to timeout, before it prunes, until
// kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) computes every member Current;
// otherwise it returns a [*NotCurrentError] and prunes nothing, so the old
// objects stay until the new ones are ready.
func WaitCurrent(timeout time.Duration) Option {
	return func(o *Options) { o.CurrentTimeout = timeout }
}

// Set is an ApplySet: a parent object and the members labelled part of it.
type Set struct {
	c         client.Client
	parent    *unstructured.Unstructured
	namespace bool // the parent is namespaced
	o         Options
	live      *unstructured.Unstructured // the parent as last read or written; nil if absent
}

// New returns the Set of parent, which need not exist yet when it is a
// Secret or a ConfigMap. c should be a direct client, not a cache.
func New(c client.Client, parent client.Object, opts ...Option) (*Set, error) {
	o := Options{FieldManager: "steady", Tooling: DefaultTooling, EstablishTimeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if !strings.Contains(o.Tooling, "/") {
		return nil, fmt.Errorf("applyset: tooling %q is not name/version", o.Tooling)
	}
	gvk, err := apiutil.GVKForObject(parent, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("applyset: parent: %w", err)
	}
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(gvk)
	p.SetNamespace(parent.GetNamespace())
	p.SetName(parent.GetName())
	namespaced, err := c.IsObjectNamespaced(p)
	if err != nil {
		return nil, fmt.Errorf("applyset: parent %s: %w", describe(p), err)
	}
	if namespaced && p.GetNamespace() == "" {
		return nil, fmt.Errorf("applyset: parent %s is namespaced but has no namespace", describe(p))
	}
	return &Set{c: c, parent: p, namespace: namespaced, o: o}, nil
}

// ID is the set's applyset.kubernetes.io/id, as kubectl computes it.
func (s *Set) ID() string {
	return ID(s.parent.GroupVersionKind().GroupKind(), s.parent.GetNamespace(), s.parent.GetName())
}

// ID computes the id of the set whose parent is of kind gk, in namespace
// (empty for a cluster-scoped parent) and named name:
// applyset-<base64url-nopad(sha256("<name>.<namespace>.<kind>.<group>"))>-v1.
func ID(gk schema.GroupKind, namespace, name string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, gk.Kind, gk.Group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

func (s *Set) toolName() string { return toolingName(s.o.Tooling) }

// toolingName is what kubectl compares: everything before the last slash.
func toolingName(t string) string {
	if i := strings.LastIndex(t, "/"); i >= 0 {
		return t[:i]
	}
	return t
}

// key identifies a member.
type key struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

// member is one object to apply.
type member struct {
	obj     *unstructured.Unstructured
	mapping *meta.RESTMapping // nil until its CRD is established
	live    *unstructured.Unstructured
	changed bool
}

// rank orders kinds for apply; prune deletes in reverse.
func rank(gk schema.GroupKind) int {
	switch gk {
	case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
		return 0
	case schema.GroupKind{Kind: "Namespace"}:
		return 1
	}
	return 2
}

// Apply applies objs as the whole content of the set and prunes the members
// no longer in it. See the package documentation for the order of the steps
// and the safety rules. The Result says what happened to each object; the
// error joins what failed.
func (s *Set) Apply(ctx context.Context, objs []*unstructured.Unstructured) (*Result, error) {
	res := &Result{}
	current, err := s.readParent(ctx)
	if err != nil {
		return res, err
	}
	members, crdKinds, err := s.prepare(objs)
	if err != nil {
		return res, err
	}
	// Validate everything that can be validated before writing anything.
	if err := s.dryRun(ctx, members, func(m *member) bool { return m.mapping != nil }); err != nil {
		return res, err
	}
	wantGKs, wantNS := sets.New[schema.GroupKind](), sets.New[string]()
	for _, m := range members {
		wantGKs.Insert(m.obj.GroupVersionKind().GroupKind())
		if m.obj.GetNamespace() != "" {
			wantNS.Insert(m.obj.GetNamespace())
		}
	}
	// Grow the parent first, so that a crash leaves no member unlisted.
	if err := s.writeParent(ctx, current.gks.Union(wantGKs), current.namespaces.Union(wantNS)); err != nil {
		return res, err
	}
	// CRDs, then what they define, validated once they are established.
	for _, m := range members {
		if rank(m.obj.GroupVersionKind().GroupKind()) == 0 {
			s.applyOne(ctx, m, res)
		}
	}
	if len(crdKinds) > 0 {
		if err := s.waitEstablished(ctx, members); err != nil {
			return res, err
		}
		var late []*member
		for _, m := range members {
			if m.mapping == nil {
				if m.mapping, err = s.c.RESTMapper().RESTMapping(m.obj.GroupVersionKind().GroupKind(), m.obj.GroupVersionKind().Version); err != nil {
					return res, &ValidationError{Errors: []error{fmt.Errorf("%s: %w", describe(m.obj), err)}}
				}
				late = append(late, m)
			}
		}
		if err := s.dryRun(ctx, late, func(*member) bool { return true }); err != nil {
			return res, err
		}
	}
	for _, r := range []int{1, 2} {
		for _, m := range members {
			if rank(m.obj.GroupVersionKind().GroupKind()) == r {
				s.applyOne(ctx, m, res)
			}
		}
	}
	if n := res.Count(Failed); n > 0 {
		return res, errors.Join(failures(res)...)
	}
	if s.o.CurrentTimeout > 0 {
		if err := s.waitCurrent(ctx, members); err != nil {
			return res, err
		}
	}
	pruneOK := s.prune(ctx, members, current.gks.Union(wantGKs), current.namespaces.Union(wantNS), res)
	if !pruneOK {
		return res, errors.Join(failures(res)...)
	}
	// Shrink the parent to what the set now holds.
	if err := s.writeParent(ctx, wantGKs, wantNS); err != nil {
		return res, err
	}
	return res, nil
}

func failures(res *Result) []error {
	var errs []error
	for _, o := range res.Objects {
		if o.Action == Failed {
			errs = append(errs, fmt.Errorf("%s: %w", o.Object, o.Err))
		}
	}
	return errs
}

// parentState is what the parent's annotations list.
type parentState struct {
	gks        sets.Set[schema.GroupKind]
	namespaces sets.Set[string]
}

func (s *Set) readParent(ctx context.Context) (parentState, error) {
	st := parentState{gks: sets.New[schema.GroupKind](), namespaces: sets.New[string]()}
	live := s.parent.DeepCopy()
	err := s.c.Get(ctx, client.ObjectKeyFromObject(s.parent), live)
	s.live = nil
	if apierrors.IsNotFound(err) {
		switch s.parent.GroupVersionKind().GroupKind() {
		case schema.GroupKind{Kind: "Secret"}, schema.GroupKind{Kind: "ConfigMap"}:
			return st, nil
		}
		return st, fmt.Errorf("applyset: parent %s does not exist; only a Secret or ConfigMap parent is created", describe(s.parent))
	}
	if err != nil {
		return st, fmt.Errorf("applyset: reading parent %s: %w", describe(s.parent), err)
	}
	if err := s.checkParentType(ctx); err != nil {
		return st, err
	}
	s.live = live
	ann := live.GetAnnotations()
	if t, ok := ann[ToolingAnnotation]; ok && toolingName(t) != s.toolName() && !s.o.Adopt {
		return st, &ToolingError{Parent: describe(s.parent), Tooling: t, Want: s.o.Tooling}
	}
	if id, ok := live.GetLabels()[IDLabel]; ok && id != s.ID() {
		return st, fmt.Errorf("applyset: parent %s has %s=%s, want %s", describe(s.parent), IDLabel, id, s.ID())
	}
	for _, g := range splitList(ann[GroupKindsAnnotation]) {
		st.gks.Insert(schema.ParseGroupKind(g))
	}
	st.namespaces.Insert(splitList(ann[NamespacesAnnotation])...)
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
		return fmt.Errorf("applyset: parent %s: %w", describe(s.parent), err)
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := s.c.Get(ctx, client.ObjectKey{Name: mapping.Resource.Resource + "." + gk.Group}, crd); err != nil {
		return fmt.Errorf("applyset: parent %s must be a Secret, a ConfigMap or a custom resource: %w", describe(s.parent), err)
	}
	if crd.GetLabels()[ParentTypeLabel] != "true" {
		return fmt.Errorf("applyset: parent %s: its CRD %s lacks the label %s=true", describe(s.parent), crd.GetName(), ParentTypeLabel)
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// writeParent server-side applies the parent's label and annotations.
func (s *Set) writeParent(ctx context.Context, gks sets.Set[schema.GroupKind], namespaces sets.Set[string]) error {
	var kinds []string
	for gk := range gks {
		kinds = append(kinds, gk.String())
	}
	sort.Strings(kinds)
	ns := sets.List(namespaces.Clone().Delete(s.parent.GetNamespace()))
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(s.parent.GroupVersionKind())
	p.SetNamespace(s.parent.GetNamespace())
	p.SetName(s.parent.GetName())
	p.SetLabels(map[string]string{IDLabel: s.ID()})
	p.SetAnnotations(map[string]string{
		ToolingAnnotation:    s.o.Tooling,
		GroupKindsAnnotation: strings.Join(kinds, ","),
		NamespacesAnnotation: strings.Join(ns, ","),
	})
	if s.live != nil && s.live.GetLabels()[IDLabel] == s.ID() && subsetOf(p.GetAnnotations(), s.live.GetAnnotations()) {
		return nil // already says so: no write
	}
	if err := s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(p), client.FieldOwner(s.toolName()+defaultFieldManagerAffix), client.ForceOwnership); err != nil {
		return fmt.Errorf("applyset: writing parent %s: %w", describe(s.parent), err)
	}
	s.live = p
	return nil
}

func subsetOf(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// prepare checks the input, defaults namespaces and labels the members.
func (s *Set) prepare(objs []*unstructured.Unstructured) ([]*member, sets.Set[schema.GroupKind], error) {
	crdKinds := sets.New[schema.GroupKind]()
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			crdKinds.Insert(schema.GroupKind{Group: g, Kind: k})
		}
	}
	var members []*member
	var errs []error
	seen := map[key]bool{}
	for i, in := range objs {
		o := in.DeepCopy()
		gvk := o.GroupVersionKind()
		m := &member{obj: o}
		mapping, err := s.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			m.mapping = mapping
		case crdKinds.Has(gvk.GroupKind()):
			// defined by a CRD of this set: mapped once it is established
		default:
			errs = append(errs, fmt.Errorf("object %d, %s: unknown kind: %w", i, describe(o), err))
			continue
		}
		namespaced := m.mapping == nil || m.mapping.Scope.Name() == meta.RESTScopeNameNamespace
		if m.mapping == nil {
			namespaced = crdNamespaced(objs, gvk.GroupKind())
		}
		switch {
		case namespaced && o.GetNamespace() == "" && s.namespace:
			o.SetNamespace(s.parent.GetNamespace())
		case namespaced && o.GetNamespace() == "":
			errs = append(errs, fmt.Errorf("object %d, %s: field metadata.namespace: a namespaced member of a cluster-scoped parent needs a namespace", i, describe(o)))
			continue
		case !namespaced && o.GetNamespace() != "":
			errs = append(errs, fmt.Errorf("object %d, %s: field metadata.namespace: set on a cluster-scoped kind", i, describe(o)))
			continue
		}
		k := key{gvk.GroupKind(), o.GetNamespace(), o.GetName()}
		if seen[k] {
			errs = append(errs, fmt.Errorf("object %d, %s: appears twice", i, describe(o)))
			continue
		}
		seen[k] = true
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[PartOfLabel] = s.ID()
		o.SetLabels(labels)
		members = append(members, m)
	}
	if len(errs) > 0 {
		return nil, nil, &ValidationError{Errors: errs}
	}
	return members, crdKinds, nil
}

func crdNamespaced(objs []*unstructured.Unstructured, gk schema.GroupKind) bool {
	for _, o := range objs {
		g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		k, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		if g == gk.Group && k == gk.Kind {
			scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
			return scope != "Cluster"
		}
	}
	return true
}

func (s *Set) applyOptions(dryRun bool) []client.ApplyOption {
	opts := []client.ApplyOption{client.FieldOwner(s.o.FieldManager)}
	if s.o.Force {
		opts = append(opts, client.ForceOwnership)
	}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	return opts
}

// dryRun applies the selected members with dryRun=All, collecting every
// refusal, and marks which of them would change.
func (s *Set) dryRun(ctx context.Context, members []*member, sel func(*member) bool) error {
	var errs []error
	for _, m := range members {
		if !sel(m) {
			continue
		}
		live := m.obj.DeepCopy()
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(m.obj), live); err == nil {
			m.live = live
		} else if !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s: %w", describe(m.obj), err))
			continue
		}
		out := m.obj.DeepCopy()
		if err := s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), s.applyOptions(true)...); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", describe(m.obj), err))
			continue
		}
		m.changed = m.live == nil || !sameContent(m.live, out)
	}
	if len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}

// sameContent compares what an apply would leave with what is there,
// ignoring the fields that move on every write.
func sameContent(live, next *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		for _, f := range []string{"resourceVersion", "generation", "managedFields"} {
			unstructured.RemoveNestedField(c, "metadata", f)
		}
		return c
	}
	return equality.Semantic.DeepEqual(strip(live), strip(next)) && sameManagers(live, next)
}

// sameManagers compares the managed fields but for their timestamps.
func sameManagers(a, b *unstructured.Unstructured) bool {
	fa, fb := a.GetManagedFields(), b.GetManagedFields()
	return slices.EqualFunc(fa, fb, func(x, y metav1.ManagedFieldsEntry) bool {
		x.Time, y.Time = nil, nil
		return equality.Semantic.DeepEqual(x, y)
	})
}

func (s *Set) applyOne(ctx context.Context, m *member, res *Result) {
	r := ObjectResult{ID: object.UnstructuredToObjMetadata(m.obj), Object: describe(m.obj), Action: Applied}
	if !m.changed && m.live != nil {
		r.Action = Unchanged
	} else if err := s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(m.obj.DeepCopy()), s.applyOptions(false)...); err != nil {
		r.Action, r.Err = Failed, err
	}
	res.Objects = append(res.Objects, r)
}

// waitCurrent polls the members until kstatus finds them all Current.
func (s *Set) waitCurrent(ctx context.Context, members []*member) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.CurrentTimeout)
	defer cancel()
	for {
		notCurrent := map[string]string{}
		for _, m := range members {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(m.obj.GroupVersionKind())
			if err := s.c.Get(ctx, client.ObjectKeyFromObject(m.obj), live); err != nil {
				notCurrent[describe(m.obj)] = err.Error()
				continue
			}
			st, err := status.Compute(live)
			if err != nil {
				notCurrent[describe(m.obj)] = err.Error()
			} else if st.Status != status.CurrentStatus {
				notCurrent[describe(m.obj)] = st.Status.String() + ": " + st.Message
			}
		}
		if len(notCurrent) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return &NotCurrentError{Objects: notCurrent}
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitEstablished waits until every CRD of the set is established.
func (s *Set) waitEstablished(ctx context.Context, members []*member) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.EstablishTimeout)
	defer cancel()
	for _, m := range members {
		if rank(m.obj.GroupVersionKind().GroupKind()) != 0 {
			continue
		}
		for {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			if err := s.c.Get(ctx, client.ObjectKey{Name: m.obj.GetName()}, crd); err == nil && established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("applyset: CRD %s not established: %w", m.obj.GetName(), ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == string(apiextensionsv1.Established) && m["status"] == string(apiextensionsv1.ConditionTrue) {
			return true
		}
	}
	return false
}

// prune deletes the members that are no longer wanted and reports whether
// everything that had to go went.
func (s *Set) prune(ctx context.Context, members []*member, gks sets.Set[schema.GroupKind], namespaces sets.Set[string], res *Result) bool {
	wanted := map[key]bool{}
	for _, m := range members {
		wanted[key{m.obj.GroupVersionKind().GroupKind(), m.obj.GetNamespace(), m.obj.GetName()}] = true
	}
	if s.namespace {
		namespaces = namespaces.Clone().Insert(s.parent.GetNamespace())
	}
	var doomed []*metav1.PartialObjectMetadata
	ok := true
	var kinds []string
	for gk := range gks {
		kinds = append(kinds, gk.String())
	}
	sort.Strings(kinds)
	for _, g := range kinds {
		gk := schema.ParseGroupKind(g)
		mapping, err := s.c.RESTMapper().RESTMapping(gk)
		if err != nil {
			res.Objects = append(res.Objects, notServed(gk, err))
			continue
		}
		scopes := []string{""}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			scopes = sets.List(namespaces)
		}
		for _, ns := range scopes {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(mapping.GroupVersionKind.Kind + "List"))
			opts := []client.ListOption{client.MatchingLabels{PartOfLabel: s.ID()}}
			if ns != "" {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := s.c.List(ctx, list, opts...); apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				// The mapping was cached but the CRD is gone since.
				res.Objects = append(res.Objects, notServed(gk, err))
				break
			} else if err != nil {
				res.Objects = append(res.Objects, ObjectResult{Object: gk.String() + " in " + ns, Action: Failed, Err: err})
				ok = false
				continue
			}
			for i := range list.Items {
				item := &list.Items[i]
				item.SetGroupVersionKind(mapping.GroupVersionKind)
				if item.GetLabels()[PartOfLabel] != s.ID() || wanted[key{gk, item.GetNamespace(), item.GetName()}] {
					continue
				}
				doomed = append(doomed, item)
			}
		}
	}
	sort.SliceStable(doomed, func(i, j int) bool {
		return rank(doomed[i].GroupVersionKind().GroupKind()) > rank(doomed[j].GroupVersionKind().GroupKind())
	})
	for _, d := range doomed {
		name := d.GroupVersionKind().GroupKind().String() + " " + strings.TrimPrefix(d.GetNamespace()+"/"+d.GetName(), "/")
		if keep(d) {
			before := d.DeepCopy()
			labels := d.GetLabels()
			delete(labels, PartOfLabel)
			d.SetLabels(labels)
			if err := s.c.Patch(ctx, d, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				res.Objects = append(res.Objects, ObjectResult{Object: name, Action: Failed, Err: err})
				ok = false
				continue
			}
			res.Objects = append(res.Objects, ObjectResult{ID: partialID(d), Object: name, Action: Detached})
			continue
		}
		// Delete only the object we listed: a recreated one of the same name
		// has another UID and is left alone.
		err := s.c.Delete(ctx, d, client.Preconditions{UID: ptrUID(d)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			res.Objects = append(res.Objects, ObjectResult{Object: name, Action: Failed, Err: err})
			ok = false
			continue
		}
		res.Objects = append(res.Objects, ObjectResult{ID: partialID(d), Object: name, Action: Pruned})
	}
	return ok
}

// notServed reports a group-kind of the parent's annotation that the API
// server no longer serves: with its CRD gone, it has no members to prune.
func notServed(gk schema.GroupKind, err error) ObjectResult {
	return ObjectResult{Object: gk.String(), Action: Skipped,
		Err: fmt.Errorf("kind no longer served (its CRD is gone?), nothing to prune: %w", err)}
}

func partialID(d *metav1.PartialObjectMetadata) object.ObjMetadata {
	return object.ObjMetadata{GroupKind: d.GroupVersionKind().GroupKind(), Namespace: d.GetNamespace(), Name: d.GetName()}
}

func keep(o client.Object) bool {
	a := o.GetAnnotations()
	return a[OnRemoveAnnotation] == "keep" || a[LifecycleDeletion] == "detach"
}

func ptrUID(o client.Object) *types.UID {
	uid := o.GetUID()
	return &uid
}
