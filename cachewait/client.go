package cachewait

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// NoWait, passed to a Get or List of a [Client] (cachewait.NoWait{}), reads
// the cache as it is, without waiting for earlier writes.
type NoWait struct{}

// ApplyToGet implements client.GetOption; it sets nothing.
func (NoWait) ApplyToGet(*client.GetOptions) {}

// ApplyToList implements client.ListOption; it sets nothing.
func (NoWait) ApplyToList(*client.ListOptions) {}

var (
	_ client.GetOption         = NoWait{}
	_ client.ListOption        = NoWait{}
	_ client.Client            = &Client{}
	_ client.SubResourceClient = &subResourceClient{}
)

// Client wraps a cache-reading client (the manager's) so that its reads see
// its own writes: after a create, update, patch, apply (also of the status
// or another subresource, through Status() or SubResource()),
// delete or delete-all-of through it, a Get of that object waits until the
// cache holds the write, and a List of that kind (in the listed namespace)
// waits for every such write of the kind. Make one with [NewClient].
//
// What counts as caught up:
//
//   - a write: the cache holds the object at the written resourceVersion or
//     newer, or the object is gone (see [ForWrite]; give [WithAPIReader] so
//     that an object deleted by someone else is recognised as gone rather
//     than waited for until the timeout);
//   - a write that removed the last finalizer of an object marked for
//     deletion (which releases it): the cache no longer holds that UID;
//   - a Delete: the cache no longer holds that UID, or holds it marked for
//     deletion (another finalizer keeps it; a live GET would show the same
//     deletionTimestamp);
//   - a DeleteAllOf: the cache holds no object of that kind in that
//     namespace matching its label selector that is not marked for deletion,
//     except objects this Client wrote afterwards and, with
//     [WithAPIReader], objects the API server shows alive and unmarked (made
//     later, or excluded by a field selector).
//
// Writes with client.DryRunAll are not remembered, nor are failed writes.
// An expectation is remembered per object name with the written UID, so a
// recreated object does not inherit it; one that timed out is dropped after
// the read that got the [*TimeoutError], so a lost event costs one timeout,
// never more (one that a read's own context cut short is kept). A write
// the cache cannot serve at all (in a namespace or of a kind it does not
// hold) is forgotten when a read first meets it; other errors reading the
// cache are returned and the write kept. A read waits
// in its own representation (typed, unstructured, metadata-only), whatever
// the write's: each has its own informer, and one may lag another, so a
// typed Get after an unstructured Patch waits for the typed informer.
//
// Expectations no read has waited for are dropped after [DefaultTTL], so
// that writes never read back through the Client do not pile up.
type Client struct {
	client.Client
	opts    WaitOptions
	mu      sync.Mutex
	pending map[schema.GroupVersionKind]*kindPending
	pruned  time.Time
}

// kindPending is what a Client waits for, for one kind.
type kindPending struct {
	objects map[client.ObjectKey]*expectation
	all     []*expectation // DeleteAllOf, by namespace
}

// NewClient wraps c; opts apply to every wait.
func NewClient(c client.Client, opts ...WaitOption) *Client {
	return &Client{Client: c, opts: (&WaitOptions{}).ApplyOptions(opts).withDefaults(),
		pending: map[schema.GroupVersionKind]*kindPending{}}
}

func (c *Client) kind(gvk schema.GroupVersionKind) *kindPending {
	p := c.pending[gvk]
	if p == nil {
		p = &kindPending{objects: map[client.ObjectKey]*expectation{}}
		c.pending[gvk] = p
	}
	return p
}

// record remembers e, the latest expectation for obj's name.
func (c *Client) record(obj client.Object, e *expectation) {
	gvk, err := object.GVK(obj, c.Scheme())
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prune()
	p := c.kind(gvk)
	k := client.ObjectKeyFromObject(obj)
	prev := p.objects[k]
	if e.mode == modeDeleted && prev != nil && prev.mode == modeWrite && prev.uid == e.uid {
		e.unseen = true // the cache may not have seen it yet
	}
	if !olderWrite(e, prev) {
		p.objects[k] = e
	}
	if e.mode == modeWrite {
		// Written after a DeleteAllOf: not one it removed.
		for _, all := range p.all {
			all.mu.Lock()
			all.exempt[obj.GetUID()] = true
			all.mu.Unlock()
		}
	}
}

// olderWrite reports whether e is a write of the same object as prev at an
// older resourceVersion: writers on several goroutines record their answers
// in any order, and the newer expectation must stay.
func olderWrite(e, prev *expectation) bool {
	if prev == nil || e.mode == modeDeleted || e.uid == "" || prev.uid != e.uid {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(e.want, prev.want)
	return err == nil && c < 0
}

// prune drops, at most once per DefaultTTL, the expectations older than
// it. c.mu is held.
func (c *Client) prune() {
	now := time.Now()
	if now.Sub(c.pruned) < DefaultTTL {
		return
	}
	c.pruned = now
	for gvk, p := range c.pending {
		for k, e := range p.objects {
			if now.Sub(e.at) > DefaultTTL {
				delete(p.objects, k)
			}
		}
		p.all = slices.DeleteFunc(p.all, func(e *expectation) bool { return now.Sub(e.at) > DefaultTTL })
		if len(p.objects) == 0 && len(p.all) == 0 {
			delete(c.pending, gvk)
		}
	}
}

// await waits for the pending expectations of gvk that match keep and
// forgets those the cache holds, and those that timed out (not those a
// read's own context cut short). It reads the cache in the representation
// of proto, the read's object.
func (c *Client) await(ctx context.Context, gvk schema.GroupVersionKind, proto client.Object, namespace string, keep func(client.ObjectKey) bool) error {
	for {
		c.mu.Lock()
		var todo []*expectation
		if p := c.pending[gvk]; p != nil {
			for k, e := range p.objects {
				if keep(k) {
					todo = append(todo, e)
				}
			}
			for _, e := range p.all {
				if namespace == "" || e.namespace == "" || e.namespace == namespace {
					todo = append(todo, e)
				}
			}
		}
		c.mu.Unlock()
		if len(todo) == 0 {
			return nil
		}
		failed, err := waitAll(ctx, c.Client, c.opts, c.view(proto, gvk), todo)
		if err != nil && !IsTimeout(err) {
			if !unservable(err) {
				return err // keep them: the cache could not be read
			}
			// The cache cannot serve this object at all (a namespace or
			// kind it does not hold): no read through it can be stale for
			// it. Forget it and wait for the others.
			c.forget(gvk, failed)
			continue
		}
		if err != nil && ctx.Err() != nil {
			// The caller's context ended before the timeout: the writes
			// not caught up were not given their wait; keep them.
			c.forget(gvk, slices.DeleteFunc(todo, func(e *expectation) bool { return slices.Contains(failed, e) }))
			return err
		}
		// Forget what caught up, and what timed out: the caller is told once.
		c.forget(gvk, todo)
		return err
	}
}

// view is the representation of proto (the read's object, nil: unknown),
// of kind gvk, for waits; nil (each write's own) where it is unknown.
func (c *Client) view(proto client.Object, gvk schema.GroupVersionKind) *view {
	if proto == nil {
		return nil
	}
	newList, err := c.listFor(proto, gvk)
	if err != nil {
		return nil
	}
	return &view{newList: newList, newObj: func() client.Object {
		obj := object.New(proto)
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return obj
	}}
}

// itemOf returns an empty object of list's representation, of kind gvk,
// or nil where the scheme does not know it.
func (c *Client) itemOf(list client.ObjectList, gvk schema.GroupVersionKind) client.Object {
	switch list.(type) {
	case *unstructured.UnstructuredList:
		return &unstructured.Unstructured{}
	case *metav1.PartialObjectMetadataList:
		return &metav1.PartialObjectMetadata{}
	}
	obj, err := c.Scheme().New(gvk)
	if err != nil {
		return nil
	}
	o, _ := obj.(client.Object)
	return o
}

// unservable reports whether err, from a cache read (not the API reader),
// says the cache cannot serve the object at all, rather than not now: it
// is neither an API status, nor the cache not started yet, nor the context
// ending.
func unservable(err error) bool {
	var fromCache cacheError
	var status apierrors.APIStatus
	var notStarted *cache.ErrCacheNotStarted
	return errors.As(err, &fromCache) && !errors.As(err, &status) && !errors.As(err, &notStarted) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// forget drops exps from the pending expectations of gvk, unless a newer
// one replaced them.
func (c *Client) forget(gvk schema.GroupVersionKind, exps []*expectation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[gvk]
	if p == nil {
		return // pruned meanwhile
	}
	for _, e := range exps {
		if e.mode == modeDeleteAll {
			p.all = slices.DeleteFunc(p.all, func(x *expectation) bool { return x == e })
			continue
		}
		k := client.ObjectKeyFromObject(e.obj)
		if p.objects[k] == e {
			delete(p.objects, k)
		}
	}
}

// Get waits for this client's writes of the object, then reads the cache.
func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !hasNoWait(opts) {
		if gvk, err := object.GVK(obj, c.Scheme()); err == nil {
			if err := c.await(ctx, gvk, obj, key.Namespace, func(k client.ObjectKey) bool { return k == key }); err != nil {
				return err
			}
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// List waits for this client's writes of the list's kind (in the listed
// namespace), then reads the cache.
func (c *Client) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !hasNoWait(opts) {
		gvk, err := object.GVK(list, c.Scheme())
		if err != nil {
			return fmt.Errorf("cachewait: %w", err)
		}
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		if err := c.await(ctx, gvk, c.itemOf(list, gvk), lo.Namespace, func(k client.ObjectKey) bool {
			return lo.Namespace == "" || k.Namespace == lo.Namespace
		}); err != nil {
			return err
		}
	}
	return c.Client.List(ctx, list, opts...)
}

func hasNoWait[O any](opts []O) bool {
	for _, o := range opts {
		if _, ok := any(o).(NoWait); ok {
			return true
		}
	}
	return false
}

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

// listFor returns a constructor of empty lists of obj's kind, in obj's
// representation.
func (c *Client) listFor(obj client.Object, gvk schema.GroupVersionKind) (func() client.ObjectList, error) {
	lgvk := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	switch obj.(type) {
	case *unstructured.Unstructured:
		return func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(lgvk)
			return l
		}, nil
	case *metav1.PartialObjectMetadata:
		return func() client.ObjectList {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(lgvk)
			return l
		}, nil
	}
	if _, err := c.Scheme().New(lgvk); err != nil {
		return nil, err
	}
	return func() client.ObjectList {
		l, _ := c.Scheme().New(lgvk)
		return l.(client.ObjectList)
	}, nil
}

// Status returns a writer for the status subresource that remembers its
// writes too.
func (c *Client) Status() client.SubResourceWriter {
	return &subResourceClient{c: c, w: c.Client.Status()}
}

// SubResource returns a client for the named subresource ("status",
// "scale", ...) that remembers its updates and patches too: of obj, at the
// resourceVersion of the answer (decoded into the subresource body where
// one is given, a Scale say, which carries the object's version).
func (c *Client) SubResource(name string) client.SubResourceClient {
	sc := c.Client.SubResource(name)
	return &subResourceClient{c: c, w: sc, r: sc}
}

type subResourceClient struct {
	c *Client
	w client.SubResourceWriter
	r client.SubResourceReader // nil for Status()
}

// Get implements client.SubResourceReader.
func (s *subResourceClient) Get(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceGetOption) error {
	return s.r.Get(ctx, obj, sub, opts...)
}

// Create implements client.SubResourceWriter. Nothing is remembered: a
// subresource create (eviction, binding, token) does not write the object.
func (s *subResourceClient) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.w.Create(ctx, obj, sub, opts...)
}

// Update implements client.SubResourceWriter, remembering the write.
func (s *subResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.w.Update(ctx, obj, opts...); err != nil {
		return err
	}
	if o := (&client.SubResourceUpdateOptions{}).ApplyOptions(opts); !dryRun(o.DryRun) {
		s.record(obj, o.SubResourceBody)
	}
	return nil
}

// Patch implements client.SubResourceWriter, remembering the write.
func (s *subResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.w.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	if o := (&client.SubResourcePatchOptions{}).ApplyOptions(opts); !dryRun(o.DryRun) {
		s.record(obj, o.SubResourceBody)
	}
	return nil
}

// Apply implements client.SubResourceWriter, remembering the write (not
// one with a subresource body, whose answer is not the object).
func (s *subResourceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := s.w.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	if o := (&client.SubResourceApplyOptions{}).ApplyOpts(opts); !dryRun(o.DryRun) && o.SubResourceBody == nil {
		s.c.recordApplied(obj)
	}
	return nil
}

// record remembers a write of obj whose answer was decoded into body, or
// into obj where body is nil.
func (s *subResourceClient) record(obj, body client.Object) {
	if body != nil {
		if body.GetResourceVersion() == "" || (body.GetUID() != "" && obj.GetUID() != "" && body.GetUID() != obj.GetUID()) {
			return
		}
		answer := object.EmptyLike(obj)
		answer.SetUID(body.GetUID())
		answer.SetResourceVersion(body.GetResourceVersion())
		obj = answer
	}
	s.c.record(obj, newWrite(obj, s.c.Scheme()))
}

// pendingWrite is this Client's pending write expectation for obj's name,
// or nil.
func (c *Client) pendingWrite(obj client.Object) *expectation {
	gvk, err := object.GVK(obj, c.Scheme())
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[gvk]; p != nil {
		if e := p.objects[client.ObjectKeyFromObject(obj)]; e != nil && e.mode == modeWrite {
			return e
		}
	}
	return nil
}
