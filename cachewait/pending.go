package cachewait

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// kindPending is what a Client waits for, for one kind.
type kindPending struct {
	objects map[client.ObjectKey]*expectation
	all     []*expectation // DeleteAllOf, by namespace
}

func (c *waitingClient) kind(gvk schema.GroupVersionKind) *kindPending {
	p := c.pending[gvk]
	if p == nil {
		p = &kindPending{objects: map[client.ObjectKey]*expectation{}}
		c.pending[gvk] = p
	}
	return p
}

// record remembers e, the latest expectation for obj's name.
func (c *waitingClient) record(obj client.Object, e *expectation) {
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
	e.inherit(prev)
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
	return prev != nil && e.mode != modeDeleted && e.uid != "" && prev.uid == e.uid && newer(prev.want, e.want)
}

// prune drops, at most once per c.opts.ttl, the expectations older than
// it. c.mu is held.
func (c *waitingClient) prune() {
	now := time.Now()
	if now.Sub(c.pruned) < c.opts.ttl {
		return
	}
	c.pruned = now
	for gvk, p := range c.pending {
		maps.DeleteFunc(p.objects, func(_ client.ObjectKey, e *expectation) bool { return now.Sub(e.at) > c.opts.ttl })
		p.all = slices.DeleteFunc(p.all, func(e *expectation) bool { return now.Sub(e.at) > c.opts.ttl })
		if len(p.objects) == 0 && len(p.all) == 0 {
			delete(c.pending, gvk)
		}
	}
}

// await waits for the pending expectations of gvk that a read of rs
// selects, until deadline, and forgets those caught up for good and those
// that timed out (not those a read's own context cut short). It reads the
// cache in the representation of proto, the read's object. It returns the
// expectations the read may go on with but whose object it must not find
// in an older state (see [waitingClient.stale]).
func (c *waitingClient) await(ctx context.Context, gvk schema.GroupVersionKind, proto client.Object, rs readScope, deadline time.Time) ([]*expectation, error) {
	for {
		todo := c.selected(gvk, rs)
		if len(todo) == 0 {
			return nil, nil
		}
		done, ok, left, err := waitAll(ctx, c.Client, c.opts, c.view(proto, gvk), rs, deadline, todo)
		c.forget(gvk, done)
		switch {
		case err == nil:
			return ok, nil
		case !errors.As(err, new(*TimeoutError)):
			if !unservable(err) {
				return nil, err // keep them: the cache could not be read
			}
			// The cache cannot serve this object at all (a namespace or
			// kind it does not hold): no read through it can be stale for
			// it. Forget it and wait for the others.
			c.forget(gvk, left)
			continue
		case ctx.Err() == nil:
			// Timed out: the caller is told once, later reads do not wait
			// for these again.
			c.forget(gvk, left)
		}
		// Else the caller's context ended before the timeout: the writes
		// not caught up were not given their wait; keep them.
		return nil, err
	}
}

// selected returns the pending expectations of gvk a read of rs selects.
func (c *waitingClient) selected(gvk schema.GroupVersionKind, rs readScope) []*expectation {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[gvk]
	if p == nil {
		return nil
	}
	var todo []*expectation
	for k, e := range p.objects {
		if (rs.namespace == "" || k.Namespace == rs.namespace) && (rs.name == "" || k.Name == rs.name) {
			todo = append(todo, e)
		}
	}
	for _, e := range p.all {
		if rs.namespace == "" || e.namespace == "" || e.namespace == rs.namespace {
			todo = append(todo, e)
		}
	}
	return todo
}

// stale returns the expectation among exps (those await let a read of rs
// go on with) whose object the read's result holds in a state older than
// its write, nil where there is none: the cache moved between the wait and
// the read (it got to an older state of an object it had not seen). found
// holds the result's objects by name.
func (c *waitingClient) stale(ctx context.Context, exps []*expectation, rs readScope, found map[client.ObjectKey]client.Object) (*expectation, client.Object) {
	for _, e := range exps {
		if e.mode == modeDeleteAll {
			continue
		}
		obj := found[client.ObjectKeyFromObject(e.obj)]
		if obj == nil {
			continue
		}
		e.mu.Lock()
		st, _, err := e.decide(ctx, c.opts, rs, obj)
		e.mu.Unlock()
		if err != nil || st == waiting {
			return e, obj
		}
	}
	return nil, nil
}

// staleRead is the error of a read whose result was still stale at its
// deadline, or when ctx ended.
func staleRead(ctx context.Context, e *expectation, obj client.Object, start time.Time) error {
	return &TimeoutError{Object: e.name, Want: e.wantString(), Have: obj.GetResourceVersion(),
		Waited: time.Since(start), Err: cmp.Or(ctx.Err(), context.DeadlineExceeded)}
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
func (c *waitingClient) forget(gvk schema.GroupVersionKind, exps []*expectation) {
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

// pendingWrite is this Client's pending write expectation for obj's name,
// or nil.
func (c *waitingClient) pendingWrite(obj client.Object) *expectation {
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
