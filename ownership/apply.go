package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
	"github.com/steadyk8s/steady/internal/scope"
)

// appliedSlot is where Apply remembers, per child, its last successful
// answer (UID and resourceVersion) and a sum of the configuration it
// applied, owner references included: one slot whatever the owner, so
// that what is remembered of a child is bounded by the child (which the
// informer ends), not by the owners that ever applied it (an owner deleted
// and created again under its name, with a new UID, takes back the child
// that outlived it: what the old one left would stay until the child
// goes). The sum tells one owner's configuration from another's; the
// answer is the child's, whoever applied it.
const appliedSlot = "apply"

// createOnly is the resourceVersion of an apply that must create the
// child: server-side apply ignores the resourceVersion when it creates, and
// refuses one that is not the child's with a conflict when the child
// exists. No stored object has it: it is etcd's first revision, written
// before any child can be.
const createOnly = "1"

// Apply makes owner the controller of the child that config describes and
// server-side applies config with the given field manager. config is what
// server-side apply is meant for: an apply configuration, client-go's
// (k8s.io/client-go/applyconfigurations/..., such as
// appsv1ac.Deployment(name, namespace).WithSpec(...)), controller-gen's for
// a custom resource, or client.ApplyConfigurationFromUnstructured of
// content the caller built. Only the fields it sets are sent, owned and
// compared: a field another writer sets (an autoscaler's replicas, the
// annotation of kubectl rollout restart, a webhook's addition) is theirs,
// kept, and never fought over; a field this manager applied before and
// config no longer sets is removed by the API server (server-side apply's
// ownership rules). Its status is not sent. On success config (a pointer)
// is replaced by the child as the API server answered (or, where nothing
// was sent, as the read showed it).
//
// Besides owner's controller reference, the owner references config sets
// that are not controller references are applied (controllerutil's
// SetOwnerReference sets them on a configuration built from an object).
// With [RecordOwner], the owner is recorded as [CreateOrUpdate] records it
// ([OwnerKindLabel] and [OwnerNameLabel], or the annotation when the
// owner's kind or name is not a label value), the apply carrying the
// record in that form and not the other; without it, the apply carries no
// record (one the configuration sets is dropped: the record is not the
// configuration's), and the API server removes one this field manager
// applied before. Either way a child is taken or refused by the record it
// carries, as docs/ownership.md (Backup and restore) says. A
// stale controller reference of an earlier owner of owner's kind and
// name, or a record that names another owner (with [Adopt]{}), or, with
// [RecordOwner], names owner otherwise than the apply does, is replaced
// (without [RecordOwner], removed) by a patch of its own before the
// apply, as an adopted controller's
// reference is. With [Adopt]{}, the other controller's reference is
// removed first, by a patch of its own: if the apply then fails, the
// result is updated and the error says that the child was left without a
// controller.
//
// Nothing is sent when neither the child (its UID and resourceVersion as
// read) nor what is applied (field manager, force, configuration) changed
// since this client's last successful apply of it for this owner: the
// result is unchanged (see steady.NewClient for what a client remembers).
//
// A child owner controls is applied without a lock: another writer
// changing it between the read and the apply (its controller writing its
// status, a heartbeat) costs nothing; where it was deleted and created
// again since under another controller, the API server refuses the apply
// (two controller references), and the child, read again, is refused as
// another owner's ([*AlreadyOwnedError]). One it does not control yet is
// locked on the read, so that a child another owner took since is read
// again and refused. A child the read did not find is applied so that it
// can only be created (a resourceVersion no stored object has);
// when it exists after all (a cache that has not shown it yet) that is a
// conflict, and it is read again, through the API reader when there is
// one (one GET; see [CreateOrUpdate]), else through the client until it
// shows the child (backing off, about 2.5 seconds at most), checked (another controller's
// child is an [*AlreadyOwnedError]) and applied again. The result says
// what the API server did, from its answer: created when the apply
// created the child; unchanged when the child's resourceVersion is the one
// this call last knew (read, or this client's last answer), or when it
// moved by another writer's change only (without [Force]: the read held
// every value sent and this manager's applied fields did not change; a
// field of ours another writer removed after the read, which this apply
// put back, is then missed); updated otherwise; beside an error, empty
// where nothing was written. The read is of the
// child's kind as the client's scheme has it: a kind with a Go type is
// read from a manager's cache (list and watch permissions on it, as for
// CreateOrUpdate); one without is read as unstructured, from the API
// server unless the manager's client caches unstructured objects.
//
// A config that names no apiVersion, kind or name is an
// error naming the field, and one that is nil, not a pointer or not JSON
// an error saying so, before any request.
func Apply(ctx context.Context, c client.Client, owner client.Object, config runtime.ApplyConfiguration, fieldManager string, opts ...ApplyOption) (controllerutil.OperationResult, error) {
	return result(apply(ctx, c, owner, config, fieldManager, opts))
}

func apply(ctx context.Context, c client.Client, owner client.Object, config runtime.ApplyConfiguration, fieldManager string, opts []ApplyOption) (controllerutil.OperationResult, error) {
	o := ApplyOptions{}
	for _, opt := range opts {
		opt.ApplyToApply(&o)
	}
	// The reader of re-reads after a conflict (nil: none; see
	// writeCall.rereader). A child the client does not show is not read
	// through it: every new child would cost a GET.
	conflictReader := scope.Of(ctx, c).APIReader()
	ctx = scope.Carry(ctx, c) // the State of c's cluster, for the calls through the wrapper below
	c = observe.Client(c, "ownership")
	u, child, err := fromConfiguration(c, owner, config)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	if err := check(owner, child, c.Scheme()); err != nil {
		return controllerutil.OperationResultNone, err
	}
	if err := validateScope(ctx, c, owner, child); err != nil {
		return controllerutil.OperationResultNone, err
	}
	gvk := u.GroupVersionKind()
	name := object.Describe(child, c.Scheme())
	ref, k, err := reference(owner, c.Scheme())
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	r := k.record(ref.Name, owner.GetNamespace())
	withReferences(u, ref, r, o.Record)
	key := childKey(ctx, c, gvk, child, appliedSlot)
	applyOpts := []client.ApplyOption{client.FieldOwner(fieldManager)}
	if o.Force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}

	live, err := readForApply(ctx, c, nil, child, name, nil, nil)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	// The apply would change nothing: the child is as this client's last
	// apply of this configuration left it (the answer's resourceVersion),
	// or, judged from the child itself, it holds what the apply sends and
	// this field manager applied exactly these fields, whatever else moved
	// it (its status, another writer's fields), also in a new process. Not
	// judged from a read older than this client's last answer: a cache
	// behind our own write shows an older child.
	sent, sumErr := sum(fieldManager, o.Force, u.Object)
	if live != nil && metav1.IsControlledBy(live, owner) {
		m, remembered := recall(key)
		unmoved := remembered && sumErr == nil && m.sum == sent && m.uid == live.GetUID() && m.rv == live.GetResourceVersion()
		if unmoved || settled(recordOf(live), r, o.Record, true) && !behindOwnAnswer(key, live) && asApplied(live, u, fieldManager) {
			if err := answerInto(config, live, gvk); err != nil {
				return controllerutil.OperationResultNone, fmt.Errorf("ownership: %s is as applied, but reading it failed: %w", name, err)
			}
			return controllerutil.OperationResultNone, nil
		}
	}
	released := ""
	for attempt := 1; ; attempt++ {
		// lock is what the apply is locked on: nothing for a child owner
		// controls, or one only remembered; the read for one owner does not
		// control yet; create only for a child not found. known says which
		// child the call knows, at which resourceVersion.
		lock, known := memo{rv: createOnly}, memo{}
		if live != nil {
			cur, stale, err := claim(owner, live, ref, recordOf(live), r, c.Scheme(), o.Adopt)
			if err != nil {
				return resultAfterRelease(released), err
			}
			if cur != nil && stale {
				if err := ownerIsCurrent(ctx, conflictReader, c, owner, live, cur); err != nil {
					return resultAfterRelease(released), err
				}
			}
			// Another controller reference (stale or adopted) and a record
			// that is not owner's as the apply writes it (without
			// RecordOwner: one that names another owner), which other field
			// managers may own, are replaced by a patch first: the apply
			// would leave the child two controllers or two records, and
			// conflict on the record.
			if rec := recordOf(live); cur != nil || (!rec.none() && !settled(rec, r, o.Record, metav1.IsControlledBy(live, owner))) {
				var uid types.UID
				if cur != nil {
					uid = cur.UID
				}
				if err := release(ctx, c, live, uid, r, o.Record); err != nil {
					return resultAfterRelease(released), err
				}
				switch {
				case cur != nil:
					released = fmt.Sprintf("removed the controller reference of %s from %s (it has no controller now)", controllerName(cur), name)
				case o.Record:
					released = fmt.Sprintf("recorded %s as the owner of %s (%s), in place of %s", object.Describe(owner, c.Scheme()), name, formKeys(r.form()), rec.describe(r))
				default:
					released = fmt.Sprintf("removed the record of %s from %s", rec.describe(r), name)
				}
			}
			known = memo{uid: live.GetUID(), rv: live.GetResourceVersion()}
			// A child owner controls is applied without a lock: another
			// writer changing it since the read costs nothing. One it does
			// not control yet (free, recorded only, a stale reference) is
			// locked on the read, so that a child another owner took since
			// is read again and refused, not taken silently.
			lock = memo{}
			if !metav1.IsControlledBy(live, owner) {
				lock = known
			}
			// This client's last answer, newer than a cache behind it.
			// Also of a child the read does not show yet (created after the
			// read one was deleted).
			if m, ok := recall(key); ok && scope.OlderRV(known.rv, m.rv) {
				known = memo{uid: m.uid, rv: m.rv}
			}
		} else if m, ok := recall(key); ok {
			// Not shown yet: the child this client's last answer showed.
			lock, known = memo{}, memo{uid: m.uid, rv: m.rv}
		}
		answer := u.DeepCopy()
		answer.SetResourceVersion(lock.rv)
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(answer), applyOpts...)
		if err == nil {
			op := applyResult(lock, known, answer, released != "")
			if op == controllerutil.OperationResultUpdated && released == "" && !o.Force && !behindOwnAnswer(key, live) && movedByAnother(live, answer, u, fieldManager) {
				// The resourceVersion moved by another writer's change only
				// (judged from a read no older than this client's last
				// answer: an older one does not show what it changed).
				op = controllerutil.OperationResultNone
			}
			if sumErr == nil {
				// child, of the type the informer holds, as answered.
				child.SetUID(answer.GetUID())
				child.SetResourceVersion(answer.GetResourceVersion())
				keep(key, child, memo{uid: answer.GetUID(), rv: answer.GetResourceVersion(), sum: sent})
			}
			if err := answerInto(config, answer, gvk); err != nil {
				return op, fmt.Errorf("ownership: applied %s, but reading the answer failed: %w", name, err)
			}
			return op, nil
		}
		if lock.rv != "" && staleLock(err) {
			drop(key)
			if attempt < maxAttempts {
				if live, err = readForApply(ctx, c, conflictReader, child, name, &lock, err); err != nil {
					return applyFailed(released, err)
				}
				continue
			}
		}
		if lock.rv == "" && live != nil && secondController(err) {
			// Unlocked, on a child the read showed ours: the child under
			// the name is another one now, which another owner controls
			// (ours was deleted and created again since the read). Read it
			// again, and refuse it as another owner's.
			drop(key)
			if attempt < maxAttempts {
				if live, err = readForApply(ctx, c, conflictReader, child, name, &known, err); err != nil {
					return applyFailed(released, err)
				}
				continue
			}
		}
		return applyFailed(released, fmt.Errorf("ownership: applying %s: %w", name, err))
	}
}

// behindOwnAnswer reports whether live, as read, is older than this
// client's last answer for the child at key (false for no live), also
// when that answer is of another child of the name (one the apply created
// after the read one was deleted): resourceVersions are the cluster's,
// they compare across objects.
func behindOwnAnswer(key memKey, live client.Object) bool {
	if live == nil {
		return false
	}
	m, ok := recall(key)
	return ok && scope.OlderRV(live.GetResourceVersion(), m.rv)
}

// applyFailed is the result and error of an apply that failed with err,
// after released, the patch that took the child over ("" for none).
func applyFailed(released string, err error) (controllerutil.OperationResult, error) {
	if released != "" {
		err = fmt.Errorf("ownership: %s, but applying it failed: %w", released, err)
	}
	return resultAfterRelease(released), err
}

// fromConfiguration is what Apply sends of config, as an unstructured
// object: its content without status and the metadata the API server
// owns; and the child it names, an empty object of its kind (of its Go type
// where c's scheme has one) with its namespace and name, to read it into.
func fromConfiguration(c client.Client, owner client.Object, config runtime.ApplyConfiguration) (*unstructured.Unstructured, client.Object, error) {
	bad := func(child, field, reason string) error {
		return &invalidOwnerError{Child: child, Owner: object.Describe(owner, c.Scheme()), Field: field, Reason: reason}
	}
	if v := reflect.ValueOf(config); config == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		// A value would take no answer; a nil one is no configuration.
		return nil, nil, bad(fmt.Sprintf("%T", config), "", "the configuration is nil or not a pointer (pass &config, or the constructor's result)")
	}
	b, err := marshalConfiguration(config)
	if err != nil {
		return nil, nil, bad(fmt.Sprintf("%T", config), "", fmt.Sprintf("it is not JSON: %v", err))
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, nil, bad(fmt.Sprintf("%T", config), "", fmt.Sprintf("it is not a JSON object: %v", err))
	}
	u := &unstructured.Unstructured{Object: m}
	gvk := u.GroupVersionKind()
	desc := strings.TrimSpace(gvk.Kind + " " + client.ObjectKeyFromObject(u).String())
	switch {
	case gvk.Kind == "" || gvk.Version == "":
		return nil, nil, bad(desc, "apiVersion, kind", "the configuration names no kind (build it with its constructor, such as appsv1ac.Deployment(name, namespace))")
	case u.GetName() == "":
		return nil, nil, bad(desc, "metadata.name", "the configuration names no child")
	}
	delete(u.Object, "status")
	for _, f := range serverMetadata {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	var child client.Object
	if typed, err := c.Scheme().New(gvk); err == nil {
		if o, ok := typed.(client.Object); ok {
			child = o
		}
	}
	if child == nil {
		child = &unstructured.Unstructured{}
	}
	child.GetObjectKind().SetGroupVersionKind(gvk)
	child.SetNamespace(u.GetNamespace())
	child.SetName(u.GetName())
	return u, child, nil
}

// withReferences sets on u owner's controller reference ref, beside the
// owner references u sets that are not controller references (the
// caller's other owners), and, when record, the record r in the form it is
// written for a new child, and not the other (a configuration built from a
// child as an earlier Apply answered it may carry it); without record, u
// carries no record.
func withReferences(u *unstructured.Unstructured, ref metav1.OwnerReference, r ownerRecord, record bool) {
	refs := []metav1.OwnerReference{ref}
	for _, o := range u.GetOwnerReferences() {
		if o.UID != ref.UID && (o.Controller == nil || !*o.Controller) {
			refs = append(refs, o)
		}
	}
	u.SetOwnerReferences(refs)
	if record {
		writeRecord(u, r)
		return
	}
	u.SetLabels(withKeysOf(u.GetLabels(), nil, OwnerKindLabel, OwnerNameLabel))
	u.SetAnnotations(withKeysOf(u.GetAnnotations(), nil, ownerAnnotation))
}

// settled reports whether rec, a child's record, is as an apply for r's
// owner leaves it: with record, r's as the apply writes it (see
// recordedOn.current); without, no form of it names another owner, or the
// child is controlled by r's owner already (controlled): a record another
// writer put on a child the owner keeps is not the apply's to remove.
func settled(rec recordedOn, r ownerRecord, record, controlled bool) bool {
	if record {
		return rec.current(r)
	}
	form, _ := rec.other(r)
	return form == "" || controlled
}

// marshalConfiguration is config as JSON; a configuration whose
// marshalling panics (client.ApplyConfigurationFromUnstructured(nil)) is an
// error.
func marshalConfiguration(config runtime.ApplyConfiguration) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("marshalling it panicked: %v", r)
		}
	}()
	return json.Marshal(config)
}

// answerInto replaces config, a pointer, with answer, the API server's, of
// kind gvk, decoded anew: nothing of what config held before stays (a
// pointer it shares with another configuration is not written through).
func answerInto(config runtime.ApplyConfiguration, answer client.Object, gvk schema.GroupVersionKind) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(answer)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk) // a typed object read from a cache may carry none
	if uc, ok := config.(interface{ SetUnstructuredContent(map[string]any) }); ok {
		uc.SetUnstructuredContent(u.Object) // client.ApplyConfigurationFromUnstructured's
		return nil
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	fresh := reflect.New(reflect.TypeOf(config).Elem())
	if err := json.Unmarshal(b, fresh.Interface()); err != nil {
		return err
	}
	reflect.ValueOf(config).Elem().Set(fresh.Elem())
	return nil
}

// movedByAnother reports whether an apply without force whose answer is a
// resourceVersion past the one the call knew changed nothing itself: the
// child read, live, already held every value sent (u) and this field
// manager's applied fields are the same in live and in the answer (a field
// it no longer sets would have left them). The resourceVersion moved by
// another writer's change the read did not show yet. A change of a field
// this manager applied, by another writer's apply since the read, would
// have made this one a conflict (no force), not an answer. Its blind spot:
// a field of ours another writer removed (an Update takes it out of every
// manager's set) after the read, which this apply put back, is taken for
// no change while the read does not show the removal yet.
func movedByAnother(live client.Object, answer *unstructured.Unstructured, u *unstructured.Unstructured, fieldManager string) bool {
	if live == nil || live.GetUID() != answer.GetUID() {
		return false
	}
	before, beforeVersion := appliedFields(live, fieldManager)
	after, afterVersion := appliedFields(answer, fieldManager)
	if before == nil || after == nil || !object.EqualJSON(before, after) || beforeVersion != afterVersion {
		return false
	}
	lm, err := object.ToMapWithoutManagedFields(live)
	return err == nil && keeps(withoutStatus(u.Object), withoutStatus(lm))
}

// readForApply reads the child into a new object of its type (typed: from
// a manager's cache), or nil when there is none. With stale, the lock of
// an apply that answered a conflict, it reads again: through apiReader
// when given (and not refused), else through c until it shows a child
// other than the lock's (backing off; conflict, the apply's error, when it
// does not).
func readForApply(ctx context.Context, c client.Client, apiReader client.Reader, child client.Object, name string, stale *memo, conflict error) (client.Object, error) {
	key := client.ObjectKeyFromObject(child)
	get := func(r client.Reader) (client.Object, error) {
		live := object.EmptyLike(child)
		if err := r.Get(ctx, key, live); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("ownership: reading %s: %w", name, err)
		}
		return live, nil
	}
	var refusal error
	if apiReader != nil && stale != nil {
		live, err := get(apiReader)
		if !refused(apiReader, err) {
			return live, err
		}
		// The API reader may not get this kind: the client, as without it.
		refusal = err
	}
	live, err := get(c)
	if err != nil || stale == nil {
		return live, err
	}
	// The lock failed: the child exists, and not as the lock had it (a
	// child that is gone takes any lock as a create).
	newer := func(live client.Object) bool {
		return live != nil && (live.GetUID() != stale.uid || live.GetResourceVersion() != stale.rv)
	}
	for _, d := range staleReadBackoff {
		if newer(live) {
			return live, nil
		}
		if err := backoff.Sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("ownership: reading %s again: %w", name, err)
		}
		if live, err = get(c); err != nil {
			return nil, err
		}
	}
	if newer(live) {
		return live, nil
	}
	return nil, fmt.Errorf("ownership: applying %s: it changed since it was read, and the client did not show it in %d reads (%s): %w",
		name, len(staleReadBackoff)+1, unseenHint(refusal), conflict)
}

// secondController reports whether err is the API server's refusal of an
// object with two controller references (metadata.ownerReferences, the
// message of apimachinery's ValidateOwnerReferences), not of another fault
// of the owner references (a banned owner's kind, under the same field).
func secondController(err error) bool {
	return slices.ContainsFunc(invalidCauses(err), func(c metav1.StatusCause) bool {
		return c.Field == "metadata.ownerReferences" && strings.Contains(c.Message, "Only one reference can have Controller set to true")
	})
}

// staleLock reports whether err is the conflict of an apply whose
// resourceVersion is no longer the child's (not a conflict with another
// field manager).
func staleLock(err error) bool {
	return apierrors.IsConflict(err) && !apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict)
}

// applyResult says what the API server did with an apply that succeeded,
// locked on lock (create only, or none), of the child known (as read, or
// as this client last saw it; none where lock is create only).
func applyResult(lock, known memo, answer *unstructured.Unstructured, released bool) controllerutil.OperationResult {
	switch {
	case lock.rv == createOnly || answer.GetUID() != known.uid:
		// Only a create makes a child other than the one known.
		return controllerutil.OperationResultCreated
	case released || answer.GetResourceVersion() != known.rv:
		return controllerutil.OperationResultUpdated
	default:
		return controllerutil.OperationResultNone
	}
}

func resultAfterRelease(released string) controllerutil.OperationResult {
	if released != "" {
		return controllerutil.OperationResultUpdated
	}
	return controllerutil.OperationResultNone
}

// release drops the controller reference with the given UID ("": none)
// from live and, with record, records r's owner on it, in r's form and not
// the other; without, it removes each form of the record that names
// another owner and writes none. It patches under optimistic locking, so
// that another owner's reference or record is only replaced by an
// explicit adoption (or a stale reference of the owner's own, by a
// restore). live receives the answer.
func release(ctx context.Context, c client.Client, live client.Object, uid types.UID, r ownerRecord, record bool) error {
	before := live.DeepCopyObject().(client.Object)
	var kept []metav1.OwnerReference
	for _, ref := range live.GetOwnerReferences() {
		if ref.UID != uid {
			kept = append(kept, ref)
		}
	}
	live.SetOwnerReferences(kept)
	switch {
	case record && !recordOf(live).current(r):
		writeRecord(live, r) // a current record is left as it is
	case !record:
		removeOthers(live, r)
	}
	if err := c.Patch(ctx, live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("ownership: adopting %s: %w", object.Describe(live, c.Scheme()), err)
	}
	return nil
}

// appliedFields are the fields fieldManager owns by its applies of the
// object itself (not a subresource) in obj, as its managedFields say,
// decoded (nil: none, or no managedFields), and the apiVersion their
// entry is in.
func appliedFields(obj metav1.Object, fieldManager string) (any, string) {
	for _, f := range obj.GetManagedFields() {
		if isApplied(f, fieldManager) && f.FieldsV1 != nil {
			var v any
			if err := json.Unmarshal(f.FieldsV1.GetRawBytes(), &v); err != nil {
				return nil, f.APIVersion
			}
			return v, f.APIVersion
		}
	}
	return nil, ""
}

// isApplied reports whether f is fieldManager's entry of its applies of
// the object itself.
func isApplied(f metav1.ManagedFieldsEntry, fieldManager string) bool {
	return f.Manager == fieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == ""
}
