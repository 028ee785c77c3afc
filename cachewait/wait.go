package cachewait

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

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
//   - when r holds the object at an older version of the same UID, it waits;
//   - when r lacks the object (or holds an older one of another UID), r
//     alone cannot tell "not seen yet" from "deleted since": ForWrite waits,
//     unless [WithAPIReader] is given, or r was seen holding this UID
//     before (then the object is gone: the cache saw it and then its
//     deletion, which came after the write).
//
// It returns a [*TimeoutError] when the cache has not caught up when ctx
// ends or the timeout passes.
func ForWrite(ctx context.Context, r client.Reader, obj client.Object, opts ...WaitOption) error {
	if obj.GetResourceVersion() == "" {
		return fmt.Errorf("cachewait: %s has no resourceVersion; pass the object the write returned", object.Describe(obj, nil))
	}
	o := (&WaitOptions{}).ApplyOptions(opts).withDefaults()
	_, err := waitAll(ctx, r, o, nil, []*expectation{newWrite(obj, nil)})
	return err
}

// ForDelete waits until r no longer holds obj: not found, or found with
// another UID at a newer resourceVersion (recreated; an older one means the
// cache has not got to obj yet). An object held by a finalizer is still held
// while it is marked for deletion; a [Client] read after its Delete counts
// the mark as caught up instead. It returns a [*TimeoutError] like
// [ForWrite].
func ForDelete(ctx context.Context, r client.Reader, obj client.Object, opts ...WaitOption) error {
	o := (&WaitOptions{}).ApplyOptions(opts).withDefaults()
	_, err := waitAll(ctx, r, o, nil, []*expectation{newDelete(obj, nil, modeGone)})
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

// view is the representation (typed, unstructured, metadata-only) a read
// is made in, which its wait reads the cache in too: each representation
// has its informer, and one may lag another.
type view struct {
	newObj  func() client.Object
	newList func() client.ObjectList
}

// expectation is one write not yet known to be in the cache.
type expectation struct {
	obj  client.Object // empty object of the read's type, kind, namespace and name
	name string        // "Kind namespace/name"
	kind string
	want string // resourceVersion written, or of the object deleted
	uid  types.UID
	mode mode
	at   time.Time

	// modeDeleteAll
	newList   func() client.ObjectList
	namespace string
	selector  labels.Selector

	// unseen (modeDeleted): a write of the UID was pending when it was
	// deleted, so the cache may not have seen the object at all, and its
	// absence does not show the deletion.
	unseen bool

	mu      sync.Mutex
	seenUID bool      // the cache was seen holding uid
	liveAt  time.Time // last read through the API reader
	exempt  map[types.UID]bool
}

func newWrite(obj client.Object, scheme *runtime.Scheme) *expectation {
	e := &expectation{obj: object.EmptyLike(obj), name: object.Describe(obj, scheme), kind: object.Kind(obj, scheme),
		want: obj.GetResourceVersion(), uid: obj.GetUID(), at: time.Now()}
	if released(obj) {
		// Released: the API server deleted it after this write.
		e.mode = modeGone
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

func newDelete(obj client.Object, scheme *runtime.Scheme, m mode) *expectation {
	return &expectation{obj: object.EmptyLike(obj), name: object.Describe(obj, scheme), kind: object.Kind(obj, scheme),
		want: obj.GetResourceVersion(), uid: obj.GetUID(), mode: m, at: time.Now()}
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

// check reads the cache once (and, where the cache cannot tell and the
// options allow it, the API server once). It returns whether the cache has
// caught up and the resourceVersion it holds.
//
// v is the representation to read the cache in (nil: the write's own).
func (e *expectation) check(ctx context.Context, r client.Reader, o WaitOptions, v *view) (bool, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mode == modeDeleteAll {
		return e.checkAll(ctx, r, o, v)
	}
	cached := object.New(e.obj)
	if v != nil {
		cached = v.newObj()
	}
	err := r.Get(ctx, client.ObjectKeyFromObject(e.obj), cached)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, "", cacheError{fmt.Errorf("cachewait: reading %s from the cache: %w", e.name, err)}
	}
	found := err == nil
	have := ""
	if found {
		have = cached.GetResourceVersion()
	}
	if e.uid == "" {
		// Nothing to tell objects apart by: the version alone.
		switch e.mode {
		case modeWrite:
			return found && atLeast(have, e.want), have, nil
		case modeDeleted:
			// Terminating under another finalizer counts, as with a UID.
			return !found || cached.GetDeletionTimestamp() != nil, have, nil
		}
		return !found, have, nil
	}
	sameUID := found && cached.GetUID() == e.uid
	switch {
	case sameUID:
		switch {
		case e.mode == modeWrite && atLeast(have, e.want),
			e.mode == modeDeleted && cached.GetDeletionTimestamp() != nil:
			return true, have, nil
		}
		e.seenUID = true // an older version of it
		return false, have, nil
	case found:
		// Another UID: a later one (ours is gone) or an earlier one (the
		// cache has not got to ours yet), by their versions.
		if c, err := resourceversion.CompareResourceVersion(have, e.want); err == nil {
			return c > 0, have, nil
		}
	case e.mode == modeGone, e.seenUID, e.mode == modeDeleted && !e.unseen:
		// Absent, and gone for good (released; ForDelete), or the cache
		// saw it before and has seen its deletion since, which came after
		// the write.
		return true, have, nil
	}
	// Absent, never seen: not yet created in the cache, or deleted since.
	gone, err := e.goneLive(ctx, o, e.obj)
	return gone, have, err
}

// cacheError is an error reading the cache (not the API reader).
type cacheError struct{ error }

func (e cacheError) Unwrap() error { return e.error }

// goneLive asks the API reader, if there is one and the cache has lagged
// long enough, whether obj (this expectation's UID) is gone.
func (e *expectation) goneLive(ctx context.Context, o WaitOptions, obj client.Object) (bool, error) {
	now := time.Now()
	if o.APIReader == nil || e.uid == "" || now.Sub(e.at) < o.APIReaderAfter || now.Sub(e.liveAt) < o.APIReaderAfter {
		return false, nil
	}
	e.liveAt = now
	live := object.New(obj)
	err := o.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("cachewait: reading %s from the API server: %w", e.name, err)
	}
	return live.GetUID() != e.uid, nil
}

// checkAll is check for a DeleteAllOf: every object the cache holds that
// matches it must be marked for deletion, or known (through the API
// reader) to have been left alone, being created later or not matching a
// field selector.
func (e *expectation) checkAll(ctx context.Context, r client.Reader, o WaitOptions, v *view) (bool, string, error) {
	list := e.newList()
	if v != nil {
		list = v.newList()
	}
	if err := r.List(ctx, list, client.InNamespace(e.namespace), client.MatchingLabelsSelector{Selector: e.selector}); err != nil {
		return false, "", cacheError{fmt.Errorf("cachewait: listing %s from the cache: %w", e.name, err)}
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return false, "", fmt.Errorf("cachewait: listing %s from the cache: %w", e.name, err)
	}
	now := time.Now()
	ask := o.APIReader != nil && now.Sub(e.at) >= o.APIReaderAfter && now.Sub(e.liveAt) >= o.APIReaderAfter
	done, have := true, ""
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || obj.GetDeletionTimestamp() != nil || e.exempt[obj.GetUID()] {
			continue
		}
		if ask {
			live := object.EmptyLike(obj)
			err := o.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live)
			if err != nil && !apierrors.IsNotFound(err) {
				return false, "", fmt.Errorf("cachewait: reading %s from the API server: %w", object.Describe(obj, nil), err)
			}
			if err == nil && live.GetUID() == obj.GetUID() && live.GetDeletionTimestamp() == nil {
				e.exempt[obj.GetUID()] = true // not deleted: it is not what DeleteAllOf removed
				continue
			}
		}
		done, have = false, obj.GetName()+"@"+obj.GetResourceVersion()
	}
	if ask {
		e.liveAt = now
	}
	return done, have, nil
}

// waitAll waits until the cache has caught up with every expectation, or
// the timeout. On a timeout it returns the expectations that did not catch
// up, and a [*TimeoutError] naming the first of them; when a read fails, the
// expectation it was for and the error.
// v is the representation to read the cache in (nil: each write's own).
func waitAll(ctx context.Context, r client.Reader, o WaitOptions, v *view, exps []*expectation) ([]*expectation, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	kind := exps[0].kind
	start := time.Now()
	pause := o.InitialBackoff
	exps = append([]*expectation(nil), exps...)
	for {
		var left []*expectation
		have := ""
		for _, e := range exps {
			ok, h, err := e.check(ctx, r, o, v)
			if err != nil && ctx.Err() == nil {
				waitSeconds.WithLabelValues(kind, "error").Observe(time.Since(start).Seconds())
				return []*expectation{e}, err
			}
			if !ok {
				if len(left) == 0 {
					have = h
				}
				left = append(left, e)
			}
		}
		if len(left) == 0 {
			waitSeconds.WithLabelValues(kind, "caught_up").Observe(time.Since(start).Seconds())
			return nil, nil
		}
		exps = left
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			waited := time.Since(start)
			waitSeconds.WithLabelValues(kind, "timeout").Observe(waited.Seconds())
			return exps, &TimeoutError{Object: exps[0].name, Want: exps[0].wantString(), Have: have, Waited: waited, Err: ctx.Err()}
		case <-t.C:
		}
		pause = min(pause*2, o.MaxBackoff)
	}
}
