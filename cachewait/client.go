package cachewait

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
)

var (
	_ client.Client            = &waitingClient{}
	_ client.SubResourceClient = &subResourceClient{}
)

// Client wraps a cache-reading client (the manager's) so that its reads see
// its own writes: after a create, update, patch, apply (also of the status
// or another subresource, through Status() or SubResource()),
// delete or delete-all-of through it, a Get of that object waits until the
// cache holds the write, and a List of that kind waits for every such write
// it can select (in the listed namespace; with a label selector, of an
// object that matches it as written or as the cache holds it). Make one
// with [NewClient].
//
// What counts as caught up (docs/cachewait.md has the details and the
// costs):
//
//   - a write: the cache holds the object at the written resourceVersion or
//     newer, or the object is gone (the manager's API reader tells an
//     object deleted by someone else from one the cache has not seen yet,
//     with one GET once the cache has lagged After);
//   - a write that removed the last finalizer of an object marked for
//     deletion (which releases it): the cache no longer holds that UID;
//   - a write the cache cannot hold, with [WithCacheOptions]: the cache
//     does not hold the object (it dropped it, or never had it);
//   - a Delete: the cache no longer holds that UID, holds it marked for
//     deletion (another finalizer keeps it; a live GET would show the same
//     deletionTimestamp), or holds a newer object of the name; a Delete of
//     an object named only is made with a UID precondition (see
//     [waitingClient.Delete]);
//   - a DeleteAllOf: the cache holds no object of that kind in that
//     namespace matching its label selector that is not marked for deletion,
//     except objects this Client wrote afterwards and objects the API server
//     shows alive and unmarked (made later, or excluded by a field
//     selector), asked with one LIST.
//
// Writes with client.DryRunAll are not remembered, nor are failed writes.
// An expectation is remembered per object name with the written UID, so a
// recreated object does not inherit it; one that timed out is dropped after
// the read that got the [*TimeoutError], so a lost event costs one timeout,
// never more (one that a read's own context cut short is kept). One that a
// read could go on with although the cache was not seen past it (the object
// absent, never seen, and gone live) is kept, and the results of later
// reads are checked against it. A write the cache cannot serve at all (in a
// namespace or of a kind it does not hold) is forgotten when a read first
// meets it; other errors reading the cache are returned and the write kept.
// A read waits in its own representation (typed, unstructured,
// metadata-only), whatever the write's: each has its own informer, and one
// may lag another, so a typed Get after an unstructured Patch waits for the
// typed informer.
//
// Expectations are dropped after a minute (defaultTTL), so that writes
// never read back through the Client do not pile up.
type waitingClient struct {
	client.Client
	opts    WaitOptions
	mu      sync.Mutex
	pending map[schema.GroupVersionKind]*kindPending
	views   map[schema.GroupVersionKind]client.Object // the representation of the last read of each kind
	pruned  time.Time
}

// NewClient wraps cl's client (the manager's: NewClient(mgr)); opts apply
// to every wait. The waits ask cl's API reader where the cache alone
// cannot tell (see [WithAPIReader], which replaces it or sets After).
//
// After a create, update, patch, apply (also of the status or another
// subresource), delete or DeleteAllOf through the returned client, a Get
// of that object and a List that can select it wait until the cache holds
// the write; dry runs and failed writes are not remembered. The guide,
// docs/cachewait.md in the repository, has what counts as caught up for
// each and what it costs.
func NewClient(cl cluster.Cluster, opts ...WaitOption) client.Client {
	o := applyOptions(opts)
	if o.APIReader == nil {
		o.APIReader = observe.Reader(cl.GetAPIReader(), "cachewait")
	}
	return &waitingClient{Client: cl.GetClient(), opts: o,
		pending: map[schema.GroupVersionKind]*kindPending{}, views: map[schema.GroupVersionKind]client.Object{}}
}

// Get waits for this client's writes of the object, then reads the cache.
func (c *waitingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := object.GVK(obj, c.Scheme())
	if err != nil {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	c.noteView(gvk, obj)
	return c.read(ctx, gvk, obj, readScope{namespace: key.Namespace, name: key.Name},
		func() error { return c.Client.Get(ctx, key, obj, opts...) },
		func() map[client.ObjectKey]client.Object { return map[client.ObjectKey]client.Object{key: obj} })
}

// List waits for this client's writes of the list's kind that the list
// can select (in the listed namespace, matching its label selector as
// written or as the cache holds them), then reads the cache.
func (c *waitingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := object.GVK(list, c.Scheme())
	if err != nil {
		return fmt.Errorf("cachewait: %w", err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	item := c.itemOf(list, gvk)
	c.noteView(gvk, item)
	return c.read(ctx, gvk, item, readScope{namespace: lo.Namespace, labels: lo.LabelSelector},
		func() error { return c.Client.List(ctx, list, opts...) },
		func() map[client.ObjectKey]client.Object { return byKey(list) })
}

// byKey returns list's items by name.
func byKey(list client.ObjectList) map[client.ObjectKey]client.Object {
	items, _ := meta.ExtractList(list)
	m := make(map[client.ObjectKey]client.Object, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			m[client.ObjectKeyFromObject(obj)] = obj
		}
	}
	return m
}

// read waits for this client's writes of gvk that a read of rs selects,
// in the representation of proto (the read's object, nil: unknown), then
// reads with read. Where the read's result (result returns its objects
// by name) holds one of them older than its write, it waits and reads
// again, until the timeout.
func (c *waitingClient) read(ctx context.Context, gvk schema.GroupVersionKind, proto client.Object, rs readScope, read func() error, result func() map[client.ObjectKey]client.Object) error {
	start := time.Now()
	deadline, pause := start.Add(c.opts.Timeout), c.opts.initialBackoff
	for {
		ok, err := c.await(ctx, gvk, proto, rs, deadline)
		if err != nil {
			return err
		}
		if err := read(); err != nil || len(ok) == 0 {
			return err
		}
		e, old := c.stale(ctx, ok, rs, result())
		switch {
		case e == nil:
			return nil
		case time.Now().After(deadline) || backoff.Sleep(ctx, pause) != nil:
			return staleRead(ctx, e, old, start)
		}
		pause = min(pause*2, c.opts.maxBackoff)
	}
}

// noteView remembers that this Client reads gvk in proto's representation
// (nil: unknown): its informer runs, so a Delete by name can look the
// object up in it without starting another.
func (c *waitingClient) noteView(gvk schema.GroupVersionKind, proto client.Object) {
	if proto == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.views[gvk] = object.New(proto)
}

// readView returns an empty object of gvk in the representation this
// Client last read it in, or nil where it has not read gvk.
func (c *waitingClient) readView(gvk schema.GroupVersionKind) client.Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	if proto := c.views[gvk]; proto != nil {
		obj := object.New(proto)
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return obj
	}
	return nil
}

// view is the representation of proto (the read's object, nil: unknown),
// of kind gvk, for waits; nil (each write's own) where it is unknown.
func (c *waitingClient) view(proto client.Object, gvk schema.GroupVersionKind) *view {
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
func (c *waitingClient) itemOf(list client.ObjectList, gvk schema.GroupVersionKind) client.Object {
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

// listFor returns a constructor of empty lists of obj's kind, in obj's
// representation.
func (c *waitingClient) listFor(obj client.Object, gvk schema.GroupVersionKind) (func() client.ObjectList, error) {
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
