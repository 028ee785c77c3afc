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
// caught up for an owner. The zero value is not usable: make one with
// [NewTracker]; it is safe for concurrent use.
type Tracker struct {
	r       client.Reader
	requeue time.Duration
	ttl     time.Duration
	mu      sync.Mutex
	pending map[types.UID][]expectation
}

type expectation struct {
	obj     client.Object // a copy of the write's answer, or of the deleted object
	deleted bool
	at      time.Time
}

// NewTracker returns a Tracker that checks expectations against r, the
// informer cache. CaughtUp suggests requeue after requeue (50ms when zero);
// expectations older than ttl (one minute when zero) are dropped, so that a
// lost event cannot stall an owner for ever.
func NewTracker(r client.Reader, requeue, ttl time.Duration) *Tracker {
	if requeue <= 0 {
		requeue = 50 * time.Millisecond
	}
	if ttl <= 0 {
		ttl = time.Minute
	}
	return &Tracker{r: r, requeue: requeue, ttl: ttl, pending: map[types.UID][]expectation{}}
}

// Wrote records that child, as the API server answered the write, was
// written for owner.
func (t *Tracker) Wrote(owner, child client.Object) { t.add(owner, child, false) }

// Deleted records that child was deleted for owner.
func (t *Tracker) Deleted(owner, child client.Object) { t.add(owner, child, true) }

func (t *Tracker) add(owner, child client.Object, deleted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[owner.GetUID()] = append(t.pending[owner.GetUID()], expectation{
		obj: child.DeepCopyObject().(client.Object), deleted: deleted, at: time.Now()})
}

// CaughtUp reads each pending child of owner from the cache once and forgets
// those it holds. It returns zero when the cache has caught up for owner, and
// otherwise how long to wait before asking again (ctrl.Result{RequeueAfter:
// d}).
func (t *Tracker) CaughtUp(ctx context.Context, owner client.Object) (time.Duration, error) {
	t.mu.Lock()
	exps := t.pending[owner.GetUID()]
	t.mu.Unlock()
	var left []expectation
	for _, e := range exps {
		if time.Since(e.at) > t.ttl {
			continue
		}
		done := writeSeen(e.obj.GetResourceVersion())
		if e.deleted {
			done = deleteSeen(e.obj.GetUID())
		}
		ok, _, err := caughtUp(ctx, t.r, e.obj, done)
		if err != nil {
			return 0, err
		}
		if !ok {
			left = append(left, e)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Keep what was recorded meanwhile, and what is still pending.
	var newer []expectation
	if cur := t.pending[owner.GetUID()]; len(cur) >= len(exps) {
		newer = cur[len(exps):]
	}
	if rest := append(left, newer...); len(rest) > 0 {
		t.pending[owner.GetUID()] = rest
		return t.requeue, nil
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
