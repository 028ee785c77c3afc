package cachewait

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tracker remembers, per owner, the children written and not yet seen in the
// cache, so that a reconciler can ask without blocking whether the cache has
// caught up for an owner. Make one with [NewTracker]; it is safe for
// concurrent use.
//
// A child counts as caught up as in [Client]: written (the cache holds the
// write, or the child is gone), released by the write (the cache no longer
// holds its UID), or deleted (the cache no longer holds its UID, or holds it
// marked for deletion). Give [WithAPIReader] so that a child someone else
// deleted before the cache saw it does not stall its owner until the TTL.
type Tracker struct {
	r       client.Reader
	opts    TrackerOptions
	mu      sync.Mutex
	pending map[types.UID][]*expectation
	pruned  time.Time
}

// NewTracker returns a Tracker that checks expectations against r, the
// informer cache.
func NewTracker(r client.Reader, opts ...TrackerOption) *Tracker {
	o := *(&TrackerOptions{}).ApplyOptions(opts)
	if o.Requeue <= 0 {
		o.Requeue = DefaultRequeue
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.APIReaderAfter <= 0 {
		o.APIReaderAfter = DefaultAPIReaderAfter
	}
	return &Tracker{r: r, opts: o, pending: map[types.UID][]*expectation{}}
}

// Wrote records that child, as the API server answered the write, was
// written for owner.
func (t *Tracker) Wrote(owner, child client.Object) { t.add(owner, newWrite(child, nil)) }

// Deleted records that child was deleted for owner.
func (t *Tracker) Deleted(owner, child client.Object) {
	t.add(owner, newDelete(child, nil, modeDeleted))
}

func (t *Tracker) add(owner client.Object, e *expectation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prune()
	if e.mode == modeDeleted {
		for _, prev := range t.pending[owner.GetUID()] {
			if prev.mode == modeWrite && prev.uid == e.uid {
				e.unseen = true // the cache may not have seen it yet
			}
		}
	}
	t.pending[owner.GetUID()] = append(t.pending[owner.GetUID()], e)
}

// prune drops, at most once per TTL, the expectations older than the TTL
// of every owner, so that owners never asked about again (deleted without
// Forget) do not pile up. t.mu is held.
func (t *Tracker) prune() {
	now := time.Now()
	if now.Sub(t.pruned) < t.opts.TTL {
		return
	}
	t.pruned = now
	for owner, exps := range t.pending {
		// A new slice: CaughtUp may be reading the old one unlocked.
		var keep []*expectation
		for _, e := range exps {
			if now.Sub(e.at) <= t.opts.TTL {
				keep = append(keep, e)
			}
		}
		if len(keep) == 0 {
			delete(t.pending, owner)
		} else if len(keep) < len(exps) {
			t.pending[owner] = keep
		}
	}
}

// CaughtUp reads each pending child of owner from the cache once and forgets
// those it holds. It returns zero when the cache has caught up for owner, and
// otherwise how long to wait before asking again (ctrl.Result{RequeueAfter:
// d}).
func (t *Tracker) CaughtUp(ctx context.Context, owner client.Object) (time.Duration, error) {
	t.mu.Lock()
	exps := t.pending[owner.GetUID()]
	t.mu.Unlock()
	wo := WaitOptions{APIReader: t.opts.APIReader, APIReaderAfter: t.opts.APIReaderAfter}
	done := map[*expectation]bool{}
	for _, e := range exps {
		if time.Since(e.at) > t.opts.TTL {
			done[e] = true
			continue
		}
		ok, _, err := e.check(ctx, t.r, wo, nil)
		if err != nil {
			return 0, err
		}
		done[e] = ok
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Keep what is still pending, and what was recorded meanwhile.
	var rest []*expectation
	for _, e := range t.pending[owner.GetUID()] {
		if !done[e] {
			rest = append(rest, e)
		}
	}
	if len(rest) > 0 {
		t.pending[owner.GetUID()] = rest
		return t.opts.Requeue, nil
	}
	delete(t.pending, owner.GetUID())
	return 0, nil
}

// Forget drops everything recorded for owner (when it is deleted, say).
func (t *Tracker) Forget(owner client.Object) {
	t.mu.Lock()
	delete(t.pending, owner.GetUID())
	t.mu.Unlock()
}
