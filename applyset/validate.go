package applyset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
)

// listKey is one LIST: a kind in a namespace ("" for a cluster-scoped kind).
type listKey struct {
	gk        schema.GroupKind
	namespace string
}

// listMembers lists the objects of mapping's kind in namespace ("" for all
// of a cluster-scoped kind) that are labelled part of the set, as
// unstructured objects, which even a manager's client reads from the API
// server.
func (s *Set) listMembers(ctx context.Context, mapping *meta.RESTMapping, namespace string) ([]*unstructured.Unstructured, error) {
	ours, _, err := s.listLabelled(ctx, mapping, namespace, client.MatchingLabels{PartOfLabel: s.ID()})
	return ours, err
}

// listLabelled lists the objects of mapping's kind in namespace that sel
// selects, and returns those labelled part of the set and, by name, the
// set ID of those labelled part of another set.
func (s *Set) listLabelled(ctx context.Context, mapping *meta.RESTMapping, namespace string, sel client.ListOption) ([]*unstructured.Unstructured, map[string]string, error) {
	gvk := mapping.GroupVersionKind
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	// metadata.name!="" holds for every object; the API server takes it, and
	// an informer cache refuses it (non-exact field match): a client that
	// lists unstructured objects from a cache, which may be stale, is
	// refused rather than trusted.
	opts := []client.ListOption{sel, client.MatchingFieldsSelector{Selector: everyName}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := s.c.List(ctx, list, opts...); err != nil {
		if strings.Contains(err.Error(), "non-exact field matches are not supported by the cache") {
			return nil, nil, fmt.Errorf("%w: %w", errCachedClient, err)
		}
		return nil, nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	var others map[string]string
	for i := range list.Items {
		item := &list.Items[i]
		item.SetGroupVersionKind(gvk)
		switch set := item.GetLabels()[PartOfLabel]; set {
		case s.ID():
			out = append(out, item)
		case "":
		default:
			if others == nil {
				others = map[string]string{}
			}
			others[item.GetName()] = set
		}
	}
	return out, others, nil
}

// everyName selects every object.
var everyName = fields.OneTermNotEqualSelector("metadata.name", "")

// errCachedClient is returned (wrapped) when the client of a [Set] reads
// unstructured objects from an informer cache, which may be stale: pass a
// direct client, or a manager's client with its default options (it reads
// unstructured objects from the API server).
var errCachedClient = errors.New("applyset: the client lists unstructured objects from a cache; it needs a client that reads them from the API server")

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

// check validates the members not yet checked and marks which would change.
// A member listed live is known unchanged without a request when
// [knownUnchanged] says so; every other member is applied with dryRun=All,
// which the API server validates as it would the real apply. It returns a
// [*ValidationError] with every refusal, or, when a request failed for a
// reason that is not the input's fault (see [refused]), an error that is no
// ValidationError and wraps each failure.
func (r *run) check(ctx context.Context, members []*member) error {
	var errs, failures []error
	for _, m := range members {
		if m.checked {
			continue
		}
		m.checked = true
		if r.unlisted.Has(listKey{m.id.GroupKind, m.id.Namespace}) {
			live := object.EmptyLike(m.obj)
			if err := r.s.c.Get(ctx, client.ObjectKeyFromObject(m.obj), live); err == nil && live.GetLabels()[PartOfLabel] == r.s.ID() {
				m.live = live
			} else if err == nil && live.GetLabels()[PartOfLabel] != "" {
				m.other = live.GetLabels()[PartOfLabel]
			} else if err != nil && !apierrors.IsNotFound(err) {
				failures = append(failures, fmt.Errorf("%s: reading it failed: %w", m.id, err))
				continue
			}
		}
		// Another set's: applying it would relabel it part of this one,
		// whose next prune could delete it while that set holds it. With
		// distinct field managers the API server refuses it too (a
		// conflict on the label); with one, nothing would.
		another := func() error {
			return &ObjectError{Index: m.index, ID: m.id, Field: "metadata.labels[" + PartOfLabel + "]",
				Err: fmt.Errorf("it is a member of another set (%s); pass Force to take it over", m.other)}
		}
		if m.other != "" && !r.s.o.Force {
			errs = append(errs, another())
			continue
		}
		if m.live != nil && knownUnchanged(m.obj, m.live, r.s.o.FieldManager) {
			m.changed = false
			continue
		}
		if r.s.o.NoDryRun {
			m.changed = true // the apply itself tells
			continue
		}
		out, err := r.dryRun(ctx, m)
		if err != nil && refused(err) {
			errs = append(errs, &ObjectError{Index: m.index, ID: m.id, Field: causeField(err), Err: err})
			continue
		} else if err != nil {
			failures = append(failures, fmt.Errorf("%s: dry run failed: %w", m.id, err))
			continue
		}
		if m.live == nil && out.GetResourceVersion() != "" && !r.s.o.Force && !r.unlisted.Has(listKey{m.id.GroupKind, m.id.Namespace}) {
			// It exists (a dry run of a new object has no
			// resourceVersion) and is not listed as this set's: read its
			// part-of label, another set's or none (an object to adopt).
			// Only such a member costs the GET: a converged set's are all
			// listed, and a new one does not exist.
			live := object.EmptyLike(m.obj)
			if err := r.s.c.Get(ctx, client.ObjectKeyFromObject(m.obj), live); err != nil && !apierrors.IsNotFound(err) {
				failures = append(failures, fmt.Errorf("%s: reading it failed: %w", m.id, err))
				continue
			} else if set := live.GetLabels()[PartOfLabel]; err == nil && set != "" && set != r.s.ID() {
				m.other = set
				errs = append(errs, another())
				continue
			}
		}
		if m.id.GroupKind == namespaceGK && out.GetDeletionTimestamp() != nil {
			// Applying it would not bring it back, and its members would
			// be refused after it was written.
			errs = append(errs, &ObjectError{Index: m.index, ID: m.id, Field: "metadata.deletionTimestamp",
				Err: errors.New("the Namespace is being deleted: nothing can be created in it")})
			continue
		}
		m.changed = m.live == nil || !sameContent(m.live, out)
	}
	if len(failures) > 0 {
		// Not the input's fault: retry. The refusals are named too, as
		// plain errors, so that the caller does not take the whole for a
		// refusal.
		return fmt.Errorf("applyset: validation could not complete (%s): %w", writtenBefore(r.written), errors.Join(append(failures, errs...)...))
	}
	if len(errs) > 0 {
		return &ValidationError{Errors: errs, Written: slices.Clone(r.written)}
	}
	return nil
}

// refused reports whether err, from a dry run, refuses the input rather than
// fails to answer: the object is invalid (422) or the request bad (400), it
// is forbidden (403: RBAC, an admission webhook or policy denial, a
// namespace being terminated), its namespace or kind does not exist (404),
// it conflicts with another field manager without Force (409), or it is too
// large (413) or of an unsupported kind of request (405, 415). Anything else
// (a 500, a 503, a 429, a timeout, a broken connection, a cancelled context,
// a 401) is a failure of the server or of the way to it, not of the input.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	switch status.Status().Code {
	case 400, 403, 404, 405, 409, 413, 415, 422:
		return true
	}
	return false
}

// causeField is the first field that a refusal of the API server names
// (a 422's causes, the namespace of a 403 in a terminating namespace).
func causeField(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return ""
	}
	d := status.Status().Details
	for _, c := range d.Causes {
		if c.Field != "" {
			return c.Field
		}
	}
	if status.Status().Code == 404 && d.Kind == "namespaces" {
		return "metadata.namespace" // no such namespace
	}
	return ""
}

// dryRun applies m with dryRun=All. A member whose CRD this Apply wrote is
// retried for a moment on a refusal: the API server takes a CRD's new
// schema asynchronously.
func (r *run) dryRun(ctx context.Context, m *member) (*unstructured.Unstructured, error) {
	deadline := time.Now().Add(schemaLag)
	for {
		out := m.obj.DeepCopy()
		err := r.s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), r.s.applyOptions(true)...)
		if err == nil || !r.crdWritten.Has(m.id.GroupKind) || time.Now().After(deadline) || backoff.Sleep(ctx, 100*time.Millisecond) != nil {
			return out, err
		}
	}
}

// schemaLag bounds the retries of a dry run against a CRD just written.
const schemaLag = 3 * time.Second

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
