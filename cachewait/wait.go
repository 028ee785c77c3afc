package cachewait

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
)

// waitSeconds observes every wait, by kind and result (caught_up, timeout,
// error).
var waitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "steady_cachewait_wait_seconds",
	Help:    "Time spent waiting for the informer cache to hold a write.",
	Buckets: []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10},
}, []string{"kind", "result"})

func init() { metrics.Registry.MustRegister(waitSeconds) }

// ForWrite waits until r, the informer cache, holds obj at a resourceVersion
// at least as new as obj's, which should be the API server's answer to the
// write. A write whose object is gone is caught up:
//
//   - when the answer is marked for deletion and has no finalizer left nor
//     a grace period pending (the write released the object: the API server
//     deleted it), ForWrite waits until r no longer holds that UID (a Pod
//     terminating gracefully, or a Namespace its spec.finalizers hold,
//     stays: a write to it is waited for as any);
//   - when r holds the object at an older version of the same UID, or an
//     older object of another UID (the one the name held before), it
//     waits; when r holds a newer object of another UID, the object is
//     gone;
//   - when r lacks the object (or holds one of another UID whose version
//     does not compare), r alone cannot tell "not seen yet" from "deleted
//     since": ForWrite waits, unless [WithAPIReader] is given, or r was
//     seen holding this UID before (then the object is gone: the cache saw
//     it and then its deletion, which came after the write).
//
// With [WithCacheOptions], a write the cache cannot hold (outside its
// namespaces or label selector) is caught up once r does not hold the
// object.
//
// It returns a [*TimeoutError] when the cache has not caught up when ctx
// ends or the timeout passes.
func ForWrite(ctx context.Context, r client.Reader, obj client.Object, opts ...WaitOption) error {
	if obj.GetResourceVersion() == "" {
		return fmt.Errorf("cachewait: %s has no resourceVersion; pass the object the write returned", object.Describe(obj, nil))
	}
	o := applyOptions(opts)
	_, _, _, err := waitAll(ctx, r, o, nil, readScope{}, time.Now().Add(o.Timeout), []*expectation{newWrite(obj, nil, o.CacheOptions)})
	return err
}

// ForDelete waits until r no longer holds obj: not found, or found with
// another UID at a newer resourceVersion (recreated; an older one means the
// cache has not got to obj yet). An object held by a finalizer is still held
// while it is marked for deletion; a read of a client of [NewClient] after
// its Delete counts the mark as caught up instead. It returns a
// [*TimeoutError] like [ForWrite].
func ForDelete(ctx context.Context, r client.Reader, obj client.Object, opts ...WaitOption) error {
	o := applyOptions(opts)
	_, _, _, err := waitAll(ctx, r, o, nil, readScope{}, time.Now().Add(o.Timeout), []*expectation{newDelete(obj, nil, modeGone)})
	return err
}

// mode is what an expectation waits for.
type mode int8

const (
	// modeWrite: the cache holds the object at want or newer, or the object
	// is gone.
	modeWrite mode = iota
	// modeGone: the cache no longer holds the UID.
	modeGone
	// modeDeleted: the cache no longer holds the UID, or holds it marked for
	// deletion.
	modeDeleted
	// modeDeleteAll: the cache holds no object matching the DeleteAllOf
	// that is not marked for deletion (or known to have been left alone).
	modeDeleteAll
)

// state is what a check found.
type state int8

const (
	// waiting: a read now could show the cache's state from before the
	// write.
	waiting state = iota
	// readable: a read now shows nothing older than the write (the object
	// is absent, or outside what the read selects), yet the cache has not
	// been seen past the write and may still show an older state later:
	// the expectation is kept, and the read's result is checked against it.
	readable
	// caughtUp: the cache is past the write for good; the expectation is
	// dropped.
	caughtUp
)

// view is the representation (typed, unstructured, metadata-only) a read
// is made in, which its wait reads the cache in too: each representation
// has its informer, and one may lag another.
type view struct {
	newObj  func() client.Object
	newList func() client.ObjectList
}

// readScope is what a read selects: a Get one name, a List a namespace
// ("": all) and a label selector (nil: all). A write outside it cannot make
// the read stale.
type readScope struct {
	namespace string
	name      string
	labels    labels.Selector
}

// narrow reports whether rs selects only part of a namespace: a name, or
// some labels.
func (rs readScope) narrow() bool {
	return rs.name != "" || (rs.labels != nil && !rs.labels.Empty())
}

// expectation is one write not yet known to be in the cache.
type expectation struct {
	obj  client.Object // empty object of the write's type, kind, namespace and name
	name string        // "Kind namespace/name"
	kind string
	want string // resourceVersion written, or of the object deleted
	uid  types.UID
	mode mode
	at   time.Time

	// labels are the written object's labels, or the deleted one's, where
	// labelsKnown.
	labels      labels.Set
	labelsKnown bool
	// created: a Create, so there is no older version of the object the
	// cache could show.
	created bool
	// outOfScope: the cache cannot hold the written object (WithCacheOptions).
	outOfScope bool

	// modeDeleteAll
	newList   func() client.ObjectList
	namespace string
	selector  labels.Selector

	// unseen: a write of the UID was pending (not seen in the cache) when
	// this expectation replaced it, so the cache may not have seen the
	// object at all, and its absence does not show the deletion.
	unseen bool

	mu        sync.Mutex
	seenUID   bool      // the cache was seen holding uid
	liveGone  bool      // the API reader found the object gone
	liveAt    time.Time // last read through the API reader
	successor *version  // a delete by name: an unmarked object of the name found live after it
	exempt    map[types.UID]bool
	goneUIDs  map[types.UID]bool // modeDeleteAll: objects the API reader found gone or marked
}

// version is an object of a name at a resourceVersion.
type version struct {
	uid types.UID
	rv  string
}

// newWrite expects the write whose answer is obj, to a cache made with
// cached (nil: one that can hold every write).
func newWrite(obj client.Object, scheme *runtime.Scheme, cached *cache.Options) *expectation {
	e := &expectation{obj: object.EmptyLike(obj), name: object.Describe(obj, scheme), kind: object.Kind(obj, scheme),
		want: obj.GetResourceVersion(), uid: obj.GetUID(), at: time.Now(),
		labels: labels.Set(maps.Clone(obj.GetLabels())), labelsKnown: true}
	if released(obj) {
		// Released: the API server deleted it after this write.
		e.mode = modeGone
	} else {
		e.outOfScope = excludes(cached, obj, scheme)
	}
	return e
}

// released reports whether obj, a write's answer, was deleted by the API
// server during the write: marked for deletion, no finalizer left and no
// grace period pending (the rule of the API server's
// ShouldDeleteDuringUpdate). A Pod being deleted gracefully is marked with
// no finalizer, yet stays until its kubelet confirms: it is not released;
// nor is a Namespace while its spec.finalizers hold it (the API server's
// ShouldDeleteNamespaceDuringUpdate), nor one whose spec is not at hand.
func released(obj client.Object) bool {
	g := obj.GetDeletionGracePeriodSeconds()
	if obj.GetDeletionTimestamp() == nil || len(obj.GetFinalizers()) != 0 || (g != nil && *g != 0) {
		return false
	}
	switch ns := obj.(type) {
	case *corev1.Namespace:
		return len(ns.Spec.Finalizers) == 0
	case *unstructured.Unstructured:
		if ns.GroupVersionKind() == corev1.SchemeGroupVersion.WithKind("Namespace") {
			f, _, _ := unstructured.NestedStringSlice(ns.Object, "spec", "finalizers")
			return len(f) == 0
		}
	case *metav1.PartialObjectMetadata:
		return ns.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Namespace")
	}
	return true
}

// newDelete expects the deletion of obj; its labels count where obj was
// read (it has a resourceVersion), not where it only names the object.
func newDelete(obj client.Object, scheme *runtime.Scheme, m mode) *expectation {
	e := &expectation{obj: object.EmptyLike(obj), name: object.Describe(obj, scheme), kind: object.Kind(obj, scheme),
		want: obj.GetResourceVersion(), uid: obj.GetUID(), mode: m, at: time.Now()}
	if obj.GetResourceVersion() != "" {
		e.labels, e.labelsKnown = labels.Set(maps.Clone(obj.GetLabels())), true
	}
	return e
}

// inherit takes over what prev, the expectation e replaces, knew of the
// cache: whether it was seen holding the UID and, if not, whether prev's
// write may not be in the cache yet.
func (e *expectation) inherit(prev *expectation) {
	if prev == nil || e.uid == "" || prev.uid != e.uid || prev.mode == modeDeleteAll {
		return
	}
	prev.mu.Lock()
	seen, pending := prev.seenUID, prev.unseen || prev.mode == modeWrite
	prev.mu.Unlock()
	e.seenUID = e.seenUID || seen
	if !e.seenUID && pending {
		e.unseen = true
	}
}

func (e *expectation) wantString() string {
	uid := ""
	if e.uid != "" {
		uid = " of UID " + string(e.uid)
	}
	switch e.mode {
	case modeGone:
		return "deletion" + uid
	case modeDeleted:
		return "deletion (or the mark of it)" + uid
	case modeDeleteAll:
		return "no object left unmarked matching labels " + fmt.Sprintf("%q", e.selector.String())
	}
	return "resourceVersion " + e.want
}

// atLeast reports whether have is as new as want: by comparing them where
// both are well-formed, and by equality otherwise.
func atLeast(have, want string) bool {
	if c, err := resourceversion.CompareResourceVersion(have, want); err == nil {
		return c >= 0
	}
	return have == want
}

// newer reports whether have is newer than want, both well-formed.
func newer(have, want string) bool {
	c, err := resourceversion.CompareResourceVersion(have, want)
	return err == nil && c > 0
}

// check reads the cache once (and, where the cache cannot tell and the
// options allow it, the API server once) and says whether a read of rs
// now would be stale for this write, and the resourceVersion the cache
// holds.
//
// v is the representation to read the cache in (nil: the write's own).
func (e *expectation) check(ctx context.Context, r client.Reader, o WaitOptions, v *view, rs readScope) (state, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mode == modeDeleteAll {
		return e.checkAll(ctx, r, o, v, rs)
	}
	cached := object.New(e.obj)
	if v != nil {
		cached = v.newObj()
	}
	err := r.Get(ctx, client.ObjectKeyFromObject(e.obj), cached)
	switch {
	case apierrors.IsNotFound(err):
		cached = nil
	case err != nil:
		return waiting, "", cacheError{fmt.Errorf("cachewait: reading %s from the cache: %w", e.name, err)}
	}
	return e.decide(ctx, o, rs, cached)
}

// decide is check for what the cache holds of the name: cached, nil where
// it holds nothing. e.mu is held.
func (e *expectation) decide(ctx context.Context, o WaitOptions, rs readScope, cached client.Object) (state, string, error) {
	have := ""
	if cached != nil {
		have = cached.GetResourceVersion()
	}
	if e.uid == "" {
		return e.decideNamed(ctx, o, rs, cached, have)
	}
	switch {
	case cached != nil && cached.GetUID() == e.uid:
		if e.mode == modeWrite && atLeast(have, e.want) || e.mode == modeDeleted && cached.GetDeletionTimestamp() != nil {
			return caughtUp, have, nil
		}
		e.seenUID = true // an older version of it
		if e.outside(rs, cached) {
			return readable, have, nil
		}
		return waiting, have, nil
	case cached != nil:
		// Another UID: a later one (ours is gone) or an earlier one (the
		// cache has not got to ours yet), by their versions.
		c, err := resourceversion.CompareResourceVersion(have, e.want)
		if err == nil && c > 0 {
			return caughtUp, have, nil
		}
		if e.mode != modeWrite || e.outside(rs, cached) {
			// Ours, gone or going, is not what a read shows now; the
			// cache may show it later.
			return readable, have, nil
		}
		if err == nil {
			return waiting, have, nil
		}
	case e.seenUID, !e.unseen && (e.mode == modeGone || e.mode == modeDeleted):
		// Absent, and the cache held it before: it saw the deletion, which
		// came after the write.
		return caughtUp, have, nil
	case e.mode == modeGone:
		// Released by the API server, so absent is what a read should
		// show; the cache may not have seen the object yet.
		return readable, have, nil
	case e.outOfScope && e.created:
		// Created where the cache cannot hold it: it never will.
		return caughtUp, have, nil
	case e.outOfScope, e.outside(rs, nil):
		return readable, have, nil
	}
	// Absent, never seen, or another UID whose version does not compare:
	// not yet created in the cache, or deleted since (for a delete: removed,
	// or marked while the cache has not seen the object yet).
	if e.liveGone {
		return readable, have, nil
	}
	gone, err := e.goneLive(ctx, o)
	if gone {
		e.liveGone = true
		return readable, have, err
	}
	return waiting, have, err
}

// decideNamed is decide for an expectation without a UID: a write (or
// ForDelete) of an object named only, or a delete by name; have is
// cached's resourceVersion. e.mu is held.
func (e *expectation) decideNamed(ctx context.Context, o WaitOptions, rs readScope, cached client.Object, have string) (state, string, error) {
	found := cached != nil
	switch e.mode {
	case modeWrite:
		if found && atLeast(have, e.want) {
			return caughtUp, have, nil
		}
		return waiting, have, nil
	case modeGone:
		if !found {
			return caughtUp, have, nil
		}
		return waiting, have, nil
	}
	// A delete by name: whatever held the name then is gone or marked. An
	// unmarked object of the name is either that one, not yet seen
	// deleted, or a later one: the API reader tells them apart (an object
	// alive and unmarked after the delete was created after it).
	switch {
	case !found, cached.GetDeletionTimestamp() != nil:
		return caughtUp, have, nil
	case e.successor != nil && (cached.GetUID() == e.successor.uid || newer(have, e.successor.rv)):
		return caughtUp, have, nil
	case e.outside(rs, cached):
		return readable, have, nil
	case !e.askLive(o):
		return waiting, have, nil
	}
	live, err := e.readLive(ctx, o)
	if err != nil || live == nil || live.GetDeletionTimestamp() != nil {
		return waiting, have, err
	}
	e.successor = &version{uid: live.GetUID(), rv: live.GetResourceVersion()}
	if live.GetUID() == cached.GetUID() {
		return caughtUp, have, nil
	}
	return waiting, have, nil
}

// outside reports whether neither cached (what the cache holds of the
// name, nil: nothing) nor the object as this expectation leaves it can be
// in the result of a read of rs: a List whose label selector matches
// neither.
func (e *expectation) outside(rs readScope, cached client.Object) bool {
	if rs.labels == nil || rs.labels.Empty() {
		return false
	}
	if cached != nil && rs.labels.Matches(labels.Set(cached.GetLabels())) {
		return false
	}
	switch e.mode {
	case modeGone:
		return true // removed
	case modeWrite:
		return !rs.labels.Matches(e.labels)
	}
	// Deleted: gone, or marked with its labels.
	return e.labelsKnown && !rs.labels.Matches(e.labels)
}

// cacheError is an error reading the cache (not the API reader).
type cacheError struct{ error }

func (e cacheError) Unwrap() error { return e.error }

// askLive reports whether the API reader may be asked now: there is one,
// the cache has lagged After since the write, and it was not asked in the
// last After; it notes the time of asking.
func (e *expectation) askLive(o WaitOptions) bool {
	now := time.Now()
	if o.APIReader == nil || now.Sub(e.at) < o.APIReaderAfter || now.Sub(e.liveAt) < o.APIReaderAfter {
		return false
	}
	e.liveAt = now
	return true
}

// goneLive asks the API reader, if there is one and the cache has lagged
// long enough, whether the object (this expectation's UID) is gone.
func (e *expectation) goneLive(ctx context.Context, o WaitOptions) (bool, error) {
	if e.uid == "" || !e.askLive(o) {
		return false, nil
	}
	live, err := e.readLive(ctx, o)
	return err == nil && (live == nil || live.GetUID() != e.uid), err
}

// readLive reads the object through the API reader: nil where it is not
// found.
func (e *expectation) readLive(ctx context.Context, o WaitOptions) (client.Object, error) {
	live := object.New(e.obj)
	err := o.APIReader.Get(ctx, client.ObjectKeyFromObject(e.obj), live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cachewait: reading %s from the API server: %w", e.name, err)
	}
	return live, nil
}

// waitAll waits until, in one pass, no expectation keeps a read of rs
// waiting, or until deadline. It returns the expectations caught up for
// good, those a read may go on with (readable in the last pass) and, on a
// timeout, those not caught up, with a [*TimeoutError] naming the first of
// them; when a read fails, the expectation it was for and the error.
// v is the representation to read the cache in (nil: each write's own).
func waitAll(ctx context.Context, r client.Reader, o WaitOptions, v *view, rs readScope, deadline time.Time, exps []*expectation) (done, ok, left []*expectation, err error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	kind := exps[0].kind
	start := time.Now()
	pause := o.initialBackoff
	exps = slices.Clone(exps)
	for {
		ok, left = nil, nil
		have := ""
		for _, e := range exps {
			st, h, err := e.check(ctx, r, o, v, rs)
			if err != nil && ctx.Err() == nil {
				waitSeconds.WithLabelValues(kind, "error").Observe(time.Since(start).Seconds())
				return done, nil, []*expectation{e}, err
			}
			switch {
			case err != nil, st == waiting:
				if len(left) == 0 {
					have = h
				}
				left = append(left, e)
			case st == readable:
				ok = append(ok, e)
			default:
				done = append(done, e)
			}
		}
		if len(left) == 0 {
			waitSeconds.WithLabelValues(kind, "caught_up").Observe(time.Since(start).Seconds())
			return done, ok, nil, nil
		}
		// Check again the readable ones too: the read must find all of
		// them readable at once.
		exps = append(left, ok...)
		if backoff.Sleep(ctx, pause) != nil {
			waited := time.Since(start)
			waitSeconds.WithLabelValues(kind, "timeout").Observe(waited.Seconds())
			return done, ok, left, &TimeoutError{Object: left[0].name, Want: left[0].wantString(), Have: have, Waited: waited, Err: ctx.Err()}
		}
		pause = min(pause*2, o.maxBackoff)
	}
}
