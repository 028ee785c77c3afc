package applyset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// run is the state of one Apply.
type run struct {
	s       *Set
	res     *Result
	written []string // what this Apply wrote, in order
	// listed holds the members listed live per kind and namespace, for the
	// checks and for prune; a kind not served at the start is absent.
	listed map[listKey][]*unstructured.Unstructured
	// others holds, per kind and namespace listed, the objects labelled
	// part of another set: their names and that set's ID.
	others map[listKey]map[string]string
	// unlisted holds the lists that failed.
	unlisted sets.Set[listKey]
	// crdWritten holds the kinds defined by the CRDs this Apply wrote.
	crdWritten sets.Set[schema.GroupKind]
}

// Apply applies objs as the whole content of the set and prunes the members
// no longer in it: it grows the parent's group-kinds and namespaces, applies
// the CRDs (waiting until they are established), then the Namespaces, then
// the rest, by server-side apply, and prunes only when every write
// succeeded. A member the API server refuses at the apply is Failed; the
// other members of its step are still applied, the later steps are not. The
// guide, docs/applyset.md in the repository, has each step and the safety
// rules. The Result says what happened to each object; the error joins
// what failed. Calls on one Set run one at a time.
func (s *Set) Apply(ctx context.Context, objs []*unstructured.Unstructured) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &run{s: s, res: &Result{}, listed: map[listKey][]*unstructured.Unstructured{}, crdWritten: sets.New[schema.GroupKind](), unlisted: sets.New[listKey]()}
	return r.res, r.apply(ctx, objs)
}

func (r *run) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	s := r.s
	current, err := s.readParent(ctx)
	if err != nil {
		return err
	}
	members, crdKinds, err := s.prepare(objs)
	if err != nil {
		return err
	}
	wantGKs, wantNS := sets.New[schema.GroupKind](), sets.New[string]()
	for _, m := range members {
		wantGKs.Insert(m.id.GroupKind)
		if m.id.Namespace != "" {
			wantNS.Insert(m.id.Namespace)
		}
	}
	allGKs, allNS := current.gks.Union(wantGKs), current.namespaces.Union(wantNS)
	if s.namespaced {
		allNS.Insert(s.parent.GetNamespace())
	}
	// One LIST per served kind and namespace: the live members, for the
	// checks below and for prune.
	if err := r.list(ctx, allGKs, allNS); err != nil {
		return err
	}
	for _, m := range members {
		k := listKey{m.id.GroupKind, m.id.Namespace}
		for _, l := range r.listed[k] {
			if l.GetName() == m.id.Name {
				m.live = l
			}
		}
		m.other = r.others[k][m.id.Name]
	}

	// Validate before the first write all that can be: not the members whose
	// kind a CRD of the set defines, nor those in a Namespace the set
	// creates (it is not live yet).
	newNS := sets.New[string]()
	for _, m := range members {
		if m.id.GroupKind == namespaceGK && m.live == nil {
			newNS.Insert(m.id.Name)
		}
	}
	early := func(m *member) bool { return !newNS.Has(m.id.Namespace) && !crdKinds.Has(m.id.GroupKind) }
	if err := r.check(ctx, filter(members, early)); err != nil {
		return err
	}
	// CRDs of the set known unchanged (and served): what they define can be
	// checked now too.
	if !slices.ContainsFunc(members, func(m *member) bool { return m.id.GroupKind == crdGK && m.changed }) {
		if err := r.check(ctx, filter(members, func(m *member) bool { return m.mapping != nil && !newNS.Has(m.id.Namespace) })); err != nil {
			return err
		}
	}

	// Grow the parent first, so that a crash leaves no member unlisted.
	if err := r.writeParent(ctx, allGKs, allNS); err != nil {
		return err
	}
	// CRDs, established before what they define is checked; then Namespaces.
	crds := filter(members, func(m *member) bool { return m.id.GroupKind == crdGK })
	if r.applyAll(ctx, crds) {
		return errors.Join(r.failures()...)
	}
	if err := r.mapLate(ctx, members, crds); err != nil {
		return err
	}
	if r.applyAll(ctx, filter(members, func(m *member) bool { return m.id.GroupKind == namespaceGK })) {
		return errors.Join(r.failures()...)
	}
	if err := r.check(ctx, members); err != nil {
		return err
	}
	if r.applyAll(ctx, filter(members, func(m *member) bool { return rank(m.id.GroupKind) == 2 })) {
		return errors.Join(r.failures()...)
	}

	if s.o.CurrentTimeout > 0 {
		if err := r.waitCurrent(ctx, members); err != nil {
			return err
		}
	}
	keep, ok := r.prune(ctx, members, allGKs, allNS)
	if !ok {
		return errors.Join(r.failures()...)
	}
	// Shrink the parent to what the set now holds.
	return r.writeParent(ctx, wantGKs.Union(keep), wantNS)
}

func filter(members []*member, f func(*member) bool) []*member {
	var out []*member
	for _, m := range members {
		if f(m) {
			out = append(out, m)
		}
	}
	return out
}

// list lists the members of every served kind of gks in namespaces.
func (r *run) list(ctx context.Context, gks sets.Set[schema.GroupKind], namespaces sets.Set[string]) error {
	for _, gk := range kindStrings(gks) {
		gk := schema.ParseGroupKind(gk)
		mapping, err := r.s.c.RESTMapper().RESTMapping(gk)
		if err != nil {
			continue // a CRD of the set, or not served: prune decides
		}
		for _, ns := range scopes(mapping, namespaces) {
			// This set's members. Without a dry run, which tells a member
			// that exists (see check), every object labelled part of a
			// set: those of another set that the input names are told
			// from the list.
			sel := client.ListOption(client.MatchingLabels{PartOfLabel: r.s.ID()})
			if r.s.o.NoDryRun && !r.s.o.Force {
				sel = client.HasLabels{PartOfLabel}
			}
			items, others, err := r.s.listLabelled(ctx, mapping, ns, sel)
			if apierrors.IsNotFound(err) {
				break // the mapping is stale, the kind not served: prune decides
			}
			if errors.Is(err, errCachedClient) {
				return err
			}
			if err != nil {
				// Its members are read one by one; prune lists again and
				// fails if it still cannot.
				r.unlisted.Insert(listKey{gk, ns})
				continue
			}
			r.listed[listKey{gk, ns}] = items
			if others != nil {
				if r.others == nil {
					r.others = map[listKey]map[string]string{}
				}
				r.others[listKey{gk, ns}] = others
			}
		}
	}
	return nil
}

// kindStrings lists gks as strings, sorted.
func kindStrings(gks sets.Set[schema.GroupKind]) []string {
	out := sets.New[string]()
	for gk := range gks {
		out.Insert(gk.String())
	}
	return sets.List(out)
}

// scopes lists the namespaces to list mapping's kind in: namespaces for a
// namespaced kind, "" (all) for a cluster-scoped one.
func scopes(mapping *meta.RESTMapping, namespaces sets.Set[string]) []string {
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return sets.List(namespaces)
	}
	return []string{""}
}

func (r *run) writeParent(ctx context.Context, gks sets.Set[schema.GroupKind], namespaces sets.Set[string]) error {
	wrote, err := r.s.writeParent(ctx, gks, namespaces)
	if wrote {
		r.written = append(r.written, idOf(r.s.parent).String())
	}
	return err
}

// applyAll applies the members that would change and reports whether one
// failed.
func (r *run) applyAll(ctx context.Context, members []*member) (failed bool) {
	for _, m := range members {
		if !m.changed && m.live != nil {
			r.res.add(m.id, Unchanged, nil)
			continue
		}
		answer := m.obj.DeepCopy()
		if err := r.s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(answer), r.s.applyOptions(false)...); err != nil {
			r.res.add(m.id, Failed, err)
			failed = true
			continue
		}
		if m.live != nil && answer.GetResourceVersion() != "" && answer.GetResourceVersion() == m.live.GetResourceVersion() {
			// Applied without a dry run (NoDryRun), and the API server
			// changed nothing.
			r.res.add(m.id, Unchanged, nil)
			continue
		}
		r.written = append(r.written, m.id.String())
		r.res.add(m.id, Applied, nil)
		if m.id.GroupKind == crdGK {
			r.crdWritten.Insert(crdKind(m.obj))
		}
	}
	return failed
}

func (r *run) failures() []error {
	var errs []error
	for _, o := range r.res.Objects {
		if o.Action == Failed {
			errs = append(errs, fmt.Errorf("%s: %w", o.Object, o.Err))
		}
	}
	return errs
}
