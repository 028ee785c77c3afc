package ownership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// MutateFn sets the desired state on the child it closes over. It runs on
// the live child (or on the new one, when there is none yet).
type MutateFn func() error

// serverMetadata are the metadata fields the API server owns: they are not
// compared and never written.
var serverMetadata = []string{"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// CreateOrUpdate reads child (by its namespace and name), runs mutate on it,
// makes owner its controller, and creates it, or updates it when it differs
// from the live object. It reports what it did: created, updated or
// unchanged.
//
// The mutated child is compared with the live object exactly, status
// included, so a removal (a dropped label, a bool set to false, an emptied
// list) is a change. When they differ, a server-side dry run of the update
// tells a real change from fields the API server defaults (a wholesale
// deploy.Spec = desired drops them): only a real change is written. That
// costs one GET when nothing differs, one GET and one dry run when only
// defaults differ, and one more request, the update, for a real change.
//
// The update carries the resourceVersion that was read (put back if mutate
// rebuilt the metadata), so a child changed since (a stale cache) is a
// conflict error to requeue on, never an overwrite. Status is written with the object only for kinds without a
// status subresource; use [CreateOrPatch] to write status.
//
// On success child holds the live object, as written or as read.
func CreateOrUpdate(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, opts ...CreateOrUpdateOption) (controllerutil.OperationResult, error) {
	o := CreateOrUpdateOptions{}
	for _, opt := range opts {
		opt.ApplyToCreateOrUpdate(&o)
	}
	c = observe.Client(c, "ownership")
	live, err := readAndMutate(ctx, c, owner, child, mutate, o.Adopt)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	name := object.Describe(child, c.Scheme())
	if live == nil {
		if err := c.Create(ctx, child); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: creating %s: %w", name, err)
		}
		return controllerutil.OperationResultCreated, nil
	}
	liveMap, wantMap, err := maps(live, child)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	if sameObject(liveMap, wantMap) {
		object.Copy(child, live) // show the live state
		return controllerutil.OperationResultNone, nil
	}
	dry := child.DeepCopyObject().(client.Object)
	if err := c.Update(ctx, dry, client.DryRunAll); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: updating %s (dry run, nothing written): %w", name, err)
	}
	dryMap, err := object.ToMap(dry)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	if sameObject(liveMap, dryMap) {
		object.Copy(child, live) // only the server's defaults differed
		return controllerutil.OperationResultNone, nil
	}
	if err := c.Update(ctx, child); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: updating %s: %w", name, err)
	}
	if child.GetResourceVersion() == live.GetResourceVersion() {
		return controllerutil.OperationResultNone, nil // the server found nothing to change
	}
	return controllerutil.OperationResultUpdated, nil
}

// CreateOrPatch is [CreateOrUpdate] writing JSON merge patches of the
// difference between the live object and the mutated child (removals as
// nulls) instead of the whole object, and writing status too. It reports
// created, updated (status unchanged), updatedStatusOnly, updatedStatus
// (both) or unchanged, as controllerutil.CreateOrPatch does.
//
// Everything but status is compared exactly and, when it differs, dry-run
// patched first: a patch is written only when the dry run's answer differs
// from the live object, not when the difference is only server defaults.
// Status is compared exactly and patched on the status subresource (on the
// object itself for kinds without one: the first status write of such a
// kind finds that out, with a request to the status subresource, and later
// ones write the object at once), with no dry run; its patch, too,
// holds only what mutate changed, and one that replaces or removes a list
// (conditions, say) is a conflict error if another writer changed the
// child since the read. Fields mutate did
// not change are not in the patch, so another writer's changes to them
// survive even when the read was stale (dropping every label or
// annotation removes those read, not others added since); a patch that
// changes the owner
// references or finalizers, lists a merge patch replaces whole, carries the
// resourceVersion that was read and fails with a conflict if another
// writer changed the child since.
//
// At creation, status set by mutate is written by a status patch after the
// create (the API server drops it from a create where the kind has a status
// subresource); the result is created either way.
func CreateOrPatch(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, opts ...CreateOrPatchOption) (controllerutil.OperationResult, error) {
	o := CreateOrPatchOptions{}
	for _, opt := range opts {
		opt.ApplyToCreateOrPatch(&o)
	}
	c = observe.Client(c, "ownership")
	live, err := readAndMutate(ctx, c, owner, child, mutate, o.Adopt)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	name := object.Describe(child, c.Scheme())
	if live == nil {
		wanted, err := object.ToMap(child)
		if err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
		}
		if err := c.Create(ctx, child); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: creating %s: %w", name, err)
		}
		created, err := object.ToMap(child)
		if err != nil {
			return controllerutil.OperationResultCreated, fmt.Errorf("ownership: created %s, but reading its status failed: %w", name, err)
		}
		// Only what mutate set goes on top of what the API server wrote at
		// creation (a Pod's phase, say): a field mutate left unset is not
		// a removal of the server's value.
		if set, ok := wanted["status"].(map[string]any); ok && len(set) > 0 {
			want, err := overlay(created["status"], set)
			if err != nil {
				return controllerutil.OperationResultCreated, fmt.Errorf("ownership: created %s, but writing its status failed: %w", name, err)
			}
			if _, err := patchStatus(ctx, c, child, created["status"], want); err != nil {
				return controllerutil.OperationResultCreated, fmt.Errorf("ownership: created %s, but writing its status failed: %w", name, err)
			}
		}
		return controllerutil.OperationResultCreated, nil
	}
	liveMap, wantMap, err := maps(live, child)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	wantStatus := wantMap["status"]
	mainPatch, err := mergePatch(withoutStatus(liveMap), withoutStatus(wantMap))
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	if mainPatch, err = removeOnlyKeysRead(mainPatch, liveMap); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	statusDiffers := !equalStatus(liveMap["status"], wantStatus)
	if mainPatch == nil && !statusDiffers {
		object.Copy(child, live)
		return controllerutil.OperationResultNone, nil
	}

	result := controllerutil.OperationResultNone
	if mainPatch != nil {
		if locks(mainPatch) {
			if mainPatch, err = withResourceVersion(mainPatch, live.GetResourceVersion()); err != nil {
				return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
			}
		}
		patch := client.RawPatch(types.MergePatchType, mainPatch)
		dry := child.DeepCopyObject().(client.Object)
		if err := c.Patch(ctx, dry, patch, client.DryRunAll); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: patching %s (dry run, nothing written): %w", name, err)
		}
		dryMap, err := object.ToMap(dry)
		if err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
		}
		if sameObject(withoutStatus(liveMap), withoutStatus(dryMap)) {
			object.Copy(child, live) // only the server's defaults differed
		} else {
			if err := c.Patch(ctx, child, patch); err != nil {
				return controllerutil.OperationResultNone, fmt.Errorf("ownership: patching %s: %w", name, err)
			}
			if child.GetResourceVersion() != dry.GetResourceVersion() {
				result = controllerutil.OperationResultUpdated
			}
		}
	} else {
		object.Copy(child, live)
	}
	if statusDiffers {
		wrote, err := patchStatus(ctx, c, child, liveMap["status"], wantStatus)
		if err != nil {
			if result == controllerutil.OperationResultUpdated {
				return result, fmt.Errorf("ownership: patched %s, but patching its status failed: %w", name, err)
			}
			return result, fmt.Errorf("ownership: patching the status of %s: %w", name, err)
		}
		switch {
		case wrote && result == controllerutil.OperationResultUpdated:
			result = controllerutil.OperationResultUpdatedStatus
		case wrote:
			result = controllerutil.OperationResultUpdatedStatusOnly
		}
	}
	return result, nil
}

// patchStatus writes, to the status subresource (or to the object itself
// for kinds without one), a merge patch of the change from base, the status
// mutate ran on, to want (statuses in map form, nil for none). child is the
// object as the API server last answered (base's object, or newer after a
// patch of ours) and receives the answer. Only the fields mutate changed
// are in the patch, so another writer's changes to the others survive a
// stale read. A patch that replaces or removes a list (conditions, say) is
// locked: it carries child's resourceVersion, and when child's status is no
// longer base (another writer changed it since the read) it is a conflict
// error without a request. It reports whether the status changed on the
// server.
func patchStatus(ctx context.Context, c client.Client, child client.Object, base, want any) (bool, error) {
	have, err := object.ToMap(child)
	if err != nil {
		return false, err
	}
	if equalStatus(have["status"], want) {
		return false, nil
	}
	data, err := mergePatch(map[string]any{"status": base}, map[string]any{"status": want})
	if err != nil || data == nil {
		return false, err
	}
	var parsed map[string]any
	if err := json.Unmarshal(data, &parsed); err != nil {
		return false, err
	}
	if read, ok := base.(map[string]any); ok && len(read) > 0 && parsed["status"] == nil {
		// The whole status removed: remove the fields read, not those
		// another writer set since.
		nulls := make(map[string]any, len(read))
		for k := range read {
			nulls[k] = nil
		}
		parsed["status"] = nulls
		if data, err = json.Marshal(parsed); err != nil {
			return false, err
		}
	}
	if replacesList(parsed, map[string]any{"status": base}) {
		if !equalStatus(have["status"], base) {
			return false, conflict(c, child, errors.New("its status changed since it was read, and the status patch replaces a list"))
		}
		if data, err = withResourceVersion(data, child.GetResourceVersion()); err != nil {
			return false, err
		}
	}
	rv := child.GetResourceVersion()
	patch := client.RawPatch(types.MergePatchType, data)
	gvk, gvkErr := object.GVK(child, c.Scheme())
	if _, known := noStatusSubresource.Load(gvk); known && gvkErr == nil {
		if err := c.Patch(ctx, child, patch); err != nil {
			return false, err
		}
		if child.GetResourceVersion() != rv {
			return true, nil
		}
		// Nothing written: the kind may have a status subresource now.
		noStatusSubresource.Delete(gvk)
	}
	if err := c.Status().Patch(ctx, child, patch); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		// No status subresource (or no object: then this fails too).
		if err := c.Patch(ctx, child, patch); err != nil {
			return false, err
		}
		if gvkErr == nil {
			noStatusSubresource.Store(gvk, true)
		}
	}
	return child.GetResourceVersion() != rv, nil
}

// noStatusSubresource holds the kinds (schema.GroupVersionKind) found
// without a status subresource, whose status patchStatus writes on the
// object at once instead of asking the status subresource first.
var noStatusSubresource sync.Map

// replacesList reports whether a merge patch sets or removes a list (which
// a merge patch replaces whole) where base, the object it was made from,
// has one or it adds one.
func replacesList(patch, base any) bool {
	switch p := patch.(type) {
	case []any:
		return true
	case nil:
		_, isList := base.([]any)
		return isList
	case map[string]any:
		b, _ := base.(map[string]any)
		for k, v := range p {
			if replacesList(v, b[k]) {
				return true
			}
		}
	}
	return false
}

// conflict is the conflict error of a write not made because child changed
// since it was read.
func conflict(c client.Client, child client.Object, err error) error {
	gvk, gerr := object.GVK(child, c.Scheme())
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if gerr == nil {
		if m, merr := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); merr == nil {
			gr = m.Resource.GroupResource()
		}
	}
	return apierrors.NewConflict(gr, child.GetName(), err)
}

// readAndMutate validates the reference, reads child, runs mutate and sets
// the controller reference. It returns a copy of the live object, or nil
// when there is none.
func readAndMutate(ctx context.Context, c client.Client, owner, child client.Object, mutate MutateFn, adopt bool) (client.Object, error) {
	if err := validate(c, owner, child); err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(child)
	var live client.Object
	if err := c.Get(ctx, key, child); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("ownership: reading %s: %w", object.Describe(child, c.Scheme()), err)
		}
	} else {
		live = child.DeepCopyObject().(client.Object)
	}
	if mutate != nil {
		if err := mutate(); err != nil {
			return nil, fmt.Errorf("ownership: mutating %s: %w", object.Describe(child, c.Scheme()), err)
		}
		if err := object.NormalizeJSON(child); err != nil { // a Go int in an unstructured child, say
			return nil, fmt.Errorf("ownership: mutating %s: %w", object.Describe(child, c.Scheme()), err)
		}
	}
	if client.ObjectKeyFromObject(child) != key {
		return nil, fmt.Errorf("ownership: mutate changed the name or namespace of %s %s to %s", object.Kind(child, c.Scheme()), key, client.ObjectKeyFromObject(child))
	}
	if live != nil {
		keepServerMetadata(child, live)
	}
	opts := []SetControllerReferenceOption{}
	if adopt {
		opts = append(opts, Adopt{})
	}
	if _, err := SetControllerReference(owner, child, c.Scheme(), opts...); err != nil {
		return nil, err
	}
	return live, nil
}

// keepServerMetadata puts back on child the metadata the API server owns,
// as read in live, which a mutate that builds the metadata anew drops: an
// update then still carries the resourceVersion that was read (without
// one, an update overwrites whatever changed since the read, or is
// refused, for custom resources).
func keepServerMetadata(child, live client.Object) {
	child.SetResourceVersion(live.GetResourceVersion())
	child.SetUID(live.GetUID())
	child.SetGeneration(live.GetGeneration())
	child.SetCreationTimestamp(live.GetCreationTimestamp())
	child.SetDeletionTimestamp(live.GetDeletionTimestamp())
	child.SetDeletionGracePeriodSeconds(live.GetDeletionGracePeriodSeconds())
	child.SetManagedFields(live.GetManagedFields())
}

// maps converts both objects to maps (copies) without the metadata the
// API server owns.
func maps(a, b client.Object) (map[string]any, map[string]any, error) {
	am, err := object.ToMap(a)
	if err != nil {
		return nil, nil, err
	}
	bm, err := object.ToMap(b)
	if err != nil {
		return nil, nil, err
	}
	return withoutServerMetadata(am), withoutServerMetadata(bm), nil
}

func withoutServerMetadata(m map[string]any) map[string]any {
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return m
	}
	for _, f := range serverMetadata {
		delete(md, f)
	}
	for _, f := range []string{"labels", "annotations", "ownerReferences", "finalizers"} {
		if v, ok := md[f]; ok && empty(v) {
			delete(md, f) // absent and empty mean the same to the API server
		}
	}
	return m
}

func withoutStatus(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}

// sameObject compares two objects in map form, server metadata removed,
// exactly.
func sameObject(a, b map[string]any) bool {
	a, b = withoutServerMetadata(runtime.DeepCopyJSON(a)), withoutServerMetadata(runtime.DeepCopyJSON(b))
	if equalStatus(a["status"], b["status"]) {
		delete(a, "status")
		delete(b, "status")
	}
	return reflect.DeepEqual(a, b)
}

// equalStatus compares two statuses exactly; absent and empty are the same.
func equalStatus(a, b any) bool {
	if empty(a) && empty(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// mergePatch is the JSON merge patch from a to b (removals as nulls), or
// nil when there is no difference.
func mergePatch(a, b map[string]any) ([]byte, error) {
	aj, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	bj, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.CreateMergePatch(aj, bj)
	if err != nil {
		return nil, err
	}
	if string(p) == "{}" {
		return nil, nil
	}
	return p, nil
}

// removeOnlyKeysRead rewrites a merge patch that removes the labels or
// annotations whole (null) into one that removes the keys read in live, so
// that keys another writer added since a stale read survive.
func removeOnlyKeysRead(patch []byte, live map[string]any) ([]byte, error) {
	if patch == nil {
		return nil, nil
	}
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	md, _ := p["metadata"].(map[string]any)
	changed := false
	for _, f := range []string{"labels", "annotations"} {
		v, ok := md[f]
		read, _, _ := unstructured.NestedMap(live, "metadata", f)
		if !ok || v != nil || len(read) == 0 {
			continue
		}
		nulls := make(map[string]any, len(read))
		for k := range read {
			nulls[k] = nil
		}
		md[f], changed = nulls, true
	}
	if !changed {
		return patch, nil
	}
	return json.Marshal(p)
}

// locks reports whether a merge patch replaces a list another writer may
// have added to since the read: the owner references or the finalizers.
func locks(patch []byte) bool {
	var p map[string]any
	if json.Unmarshal(patch, &p) != nil {
		return true
	}
	md, _ := p["metadata"].(map[string]any)
	_, refs := md["ownerReferences"]
	_, fins := md["finalizers"]
	return refs || fins
}

func withResourceVersion(patch []byte, rv string) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(p, rv, "metadata", "resourceVersion"); err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// overlay applies set onto base as a JSON merge patch would: the fields of
// set win, maps merge, the rest of base stays.
func overlay(base any, set map[string]any) (any, error) {
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	if base == nil {
		b = []byte("{}")
	}
	p, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(b, p)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(merged, &out); err != nil { // int64 for integers, as ToMap has them
		return nil, err
	}
	return out, nil
}
