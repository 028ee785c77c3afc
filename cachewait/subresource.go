package cachewait

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// Status returns a writer for the status subresource that remembers its
// writes too.
func (c *waitingClient) Status() client.SubResourceWriter {
	return &subResourceClient{c: c, w: c.Client.Status()}
}

// SubResource returns a client for the named subresource ("status",
// "scale", ...) that remembers its updates and patches too: of obj, at the
// resourceVersion of the answer (decoded into the subresource body where
// one is given, a Scale say, which carries the object's version).
func (c *waitingClient) SubResource(name string) client.SubResourceClient {
	sc := c.Client.SubResource(name)
	return &subResourceClient{c: c, w: sc, r: sc}
}

type subResourceClient struct {
	c *waitingClient
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
	s.c.record(obj, newWrite(obj, s.c.Scheme(), s.c.opts.CacheOptions))
}
