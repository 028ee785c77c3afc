package ownership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/object"
)

// CreateOrPatch is [CreateOrUpdate] writing JSON merge patches of the
// difference between the live object and the mutated child (removals as
// nulls) instead of the whole object, and writing status too. It reports
// created, updated (status unchanged), updatedStatusOnly, updatedStatus
// (both) or unchanged, as controllerutil.CreateOrPatch does.
//
// Everything but status is compared exactly (the Go values first, then as
// JSON maps) and, when it differs, patched: a patch whose only difference
// is fields the API server defaults changes nothing there and keeps the
// resourceVersion read, and the result is then unchanged (a verdict
// remembered as CreateOrUpdate's is, so it is not sent again).
// Status is compared exactly and patched on the status subresource (on the
// object itself for kinds without one: the first status write of such a
// kind finds that out, with a request to the status subresource, and later
// ones write the object at once); its patch, too,
// holds only what mutate changed, and one that replaces or removes a list
// (conditions, say) is a conflict error if another writer changed the
// child since the read. Fields mutate did
// not change are not in the patch, so another writer's changes to them
// survive even when the read was stale. A map dropped whole (cm.Data =
// nil, every label) is removed key by key, the keys read, not those another
// writer added since, where the child's Go type says it is a map (for a
// kind without a Go type in the scheme, the labels and annotations); a
// patch that removes another object whole (a struct, a map of a custom
// resource) or sets or removes a list (which a merge patch replaces whole:
// the owner references, the finalizers, a container's env) carries the
// resourceVersion that was read and fails with a conflict if another
// writer changed the child since. The status
// patch follows the same rules. Every patch carries the UID read, and a
// status-only patch on a status subresource (which ignores the UID) the
// resourceVersion read: a patch never lands on a child deleted and created
// again under the name since the read (another owner's, say); that is a
// conflict to requeue on.
//
// At creation, status set by mutate is written by a status patch after the
// create (the API server drops it from a create where the kind has a status
// subresource); the result is created either way. A create answered
// AlreadyExists (a cache that has not seen the child yet) or a patch
// answered NotFound (a child deleted since the read) is handled as in
// [CreateOrUpdate].
func CreateOrPatch(ctx context.Context, c client.Client, owner, child client.Object, mutate controllerutil.MutateFn, opts ...MutateOption) (controllerutil.OperationResult, error) {
	return result(write(ctx, c, owner, child, mutate, opts, patchVerdicts, createWithStatus, patchChild))
}

// createWithStatus is CreateOrPatch's create: the object, then the status
// mutate set, by a status patch.
func createWithStatus(ctx context.Context, c client.Client, child client.Object, name fmt.Stringer, key memKey) (controllerutil.OperationResult, error) {
	wanted, err := object.ToMapWithoutManagedFields(child)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	desired := object.Shallow(child) // the create decodes its answer into child, in new maps and slices
	if err := c.Create(ctx, child); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: creating %s: %w", name, err)
	}
	created, err := object.ToMapWithoutManagedFields(child)
	if err != nil {
		return controllerutil.OperationResultCreated, fmt.Errorf("ownership: created %s, but reading its status failed: %w", name, err)
	}
	// What the answer holds besides what was asked for (without the
	// status, as patchChild compares) is what the server filled in.
	rememberCreated(key, desired, child, wanted, created)
	// Only what mutate set goes on top of what the API server wrote at
	// creation (a Pod's phase, say): a field mutate left unset is not
	// a removal of the server's value.
	if set, ok := wanted["status"].(map[string]any); ok && len(set) > 0 {
		want, err := overlay(created["status"], set)
		if err == nil {
			_, err = patchStatus(ctx, c, child, created["status"], want, false)
		}
		if err != nil {
			return controllerutil.OperationResultCreated, fmt.Errorf("ownership: created %s, but writing its status failed: %w", name, err)
		}
	}
	return controllerutil.OperationResultCreated, nil
}

// patchChild is CreateOrPatch's write of an existing child: compare,
// patch, then status.
func patchChild(ctx context.Context, c client.Client, live, child client.Object, name fmt.Stringer, beforeWrite func() error) (controllerutil.OperationResult, error) {
	liveMap, wantMap, err := maps(live, child)
	if err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
	}
	wantStatus := wantMap["status"]
	statusDiffers := !equalStatus(liveMap["status"], wantStatus)
	// A patch of this desired object on this live child found only
	// defaults to differ before: not built, nor sent, again (the converged
	// child of a wholesale mutate, every reconcile).
	gvk, gvkErr := object.GVK(child, c.Scheme())
	key, desired, sumErr := childKey(ctx, c, gvk, child, patchVerdicts), [32]byte{}, gvkErr
	answerKey := key // the same child and State, CreateOrPatch's answers' slot
	answerKey.slot = patchAnswers
	// The patch's fields (removals as nulls), before the preconditions: one
	// map, rewritten in place, encoded once below.
	var diff map[string]any
	if !sameExceptStatus(liveMap, wantMap) {
		if sumErr == nil {
			desired, sumErr = sum(withoutStatus(wantMap))
		}
		if m, ok := rememberedAt(key, live); sumErr != nil || !ok || m.sum != desired {
			diff = object.MergeDiff(withoutStatus(liveMap), withoutStatus(wantMap))
		}
	}
	if diff == nil && !statusDiffers {
		object.Copy(child, live)
		return controllerutil.OperationResultNone, nil
	}
	var data []byte // the patch sent: diff with the preconditions
	var locked bool
	if diff != nil {
		dropsWhole := removeOnlyKeysRead(diff, liveMap, goType(c, child))
		locked = dropsWhole || replacesList(diff, withoutStatus(liveMap))
		var pre []precondition
		if locked {
			pre = append(pre, precondition{"resourceVersion", live.GetResourceVersion()})
		}
		// The UID read: the API server refuses to change it, so the patch
		// never lands on a child deleted and created again under the name
		// (another owner's, say) since the read.
		if uid := live.GetUID(); uid != "" {
			pre = append(pre, precondition{"uid", string(uid)})
		}
		if data, err = encodePatch(diff, pre...); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s: %w", name, err)
		}
	}
	if err := beforeWrite(); err != nil {
		return controllerutil.OperationResultNone, err
	}

	result := controllerutil.OperationResultNone
	if diff != nil {
		warnOthersRemoved(ctx, "patching", name, otherSets(live, child), liveMap, wantMap)
		patch := client.RawPatch(types.MergePatchType, data)
		if err := c.Patch(ctx, child, patch); err != nil {
			return controllerutil.OperationResultNone, fmt.Errorf("ownership: patching %s: %w", name, immutable(recreated(c, child, err)))
		}
		switch {
		case child.GetResourceVersion() == live.GetResourceVersion():
			// Nothing changed on the server: only its defaults differed.
			if sumErr == nil {
				rememberOnlyDefaults(key, live, desired)
			}
		case locked:
			result = controllerutil.OperationResultUpdated // applied to the object as read
		case gvkErr == nil && answeredBefore(answerKey, child):
			// The object an earlier answer showed, unchanged since: a
			// read older than our own last write (a lagging cache), and
			// a patch the server found nothing to change in.
		default:
			// Unlocked, the patch applied to the object as it was then,
			// which another writer may have changed since the read: it
			// changed something if the answer differs from the read at
			// a field it sets.
			answer, err := object.ToMapWithoutManagedFields(child)
			if err != nil || changedAt(diff, liveMap, answer) {
				result = controllerutil.OperationResultUpdated
			}
		}
	} else {
		object.Copy(child, live)
	}
	if statusDiffers {
		// Without a write of the object just now, which checked the UID,
		// the status patch is locked on the resourceVersion read: the status
		// subresource ignores a UID in the patch.
		wrote, err := patchStatus(ctx, c, child, liveMap["status"], wantStatus, result != controllerutil.OperationResultUpdated)
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
	if child.GetResourceVersion() != live.GetResourceVersion() && gvkErr == nil {
		// The object as the server last answered: a later patch answered
		// with it stored nothing (see answeredBefore).
		rememberAnswer(answerKey, child)
	}
	return result, nil
}

// precondition is a metadata field a patch carries for the API server to
// check: the resourceVersion or the UID read.
type precondition struct{ field, value string }

// encodePatch is the merge patch p in JSON, with the preconditions set in
// its metadata. p is left as it is (its metadata map is copied, not
// changed): it still tells what the patch changes (see [changedAt]).
func encodePatch(p map[string]any, pre ...precondition) ([]byte, error) {
	if len(pre) > 0 {
		p = object.CopyMap(p, 1)
		if md, ok := p["metadata"].(map[string]any); ok {
			p["metadata"] = object.CopyMap(md, 1)
		}
		for _, f := range pre {
			if err := setMetadata(p, f.field, f.value); err != nil {
				return nil, err
			}
		}
	}
	return json.Marshal(p)
}

// setMetadata sets metadata.<field> of the merge patch p to value, in
// place, adding the metadata when p has none. A patch that removes the
// metadata (a null) or sets it to something other than an object has no
// field to set: an error.
func setMetadata(p map[string]any, field, value string) error {
	v, ok := p["metadata"]
	if !ok {
		p["metadata"] = map[string]any{field: value}
		return nil
	}
	md, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("the patch sets metadata to %v, not an object: metadata.%s cannot be set", v, field)
	}
	md[field] = value
	return nil
}

// recreated turns the API server's refusal of a patch for its
// metadata.uid (the child under the name is another one, created since
// the read) into a conflict to requeue on; other errors are returned as
// they are.
func recreated(c client.Client, child client.Object, err error) error {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return err
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return conflict(c, child, fmt.Errorf("it was deleted and created again since it was read: %w", err))
		}
	}
	return err
}

// overlay is set applied onto base (an empty object where base is no
// object) as a JSON merge patch (RFC 7386), by jsonpatch.MergePatch: a null
// in set removes the field, an object merges into an object field by
// field, anything else replaces base's value. The result is new, its
// integers int64 as ToMap has them.
func overlay(base any, set map[string]any) (map[string]any, error) {
	doc := []byte("{}")
	if m, ok := base.(map[string]any); ok && m != nil {
		var err error
		if doc, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	p, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(doc, p)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, utiljson.Unmarshal(merged, &out)
}
