package cachewait

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// NewClient wraps c; opts apply to every wait.
func NewClient(c client.Client, opts ...WaitOption) *Client {
	return &Client{Client: c, opts: (&WaitOptions{}).ApplyOptions(opts).withDefaults(),
		pending: map[schema.GroupVersionKind]*kindPending{}}
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
