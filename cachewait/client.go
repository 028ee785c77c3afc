package cachewait

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NoWaitOption is the type of [NoWait].
type NoWaitOption struct{}

// NoWait, passed to a Get or List of a [Client], reads the cache as it is,
// without waiting for earlier writes.
var NoWait = NoWaitOption{}

// ApplyToGet implements client.GetOption; it sets nothing.
func (NoWaitOption) ApplyToGet(*client.GetOptions) {}

// ApplyToList implements client.ListOption; it sets nothing.
func (NoWaitOption) ApplyToList(*client.ListOptions) {}

var (
	_ client.GetOption  = NoWait
	_ client.ListOption = NoWait
	_ client.Client     = &Client{}
)

// Client wraps a cache-reading client (the manager's) so that its reads see
// its own writes: after a create, update, patch or delete through it, a Get
// of that object waits until the cache holds the write, and a List of that
// kind waits for every such write of the kind. Make one with [NewClient].
type Client struct {
	client.Client
	opts    []Option
	mu      sync.Mutex
	pending map[schema.GroupVersionKind]map[client.ObjectKey]expectation
}

// NewClient wraps c; opts apply to every wait.
func NewClient(c client.Client, opts ...Option) *Client {
	return &Client{Client: c, opts: opts, pending: map[schema.GroupVersionKind]map[client.ObjectKey]expectation{}}
}

func (c *Client) record(obj client.Object, deleted bool) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[gvk] == nil {
		c.pending[gvk] = map[client.ObjectKey]expectation{}
	}
	c.pending[gvk][client.ObjectKeyFromObject(obj)] = expectation{obj: obj.DeepCopyObject().(client.Object), deleted: deleted}
}

// await waits for the pending writes of gvk that match keep, forgetting
// those the cache holds.
func (c *Client) await(ctx context.Context, gvk schema.GroupVersionKind, keep func(client.ObjectKey) bool) error {
	c.mu.Lock()
	var todo []expectation
	for k, e := range c.pending[gvk] {
		if keep(k) {
			todo = append(todo, e)
		}
	}
	c.mu.Unlock()
	for _, e := range todo {
		var err error
		if e.deleted {
			err = ForDelete(ctx, c.Client, e.obj, c.opts...)
		} else {
			err = ForWrite(ctx, c.Client, e.obj, c.opts...)
		}
		if err != nil {
			return err
		}
		c.mu.Lock()
		k := client.ObjectKeyFromObject(e.obj)
		if cur, ok := c.pending[gvk][k]; ok && cur.obj == e.obj {
			delete(c.pending[gvk], k)
		}
		c.mu.Unlock()
	}
	return nil
}

func hasNoWait[O any](opts []O) bool {
	for _, o := range opts {
		if _, ok := any(o).(NoWaitOption); ok {
			return true
		}
	}
	return false
}

// Get waits for this client's writes of the object, then reads the cache.
func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !hasNoWait(opts) {
		if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
			if err := c.await(ctx, gvk, func(k client.ObjectKey) bool { return k == key }); err != nil {
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
		gvk, err := apiutil.GVKForObject(list, c.Scheme())
		if err != nil {
			return fmt.Errorf("cachewait: %w", err)
		}
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		if err := c.await(ctx, gvk, func(k client.ObjectKey) bool { return lo.Namespace == "" || k.Namespace == lo.Namespace }); err != nil {
			return err
		}
	}
	return c.Client.List(ctx, list, opts...)
}

// Create creates obj and remembers the write.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	c.record(obj, false)
	return nil
}

// Update updates obj and remembers the write.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	c.record(obj, false)
	return nil
}

// Patch patches obj and remembers the write.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	c.record(obj, false)
	return nil
}

// Delete deletes obj and remembers the deletion of its UID. An object that
// still has finalizers is only marked for deletion: Gets then wait until it
// is really gone.
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	c.record(obj, true)
	return nil
}

// Status returns a writer for the status subresource that remembers its
// writes too.
func (c *Client) Status() client.SubResourceWriter { return &statusWriter{c: c, w: c.Client.Status()} }

type statusWriter struct {
	c *Client
	w client.SubResourceWriter
}

// Create implements client.SubResourceWriter.
func (s *statusWriter) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.w.Create(ctx, obj, sub, opts...)
}

// Update implements client.SubResourceWriter, remembering the write.
func (s *statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.w.Update(ctx, obj, opts...); err != nil {
		return err
	}
	s.c.record(obj, false)
	return nil
}

// Patch implements client.SubResourceWriter, remembering the write.
func (s *statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.w.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	s.c.record(obj, false)
	return nil
}

// Apply implements client.SubResourceWriter.
func (s *statusWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.w.Apply(ctx, obj, opts...)
}
