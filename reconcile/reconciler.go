package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady/cachewait"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// cacheTimeoutRequeue is the RequeueAfter [For] returns instead of an error
// when the only failure was a [*cachewait.TimeoutError] (the write
// succeeded, the cache has not caught up yet).
const cacheTimeoutRequeue = time.Second

// staleRequeue is the RequeueAfter [For] returns instead of an error when
// Patch found what the reconcile computed older than the live object (a
// [*StaleError]): the next reconcile reads it anew.
const staleRequeue = 100 * time.Millisecond

// ownWriteWait bounds the wait of [For], without an API reader, for a
// cache that does not hold this process's own last write of the object.
const ownWriteWait = 2 * time.Second

// requeueWithin returns res with a RequeueAfter of at most d.
func requeueWithin(res ctrl.Result, d time.Duration) ctrl.Result {
	if res.RequeueAfter == 0 || res.RequeueAfter > d {
		res.RequeueAfter = d
	}
	return res
}

// readOwnWrite reads obj again until it is no older than this process's
// own last write of it: once through st's API reader when there is one,
// else through c (a cache that lags) with backoff, within ownWriteWait.
// caught is false where the cache did not catch up in time.
func readOwnWrite(ctx context.Context, c client.Client, st *scope.State, k scope.Key, obj client.Object) (caught bool, err error) {
	key := client.ObjectKeyFromObject(obj)
	read := func(r client.Reader) error {
		fresh := object.EmptyLike(obj)
		if err := r.Get(ctx, key, fresh); err != nil {
			return err
		}
		object.Copy(obj, fresh)
		return nil
	}
	if api := st.APIReader(); api != nil {
		if err := read(api); err != nil {
			return false, err
		}
		// The API server's answer is the truth: older than the ledger, the
		// ledger is wrong (a restored store), not the read.
		st.ForgetWrite(k, obj)
		return true, nil
	}
	deadline := time.Now().Add(ownWriteWait)
	for d := 5 * time.Millisecond; ; d = min(2*d, 250*time.Millisecond) {
		if time.Now().Add(d).After(deadline) {
			return false, nil
		}
		if err := backoff.Sleep(ctx, d); err != nil {
			return false, err
		}
		if err := read(c); err != nil {
			return false, err
		}
		if _, behind := st.OwnWriteAhead(k, obj); !behind {
			return true, nil
		}
	}
}

// For returns a controller-runtime Reconciler for objects of type T that
// does the usual steps around fn: read the object (a missing one is not an
// error), run the finalizers (persisting them first; on deletion, running
// their cleanups instead of fn and writing what they changed), snapshot it,
// call fn, set the Ready summary, and write what changed in one deferred
// [Patcher.Patch], joining its error with fn's. Use it as
//
//	r, err := reconcile.For[v1.Bucket](steady.NewClient(mgr), reconcileBucket,
//		reconcile.WithFinalizer("example.com/bucket", finalizer.Func(deleteBucket)),
//		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"BucketReady"}}),
//		reconcile.WithObservedGeneration{})
//	...
//	err = ctrl.NewControllerManagedBy(mgr).For(&v1.Bucket{}).Complete(r)
//
// With a manager, give it steady.NewClient(mgr): the manager's client,
// which reads from its cache, carrying the manager's API reader. Every
// re-read that must not lag goes through that reader: the Patcher's and
// the finalizer handler's after a conflict, the one below, and those of
// the ownership calls fn makes with a client of c's cluster. Given a
// client that carries no API reader (mgr.GetClient() itself), they wait,
// with backoff, for the cache instead.
//
// For reads its own writes: when the object read is older than this
// process's last write of it through the client's State (steady.NewClient's,
// else For's own; see package steady), as the cache has not caught up
// with it yet, it is read again through the API reader (one GET), or,
// without one, the cache is waited for with backoff for up to 2 seconds,
// after which the reconcile is requeued after 1 second without running
// fn. So fn never computes from a state older than what this process
// wrote.
//
// What is not a failure is not returned as one: a [*cachewait.TimeoutError]
// alone (from [WithCacheWait]) becomes a RequeueAfter of 1 second;
// a [*StaleError] (fn computed from a state older than the live object)
// becomes a RequeueAfter of 100 milliseconds;
// an object gone meanwhile ends the reconcile without error; a cleanup in
// progress ([finalizer.InProgress]) becomes its RequeueAfter.
//
// The Patcher stays usable without For.
func For[T any, P interface {
	*T
	client.Object
}](c client.Client, fn func(ctx context.Context, obj P) (ctrl.Result, error), opts ...ForOption) (crreconcile.Reconciler, error) {
	cfg := ForOptions{}
	for _, o := range opts {
		o.ApplyToFor(&cfg)
	}
	var zero P = new(T)
	if err := checkOptions(zero, cfg); err != nil {
		return nil, fmt.Errorf("reconcile: For: %w", err) // it names the type
	}
	// What this reconciler remembers (its own writes, ownership's verdicts
	// on the children its body writes): the State c carries
	// (steady.NewClient), else one of its own, which c then carries, so
	// that the Patcher, the finalizer handler and the body's calls with c
	// record their writes in it; each reconcile's context carries it too,
	// for the body's calls with another client of c's cluster.
	st := scope.Held(c)
	if st == nil {
		st = scope.New(c, nil, nil)
		c = scope.Wrap(c, st)
	}
	// The API reader of c's State (steady.NewClient's: the manager's), or
	// none: readOwnWrite takes it from st, the finalizer handler and the
	// Patcher from c, the body's ownership calls from the State each
	// reconcile's context carries.
	var h *finalizer.Handler
	if len(cfg.finalizers) > 0 {
		h = finalizer.NewHandler(c)
		for _, nf := range cfg.finalizers {
			if err := h.Register(nf.Name, nf.Finalizer, nf.When...); err != nil {
				return nil, fmt.Errorf("reconcile: For[%T]: %w", zero, err)
			}
		}
	}
	// The kind names the object in st; an unstructured T tells it once read.
	gvk, gvkErr := object.GVK(zero, c.Scheme())
	return crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		ctx = scope.Into(ctx, st)
		key := scope.Key{GVK: gvk, Namespace: req.Namespace, Name: req.Name}
		var obj P = new(T)
		if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
			if apierrors.IsNotFound(err) {
				if gvkErr == nil {
					st.ForgetWrite(key, nil) // gone: the ledger's entry with it
				}
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("reconcile: reading %s: %w", req.NamespacedName, err)
		}
		// The key the Patcher records under: the object's own (a
		// cluster-scoped object read with a namespace in the request).
		key = scope.Key{GVK: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if gvkErr != nil {
			key, _ = scope.KeyOf(obj, c.Scheme())
		}
		if _, behind := st.OwnWriteAhead(key, obj); behind {
			caught, err := readOwnWrite(ctx, c, st, key, obj)
			switch {
			case apierrors.IsNotFound(err):
				return ctrl.Result{}, nil
			case err != nil:
				return ctrl.Result{}, fmt.Errorf("reconcile: reading %s again: %w", req.NamespacedName, err)
			case !caught:
				return ctrl.Result{RequeueAfter: cacheTimeoutRequeue}, nil
			}
		}
		var released time.Duration // a released finalizer's cleanup in progress
		if h != nil {
			res, err := h.Handle(ctx, obj)
			if err != nil || res.Deleting {
				return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
			}
			released = res.RequeueAfter
		}
		p, err := newPatcher(c, obj, true)
		if err != nil {
			return ctrl.Result{}, err
		}
		res, fnErr := fn(ctx, obj)
		if released > 0 {
			res = requeueWithin(res, released)
		}
		patchOpts := cfg.PatchOptions
		if cfg.ReadySummary {
			s := setter(obj)
			var before *metav1.Condition // Ready before the summary, after a failed body
			if c := conditions.Get(s, conditions.Ready); c != nil && fnErr != nil {
				before = c.DeepCopy()
			}
			conditions.SetSummary(s, conditions.Ready, cfg.SummaryOptions...)
			if fnErr != nil {
				unobserved(s, before, cfg.SummaryOptions)
			}
		}
		if fnErr != nil {
			// A failed reconcile did not observe the generation: the
			// status of the last one that did keeps its number.
			patchOpts = append(slices.Clip(patchOpts), withoutObservedGeneration{})
		}
		patchErr := p.patch(ctx, obj, false, patchOpts) // the last: p is dropped after it
		if d, ok := notFailed(ctx, patchErr); ok && fnErr == nil {
			return requeueWithin(res, d), nil
		}
		return res, errors.Join(fnErr, patchErr)
	}), nil
}

// withoutObservedGeneration turns WithObservedGeneration off for one Patch,
// For's after a failed body: status.observedGeneration is not written, and
// a status computed from a generation older than the live one observed is
// still not written.
type withoutObservedGeneration struct{}

func (withoutObservedGeneration) ApplyToPatch(o *PatchOptions) {
	o.guardGeneration = o.guardGeneration || o.ObservedGeneration
	o.ObservedGeneration = false
}

// unobserved keeps the Ready summary a failed body left from claiming
// what the body did not observe. It does not make Ready True where it was
// not (absent, False or Unknown, before: nil where absent): the summary of
// conditions a failed body did not mark, or of none the first time, is no
// success, and Ready stays as it was. Else its observedGeneration becomes
// the lowest of the summarized conditions' (where one carries none, or
// none is summarized, Ready's before), never lower than before (a live
// value is never written lower), never higher than SetSummary made it. A
// body that marked its conditions before failing (MarkFalse, then return
// the error) observed the generation in them, and the summary says so.
func unobserved(s conditions.Setter, prev *metav1.Condition, opts []conditions.SummaryOption) {
	if now := conditions.Get(s, conditions.Ready); now != nil && now.Status == metav1.ConditionTrue &&
		(prev == nil || prev.Status != metav1.ConditionTrue) {
		if prev == nil {
			conditions.Delete(s, conditions.Ready)
			return
		}
		conds := slices.Clone(s.GetConditions()) // prev as it was: Set would stamp the generation
		conds[slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == conditions.Ready })] = *prev
		s.SetConditions(conds)
		return
	}
	var before int64
	if prev != nil {
		before = prev.ObservedGeneration
	}
	o := conditions.SummaryOptions{}
	for _, opt := range opts {
		opt.ApplyToSummary(&o)
	}
	conds := slices.Clone(s.GetConditions())
	i := slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == conditions.Ready })
	if i < 0 {
		return
	}
	gen := conds[i].ObservedGeneration
	observed := false // a summarized condition says the generation it observed
	for _, c := range conds {
		if c.Type == conditions.Ready || len(o.ConditionTypes) > 0 && !slices.Contains(o.ConditionTypes, c.Type) {
			continue
		}
		if c.ObservedGeneration <= 0 {
			// It says none (meta.SetStatusCondition without one): no
			// newer than Ready said before.
			gen = min(gen, before)
			continue
		}
		observed = true
		gen = min(gen, c.ObservedGeneration)
	}
	if !observed {
		gen = min(gen, before) // nothing summarized says a generation
	}
	gen = max(gen, before)
	if gen < conds[i].ObservedGeneration {
		conds[i].ObservedGeneration = gen
		s.SetConditions(conds)
	}
}

// notFailed reports whether err, a Patch's, is no failure but a reason to
// reconcile again soon, and how soon: a cachewait timeout (the write is
// done; the cache is behind) or a *StaleError (nothing was written of a
// state computed from the past).
func notFailed(ctx context.Context, err error) (time.Duration, bool) {
	if err == nil {
		return 0, false // before stale, which escapes: no allocation
	}
	var stale *StaleError
	switch {
	case errors.As(err, new(*cachewait.TimeoutError)):
		return cacheTimeoutRequeue, true
	case errors.As(err, &stale):
		log.FromContext(ctx).V(1).Info("reconciling again: what this reconcile computed is older than the live object", "reason", stale.Reason)
		return staleRequeue, true
	}
	return 0, false
}
