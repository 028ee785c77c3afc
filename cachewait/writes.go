package cachewait

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

func dryRun(d []string) bool { return slices.Contains(d, metav1.DryRunAll) }

// Create creates obj and remembers the write.
func (c *waitingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if !dryRun((&client.CreateOptions{}).ApplyOptions(opts).DryRun) {
		e := newWrite(obj, c.Scheme(), c.opts.CacheOptions)
		e.created = true
		c.record(obj, e)
	}
	return nil
}

// Update updates obj and remembers the write.
func (c *waitingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	if !dryRun((&client.UpdateOptions{}).ApplyOptions(opts).DryRun) {
		c.record(obj, newWrite(obj, c.Scheme(), c.opts.CacheOptions))
	}
	return nil
}

// Patch patches obj and remembers the write.
func (c *waitingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	if !dryRun((&client.PatchOptions{}).ApplyOptions(opts).DryRun) {
		c.record(obj, newWrite(obj, c.Scheme(), c.opts.CacheOptions))
	}
	return nil
}

// Apply applies obj (server-side) and remembers the write, read from the
// answer the client decoded into obj.
func (c *waitingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := c.Client.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	if !dryRun((&client.ApplyOptions{}).ApplyOptions(opts).DryRun) {
		c.recordApplied(obj)
	}
	return nil
}

// recordApplied remembers an Apply, whose answer is in the apply
// configuration: in the typed representation where the scheme knows the
// kind, unstructured otherwise.
func (c *waitingClient) recordApplied(ac runtime.ApplyConfiguration) {
	data, err := json.Marshal(ac)
	if err != nil {
		return
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil || u.GetResourceVersion() == "" {
		return
	}
	var obj client.Object = u
	if typed, err := c.Scheme().New(u.GroupVersionKind()); err == nil {
		if t, ok := typed.(client.Object); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err == nil {
				obj = t
			}
		}
	}
	c.record(obj, newWrite(obj, c.Scheme(), c.opts.CacheOptions))
}

// Delete deletes obj and remembers the deletion: later reads wait until the
// cache no longer holds the object deleted, holds it marked for deletion
// (another finalizer keeps it), or holds a later object of the name.
//
// An obj that only names the object, without client.Preconditions, is
// deleted with a UID precondition, so that what reads wait for is what the
// API server deleted: the UID of this Client's pending write of it, else of
// what the cache holds of the name, read in the representation of this
// Client's last read of the kind (so that no other informer starts; no
// request). Where another object has taken the name meanwhile (409
// Conflict), the API reader tells which, and the delete is made again, at
// most three times. Where nothing is known of the name, it is deleted by
// name, and reads wait until the cache lacks the name, holds it marked, or
// holds an object the API reader shows alive after the delete (one created
// since).
func (c *waitingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	o := (&client.DeleteOptions{}).ApplyOptions(opts)
	if obj.GetUID() == "" && o.Preconditions == nil && !dryRun(o.DryRun) {
		return c.deleteNamed(ctx, obj, opts)
	}
	del := obj
	if obj.GetUID() == "" {
		// The caller's preconditions pick the object: the UID from them,
		// else from this Client's pending write of it.
		del = obj.DeepCopyObject().(client.Object)
		if o.Preconditions.UID != nil {
			del.SetUID(*o.Preconditions.UID)
		} else if e := c.pendingWrite(obj); e != nil {
			del.SetUID(e.uid)
			del.SetResourceVersion(e.want)
		}
	}
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	if !dryRun(o.DryRun) {
		c.record(obj, newDelete(del, c.Scheme(), modeDeleted))
	}
	return nil
}

// deleteNamed deletes the object obj names (see [waitingClient.Delete]).
func (c *waitingClient) deleteNamed(ctx context.Context, obj client.Object, opts []client.DeleteOption) error {
	target, seen := c.target(ctx, obj)
	for attempt := 0; target != nil && attempt < 3; attempt++ {
		uid := target.GetUID()
		err := c.Client.Delete(ctx, obj, append(slices.Clip(opts), client.Preconditions{UID: &uid})...)
		if err == nil {
			del := obj.DeepCopyObject().(client.Object)
			del.SetUID(uid)
			del.SetResourceVersion(target.GetResourceVersion())
			del.SetLabels(target.GetLabels())
			e := newDelete(del, c.Scheme(), modeDeleted)
			e.seenUID, e.unseen = seen, !seen
			c.record(obj, e)
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		// Another object has the name: which one, the API server tells.
		target, seen = c.live(ctx, obj), false
	}
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	c.record(obj, newDelete(obj, c.Scheme(), modeDeleted))
	return nil
}

// target returns what is known of the object obj names, without a
// request: this Client's pending write of it, else what the cache holds
// of the name, read in the representation of this Client's last read of
// the kind; and whether the cache was seen holding it. It returns nil
// where neither knows it.
func (c *waitingClient) target(ctx context.Context, obj client.Object) (client.Object, bool) {
	if e := c.pendingWrite(obj); e != nil {
		t := object.EmptyLike(obj)
		e.mu.Lock()
		defer e.mu.Unlock()
		t.SetUID(e.uid)
		t.SetResourceVersion(e.want)
		t.SetLabels(e.labels)
		return t, e.seenUID
	}
	gvk, err := object.GVK(obj, c.Scheme())
	if err != nil {
		return nil, false
	}
	cached := c.readView(gvk)
	if cached == nil || c.Client.Get(ctx, client.ObjectKeyFromObject(obj), cached) != nil {
		return nil, false
	}
	return cached, true
}

// live reads the object obj names through the API reader; nil where there
// is none, the object is not found or the read fails (the delete then
// goes by name).
func (c *waitingClient) live(ctx context.Context, obj client.Object) client.Object {
	if c.opts.APIReader == nil {
		return nil
	}
	l := object.New(obj)
	if c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), l) != nil {
		return nil
	}
	return l
}

// DeleteAllOf deletes the objects of obj's kind that opts select and
// remembers it: later Lists of that kind (and Gets) in that namespace wait
// until the cache holds none of them unmarked (see [NewClient]).
func (c *waitingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	at := time.Now()
	if err := c.Client.DeleteAllOf(ctx, obj, opts...); err != nil {
		return err
	}
	o := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	if dryRun(o.DryRun) {
		return nil
	}
	gvk, err := object.GVK(obj, c.Scheme())
	if err != nil {
		return nil
	}
	sel := cmp.Or(o.LabelSelector, labels.Everything())
	newList, err := c.listFor(obj, gvk)
	if err != nil {
		return nil
	}
	e := newDeleteAll(object.New(obj), gvk.Kind, o.Namespace, sel, newList, at)
	c.mu.Lock()
	p := c.kind(gvk)
	p.all = append(p.all, e)
	c.mu.Unlock()
	return nil
}
