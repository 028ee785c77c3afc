package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady/cachewait"
)

// maxConflicts bounds the retries of one write after other writers changed
// the object meanwhile.
const maxConflicts = 10

// Patcher writes the changes a reconcile made to an object, and only those.
// Take it with [NewPatcher] right after reading the object, change the object
// freely, and call [Patcher.Patch] once, usually in a defer with
// [Patcher.PatchOnExit].
type Patcher struct {
	c      client.Client
	before client.Object
	gvk    string
}

// NewPatcher snapshots obj, which should be as read from the API server.
func NewPatcher(c client.Client, obj client.Object) (*Patcher, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, errors.New("reconcile: NewPatcher needs an object")
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("reconcile: NewPatcher: %w", err)
	}
	return &Patcher{c: c, before: obj.DeepCopyObject().(client.Object), gvk: gvk.Kind}, nil
}

// PatchOnExit calls [Patcher.Patch] and joins its error into *reterr, for a
// deferred call at the top of Reconcile:
//
//	func (r *R) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
//		...
//		p, err := reconcile.NewPatcher(r.Client, obj)
//		...
//		defer p.PatchOnExit(ctx, obj, &reterr)
func (p *Patcher) PatchOnExit(ctx context.Context, obj client.Object, reterr *error, opts ...PatchOption) {
	if err := p.Patch(ctx, obj, opts...); err != nil {
		*reterr = errors.Join(*reterr, err)
	}
}

// Patch writes what changed in obj since [NewPatcher]:
//
//   - nothing changed: no request at all;
//   - status changed: one PATCH of the status subresource carrying all of
//     status (conditions, observedGeneration and the rest) at once;
//   - metadata or spec changed: one merge PATCH of the difference.
//
// Conditions and finalizers are lists, which a merge patch replaces whole, so
// when either changed the write is locked on the resourceVersion read; on a
// conflict Patch reads the object again and applies only its own changes to
// the latest lists: the condition types this reconcile changed (and those
// of [WithOwnedConditions]) win, other writers' conditions stay, and the
// finalizers this reconcile added or removed are added or removed, no more.
// [WithOptimisticLock] locks every write and returns the conflict instead.
//
// NotFound is success: the object is gone (its last finalizer removed, say),
// and there is nothing left to write. On success obj holds the API server's
// answer to the last write.
func (p *Patcher) Patch(ctx context.Context, obj client.Object, opts ...PatchOption) error {
	o := PatchOptions{}
	for _, opt := range opts {
		opt.ApplyToPatch(&o)
	}
	before, err := toMap(p.before)
	if err != nil {
		return p.wrap(err)
	}
	after, err := toMap(obj)
	if err != nil {
		return p.wrap(err)
	}
	if o.ObservedGeneration {
		if err := unstructured.SetNestedField(after, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return p.wrap(err)
		}
	}
	status, err := newStatusChange(before, after, o)
	if err != nil {
		return p.wrap(err)
	}
	meta, err := newMetaChange(before, after, o)
	if err != nil {
		return p.wrap(err)
	}
	if status == nil && meta == nil {
		return nil
	}

	rv := p.before.GetResourceVersion()
	var latest client.Object
	if status != nil {
		if latest, err = p.write(ctx, obj, rv, status, o.OptimisticLock, true); err != nil {
			return err
		}
		if latest == nil {
			return nil // gone
		}
		rv = latest.GetResourceVersion()
	}
	if meta != nil {
		if latest, err = p.write(ctx, obj, rv, meta, o.OptimisticLock, false); err != nil {
			return err
		}
		if latest == nil {
			return nil
		}
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(latest).Elem())
	if o.CacheReader != nil {
		if err := cachewait.ForWrite(ctx, o.CacheReader, obj, o.CacheWaitOptions...); err != nil {
			return p.wrap(err)
		}
	}
	return nil
}

// change is one write: the body of a merge patch given the latest state
// of the object, and whether it must be locked on a resourceVersion.
type change interface {
	body(latest map[string]any) (map[string]any, error)
	locked() bool
}

// write sends ch with retries on conflict and returns the API server's
// answer, or nil when the object is gone.
func (p *Patcher) write(ctx context.Context, obj client.Object, rv string, ch change, userLock, subresource bool) (client.Object, error) {
	what := "metadata and spec"
	if subresource {
		what = "status"
	}
	var latest map[string]any // nil: the state at rv is the snapshot's
	for attempt := 0; ; attempt++ {
		body, err := ch.body(latest)
		if err != nil {
			return nil, p.wrap(err)
		}
		lock := userLock || ch.locked()
		if lock {
			if err := unstructured.SetNestedField(body, rv, "metadata", "resourceVersion"); err != nil {
				return nil, p.wrap(err)
			}
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, p.wrap(err)
		}
		target := emptyLike(obj)
		patch := client.RawPatch(types.MergePatchType, data)
		if subresource {
			err = p.c.Status().Patch(ctx, target, patch)
		} else {
			err = p.c.Patch(ctx, target, patch)
		}
		switch {
		case err == nil:
			return target, nil
		case apierrors.IsNotFound(err) && subresource:
			// Gone, or a type without a status subresource: then status is
			// written with the object itself.
			if gerr := p.c.Get(ctx, client.ObjectKeyFromObject(obj), emptyLike(obj)); apierrors.IsNotFound(gerr) {
				return nil, nil
			} else if gerr != nil {
				return nil, p.wrapf(gerr, "patching status")
			}
			subresource, what = false, "status (no status subresource)"
			continue
		case apierrors.IsNotFound(err):
			return nil, nil
		case !apierrors.IsConflict(err) || userLock || attempt == maxConflicts:
			return nil, p.wrapf(err, "patching %s", what)
		}
		// Someone else wrote meanwhile: start again from what they wrote.
		fresh := emptyLike(obj)
		if err := p.c.Get(ctx, client.ObjectKeyFromObject(obj), fresh); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			return nil, p.wrapf(err, "reading the object again after a conflict")
		}
		if latest, err = toMap(fresh); err != nil {
			return nil, p.wrap(err)
		}
		rv = fresh.GetResourceVersion()
	}
}

func (p *Patcher) wrap(err error) error {
	return fmt.Errorf("reconcile: %s %s: %w", p.gvk, key(p.before), err)
}

func (p *Patcher) wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("reconcile: %s %s: %s: %w", p.gvk, key(p.before), fmt.Sprintf(format, args...), err)
}

func key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// emptyLike returns a new, empty object of obj's type, kind, namespace and
// name, for the API server's answer to be decoded into with no stale field.
func emptyLike(obj client.Object) client.Object {
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	out.SetNamespace(obj.GetNamespace())
	out.SetName(obj.GetName())
	return out
}

func toMap(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// metadata fields the API server owns; a difference in them is not ours.
var serverOwnedMetadata = []string{
	"resourceVersion", "managedFields", "generation", "creationTimestamp", "uid",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "finalizers",
}

// metaChange is the merge patch of everything but status.
type metaChange struct {
	diff       map[string]any
	before     []string // finalizers read
	after      []string // finalizers wanted
	finalizers bool     // the finalizers changed
}

func newMetaChange(before, after map[string]any, o PatchOptions) (*metaChange, error) {
	strip := func(m map[string]any) map[string]any {
		m = runtime.DeepCopyJSON(m)
		delete(m, "status")
		if md, ok := m["metadata"].(map[string]any); ok {
			for _, f := range serverOwnedMetadata {
				delete(md, f)
			}
		}
		return m
	}
	diff, err := mergeDiff(strip(before), strip(after))
	if err != nil {
		return nil, err
	}
	fb, _, _ := unstructured.NestedStringSlice(before, "metadata", "finalizers")
	fa, _, _ := unstructured.NestedStringSlice(after, "metadata", "finalizers")
	ch := &metaChange{diff: diff, before: fb, after: fa, finalizers: !slices.Equal(fb, fa)}
	if len(diff) == 0 && !ch.finalizers {
		return nil, nil
	}
	return ch, nil
}

func (m *metaChange) locked() bool { return m.finalizers }

func (m *metaChange) body(latest map[string]any) (map[string]any, error) {
	body := runtime.DeepCopyJSON(m.diff)
	if !m.finalizers {
		return body, nil
	}
	list := m.after
	if latest != nil {
		current, _, _ := unstructured.NestedStringSlice(latest, "metadata", "finalizers")
		list = rebase(current, m.before, m.after)
	}
	items := make([]any, len(list))
	for i, f := range list {
		items[i] = f
	}
	if err := unstructured.SetNestedField(body, items, "metadata", "finalizers"); err != nil {
		return nil, err
	}
	return body, nil
}

// rebase applies the change from before to after onto current: what was
// removed is removed, what was added is added at the end, the rest of
// current stays as it is.
func rebase(current, before, after []string) []string {
	out := slices.DeleteFunc(slices.Clone(current), func(f string) bool {
		return slices.Contains(before, f) && !slices.Contains(after, f)
	})
	for _, f := range after {
		if !slices.Contains(before, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// statusChange is the merge patch of status.
type statusChange struct {
	diff       map[string]any // without conditions
	conditions bool           // the conditions changed
	before     []metav1.Condition
	after      []metav1.Condition
	owned      []string
}

func newStatusChange(before, after map[string]any, o PatchOptions) (*statusChange, error) {
	sb, _, _ := unstructured.NestedMap(before, "status")
	sa, _, _ := unstructured.NestedMap(after, "status")
	cb, err := conditionsOf(sb)
	if err != nil {
		return nil, err
	}
	ca, err := conditionsOf(sa)
	if err != nil {
		return nil, err
	}
	delete(sb, "conditions")
	delete(sa, "conditions")
	diff, err := mergeDiff(orEmpty(sb), orEmpty(sa))
	if err != nil {
		return nil, err
	}
	ch := &statusChange{before: cb, after: ca, owned: o.OwnedConditions,
		conditions: !equality.Semantic.DeepEqual(orNone(cb), orNone(ca))}
	if len(diff) == 0 && !ch.conditions {
		return nil, nil
	}
	if len(diff) > 0 {
		ch.diff = map[string]any{"status": diff}
	} else {
		ch.diff = map[string]any{}
	}
	return ch, nil
}

func (s *statusChange) locked() bool { return s.conditions }

func (s *statusChange) body(latest map[string]any) (map[string]any, error) {
	body := runtime.DeepCopyJSON(s.diff)
	if !s.conditions {
		return body, nil
	}
	list := s.after
	if latest != nil {
		ls, _, _ := unstructured.NestedMap(latest, "status")
		current, err := conditionsOf(ls)
		if err != nil {
			return nil, err
		}
		list = mergeConditions(current, s.before, s.after, s.owned)
	}
	items := make([]any, len(list))
	for i := range list {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&list[i])
		if err != nil {
			return nil, err
		}
		items[i] = m
	}
	if err := unstructured.SetNestedField(body, items, "status", "conditions"); err != nil {
		return nil, err
	}
	return body, nil
}

// mergeConditions applies this reconcile's condition changes (before to
// after), and its owned types, onto current: those types take their value
// from after (or go, when after lacks them); every other type keeps the
// latest writer's value.
func mergeConditions(current, before, after []metav1.Condition, owned []string) []metav1.Condition {
	ours := map[string]bool{}
	for _, t := range owned {
		ours[t] = true
	}
	for _, c := range after {
		if b := find(before, c.Type); b == nil || !equality.Semantic.DeepEqual(*b, c) {
			ours[c.Type] = true
		}
	}
	for _, c := range before {
		if find(after, c.Type) == nil {
			ours[c.Type] = true
		}
	}
	var out []metav1.Condition
	for _, c := range current {
		if !ours[c.Type] {
			out = append(out, c)
		} else if a := find(after, c.Type); a != nil {
			out = append(out, *a)
		}
	}
	for _, c := range after {
		if ours[c.Type] && find(out, c.Type) == nil {
			out = append(out, c)
		}
	}
	return out
}

func find(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func conditionsOf(status map[string]any) ([]metav1.Condition, error) {
	raw, ok := status["conditions"]
	if !ok || raw == nil {
		return nil, nil
	}
	var holder struct {
		Items []metav1.Condition `json:"items"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"items": raw}, &holder); err != nil {
		return nil, fmt.Errorf("field status.conditions: %w", err)
	}
	return holder.Items, nil
}

// mergeDiff is the JSON merge patch from before to after, as a map; empty
// when they are equal.
func mergeDiff(before, after map[string]any) (map[string]any, error) {
	b, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	a, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(b, a)
	if err != nil {
		return nil, err
	}
	var diff map[string]any
	if err := json.Unmarshal(patch, &diff); err != nil {
		return nil, err
	}
	return diff, nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orNone(c []metav1.Condition) []metav1.Condition {
	if len(c) == 0 {
		return nil
	}
	return c
}
