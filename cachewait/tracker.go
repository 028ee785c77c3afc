package cachewait

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/steadyk8s/steady/internal/observe"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Tracker remembers, per owner, the children written and not yet seen in the
// cache, so that a reconciler can ask without blocking whether the cache has
// caught up for an owner. Make one with [NewTracker]; it is safe for
// concurrent use.
//
// A child counts as caught up as for a client of [NewClient]: written (the cache holds the
// write, or the child is gone), released by the write (the cache no longer
// holds its UID), or deleted (the cache no longer holds its UID, or holds it
// marked for deletion, or holds another object of the name created after
// the delete). The manager's API reader, which [NewTracker] takes, tells a
// child someone else deleted before the cache saw it from one the cache has
// not seen yet, so that it does not stall its owner until the TTL.
type Tracker struct {
	r       client.Reader
	scheme  *runtime.Scheme
	opts    WaitOptions
	mu      sync.Mutex
	pending map[types.UID][]*expectation
	pruned  time.Time
}

// NewTracker returns a Tracker that checks expectations against cl's
// client, which reads the informer cache (the manager's: NewTracker(mgr)),
// asking cl's API reader where the cache alone cannot tell (see
// [WithAPIReader], which replaces it or sets After).
func NewTracker(cl cluster.Cluster, opts ...WaitOption) *Tracker {
	o := applyOptions(opts)
	if o.APIReader == nil {
		o.APIReader = observe.Reader(cl.GetAPIReader(), "cachewait")
	}
	c := cl.GetClient()
	return &Tracker{r: c, scheme: c.Scheme(), opts: o, pending: map[types.UID][]*expectation{}}
}

// Wrote records that child, as the API server answered the write, was
// written for owner.
func (t *Tracker) Wrote(owner, child client.Object) {
	t.add(owner, newWrite(child, t.scheme, t.opts.CacheOptions))
}

// Deleted records that child was deleted for owner. A child that only
// names the object (no UID) counts as deleted once the cache lacks the
// name, holds it marked, or holds an object the API reader shows alive
// after the delete (created after it).
func (t *Tracker) Deleted(owner, child client.Object) {
	t.add(owner, newDelete(child, t.scheme, modeDeleted))
}

func (t *Tracker) add(owner client.Object, e *expectation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prune()
	exps := t.pending[owner.GetUID()]
	for i := len(exps) - 1; i >= 0; i-- {
		if exps[i].uid == e.uid && client.ObjectKeyFromObject(exps[i].obj) == client.ObjectKeyFromObject(e.obj) {
			e.inherit(exps[i]) // the cache may not have seen it yet
			break
		}
	}
	t.pending[owner.GetUID()] = append(exps, e)
}

// prune drops, at most once per TTL, the expectations older than the TTL
// of every owner, so that owners never asked about again (deleted without
// Forget) do not pile up. t.mu is held.
func (t *Tracker) prune() {
	now := time.Now()
	if now.Sub(t.pruned) < t.opts.ttl {
		return
	}
	t.pruned = now
	for owner, exps := range t.pending {
		// A new slice: CaughtUp may be reading the old one unlocked.
		keep := slices.DeleteFunc(slices.Clone(exps), func(e *expectation) bool { return now.Sub(e.at) > t.opts.ttl })
		if len(keep) == 0 {
			delete(t.pending, owner)
		} else if len(keep) < len(exps) {
			t.pending[owner] = keep
		}
	}
}

// CaughtUp reads each pending child of owner from the cache once and forgets
// those it holds. It returns true when the cache has caught up for owner;
// when not, the caller requeues (ctrl.Result{RequeueAfter: 50 *
// time.Millisecond}, say: a cache usually catches up within milliseconds)
// and asks again. A child whose absence the cache may yet undo (it never
// held it) does not hold the owner back, and is checked again by later
// calls.
func (t *Tracker) CaughtUp(ctx context.Context, owner client.Object) (bool, error) {
	t.mu.Lock()
	exps := t.pending[owner.GetUID()]
	t.mu.Unlock()
	states := map[*expectation]state{}
	for _, e := range exps {
		if time.Since(e.at) > t.opts.ttl {
			states[e] = caughtUp
			continue
		}
		st, _, err := e.check(ctx, t.r, t.opts, nil, readScope{})
		if err != nil {
			return false, err
		}
		states[e] = st
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Keep what is still pending, and what was recorded meanwhile.
	var rest []*expectation
	requeue := false
	for _, e := range t.pending[owner.GetUID()] {
		st, checked := states[e]
		if st != caughtUp {
			rest = append(rest, e)
		}
		if !checked || st == waiting {
			requeue = true
		}
	}
	if len(rest) == 0 {
		delete(t.pending, owner.GetUID())
	} else {
		t.pending[owner.GetUID()] = rest
	}
	return !requeue, nil
}

// Forget drops everything recorded for owner (when it is deleted, say).
func (t *Tracker) Forget(owner client.Object) {
	t.mu.Lock()
	delete(t.pending, owner.GetUID())
	t.mu.Unlock()
}
