package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// MaxAttempts bounds the writes of one part (status, or the rest) when
// other writers keep changing the object.
const MaxAttempts = 11

// maxStaleReads bounds, per Patch, the re-reads through a client that may
// be a lagging cache which return the state that just conflicted; with the
// backoff below they span about 2.3 seconds.
const maxStaleReads = 8

// pauseBefore is the pause before the i-th repeated read (i from 0).
func pauseBefore(i int) time.Duration {
	d := 10 * time.Millisecond << min(i, 7)
	return min(d, time.Second)
}

// write sends p, retrying on conflicts, and returns the API server's
// answer (nil when there was nothing left to send), or gone.
func (w *Writer) write(ctx context.Context, obj client.Object, st *state, p *part, o Options, res *Result) (client.Object, bool, error) {
	for attempt := 1; ; attempt++ {
		latest, err := st.latest()
		if err != nil {
			return nil, false, err
		}
		var owned []map[string]any
		if len(p.drops) > 0 {
			owned = st.fieldSets()
		}
		body, lists, stale, err := p.body(latest, owned, st.typ, o)
		if err != nil {
			return nil, false, err
		}
		if stale != "" {
			res.Stale = stale
			return nil, false, nil
		}
		if len(body) == 0 {
			return nil, false, nil
		}
		if st.uid != "" {
			setPrecondition(body, "uid", st.uid)
		}
		// The status subresource takes metadata from the stored object, so
		// a uid in its patch is never compared: only a resourceVersion lock
		// keeps a status write off an object recreated under the name.
		if lists || o.OptimisticLock || (p.status && st.uid != "") {
			setPrecondition(body, "resourceVersion", st.rv)
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, false, err
		}
		target := object.EmptyLike(obj)
		patch := client.RawPatch(types.MergePatchType, data)
		if p.status {
			err = w.Client.Status().Patch(ctx, target, patch)
		} else {
			err = w.Client.Patch(ctx, target, patch)
		}
		if err == nil {
			w.State.RecordWrite(w.Key, target)
			if p.status || p.fallback {
				res.StatusBase, res.StatusAnswer = latest, target
			}
			st.set(target)
			return target, false, nil
		}
		switch {
		case apierrors.IsNotFound(err) && p.status:
			// Gone, or a kind without a status subresource: then status is
			// written with the object, in one write with the rest (a
			// NotFound there is gone).
			p.status, p.fallback = false, true
			if r := p.rest; r != nil {
				maps.Copy(p.diff, r.diff)
				p.lists = append(p.lists, r.lists...)
				p.drops = append(p.drops, r.drops...)
				r.merged = true
			}
			continue
		case apierrors.IsNotFound(err):
			return nil, true, nil
		case st.uid != "" && uidRefused(err):
			// The uid precondition: the object under the name is another
			// one (the API server says so; a lagging cache may not yet).
			return nil, true, nil
		case apierrors.IsConflict(err):
			// Someone wrote meanwhile.
			if o.OptimisticLock || attempt >= MaxAttempts {
				if gone, rerr := w.reread(ctx, obj, st, false); gone && rerr == nil {
					return nil, true, nil
				}
				return nil, false, err
			}
			if gone, rerr := w.reread(ctx, obj, st, true); gone || rerr != nil {
				return nil, gone, rerr
			}
		default:
			if outcomeUnknown(err) {
				return nil, false, unsureError{err}
			}
			return nil, false, err
		}
	}
}

// setPrecondition sets metadata.<field> of the merge patch body (its own
// maps) to value, adding the metadata where body has none (or a null).
func setPrecondition(body map[string]any, field, value string) {
	md, ok := body["metadata"].(map[string]any)
	if !ok {
		md = make(map[string]any, 2)
		body["metadata"] = md
	}
	md[field] = value
}

// reread reads the object again into st. NotFound or another UID is gone,
// except through a reader that may lag (the client, when no API reader was
// given): there a NotFound, or an earlier incarnation of the name (another
// UID at an older resourceVersion), may be the cache not holding our object
// yet, so it is not taken for gone; only a write's NotFound, a newer
// incarnation, or the API reader's answer is. When stale is set and the
// read returns the resourceVersion already known, or an older one: through
// an API reader, the conflict was transient and the write is retried after
// a pause; through the client (maybe a lagging cache) the read is repeated
// with backoff, within a budget per Patch; a NotFound there pauses and lets
// the retried write tell. A read older than the known state is never taken.
func (w *Writer) reread(ctx context.Context, obj client.Object, st *state, stale bool) (bool, error) {
	r := w.Reader
	lagging := r == nil
	if r == nil {
		r = w.Client
	}
	sleep := w.Sleep
	if sleep == nil {
		sleep = backoff.Sleep
	}
	pause := func() (bool, error) {
		if !stale || st.stale >= maxStaleReads {
			return false, nil
		}
		st.stale++
		if err := sleep(ctx, pauseBefore(st.stale-1)); err != nil {
			return false, fmt.Errorf("reading the object again: %w", err)
		}
		return true, nil
	}
	for {
		fresh := object.EmptyLike(obj)
		err := r.Get(ctx, client.ObjectKeyFromObject(obj), fresh)
		switch {
		case apierrors.IsNotFound(err):
			if !lagging {
				return true, nil
			}
			// Maybe not in the cache yet: the retried write tells.
			_, err := pause()
			return false, err
		case err != nil:
			return false, fmt.Errorf("reading the object again: %w", err)
		case st.uid != "" && string(fresh.GetUID()) != st.uid:
			if !lagging || !scope.OlderRV(fresh.GetResourceVersion(), st.rv) {
				return true, nil
			}
			// The cache still holds an earlier object of that name.
			again, err := pause()
			if again {
				continue
			}
			return false, err
		case scope.OlderRV(fresh.GetResourceVersion(), st.rv):
			// Older than what is known: never rebase on it (a change it
			// happens to show would be taken as written).
			again, err := pause()
			if again && lagging {
				continue
			}
			return false, err
		case stale && fresh.GetResourceVersion() == st.rv:
			again, err := pause()
			if err != nil {
				return false, err
			}
			if again && lagging {
				continue
			}
		}
		st.set(fresh)
		return false, nil
	}
}

// outcomeUnknown reports whether err leaves open whether the write was
// applied: it did not come from the API server (a client timeout, a dropped
// connection), or it is a server error (5xx: an internal error, a server or
// gateway timeout, an unavailable backend) that may have come after the
// write reached storage. An answer in the 4xx range (a conflict, an invalid
// object, a refusal, too many requests) says it was not applied.
func outcomeUnknown(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500 || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// uidRefused reports whether err is the API server refusing a write for
// its metadata.uid: another object has the name now.
func uidRefused(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Field == "metadata.uid" })
}
