package cachewait

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

func dryRun(d []string) bool { return slices.Contains(d, metav1.DryRunAll) }

// Create creates obj and remembers the write.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if !dryRun((&client.CreateOptions{}).ApplyOptions(opts).DryRun) {
		c.record(obj, newWrite(obj, c.Scheme()))
	}
	return nil
}

// Update updates obj and remembers the write.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	if !dryRun((&client.UpdateOptions{}).ApplyOptions(opts).DryRun) {
		c.record(obj, newWrite(obj, c.Scheme()))
	}
	return nil
}

// Patch patches obj and remembers the write.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	if !dryRun((&client.PatchOptions{}).ApplyOptions(opts).DryRun) {
		c.record(obj, newWrite(obj, c.Scheme()))
	}
	return nil
}

// Apply applies obj (server-side) and remembers the write, read from the
// answer the client decoded into obj.
func (c *Client) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
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
func (c *Client) recordApplied(ac runtime.ApplyConfiguration) {
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
	c.record(obj, newWrite(obj, c.Scheme()))
}

// Delete deletes obj and remembers the deletion of its UID: later reads wait
// until the cache no longer holds it, or holds it marked for deletion. An
// obj that only names the object takes the UID from client.Preconditions or
// from this Client's pending write of it; without either, reads wait until
// the cache lacks the name or holds it marked for deletion.
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	o := (&client.DeleteOptions{}).ApplyOptions(opts)
	del := obj
	if obj.GetUID() == "" {
		// Named only: the UID from the preconditions, else from this
		// Client's pending write of it, so that the deletion mark can be
		// told from the object. (Reading the cache here could start an
		// informer.)
		del = obj.DeepCopyObject().(client.Object)
		if o.Preconditions != nil && o.Preconditions.UID != nil {
			del.SetUID(*o.Preconditions.UID)
		} else if e := c.pendingWrite(obj); e != nil {
			del.SetUID(e.uid)
			del.SetResourceVersion(e.want)
		}
	}
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	if dryRun(o.DryRun) {
		return nil
	}
	e := newDelete(del, c.Scheme(), modeDeleted)
	c.record(obj, e)
	return nil
}

// DeleteAllOf deletes the objects of obj's kind that opts select and
// remembers it: later Lists of that kind (and Gets) in that namespace wait
// until the cache holds none of them unmarked (see [Client]).
func (c *Client) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
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
	sel := o.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	newList, err := c.listFor(obj, gvk)
	if err != nil {
		return nil
	}
	e := &expectation{obj: object.New(obj), kind: gvk.Kind, mode: modeDeleteAll, at: at,
		name: strings.TrimSpace(gvk.Kind + " " + o.Namespace), namespace: o.Namespace, selector: sel,
		newList: newList, exempt: map[types.UID]bool{}}
	c.mu.Lock()
	p := c.kind(gvk)
	p.all = append(p.all, e)
	c.mu.Unlock()
	return nil
}
