package cachewait

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
// write. It returns a [*TimeoutError] when the cache has not caught up when
// ctx ends or the timeout passes.
func ForWrite(ctx context.Context, r client.Reader, obj client.Object, opts ...Option) error {
	want := obj.GetResourceVersion()
	if want == "" {
		return fmt.Errorf("cachewait: %s has no resourceVersion; pass the object the write returned", key(obj))
	}
	return wait(ctx, r, obj, "resourceVersion "+want, opts, writeSeen(want))
}

// ForDelete waits until r no longer holds obj: not found, or found with
// another UID (recreated). It returns a [*TimeoutError] like [ForWrite].
func ForDelete(ctx context.Context, r client.Reader, obj client.Object, opts ...Option) error {
	uid := obj.GetUID()
	return wait(ctx, r, obj, "deletion of UID "+string(uid), opts, deleteSeen(uid))
}

// writeSeen is caught up when the cache holds the object at want or newer.
func writeSeen(want string) func(cached client.Object, found bool) bool {
	return func(cached client.Object, found bool) bool {
		return found && atLeast(cached.GetResourceVersion(), want)
	}
}

// deleteSeen is caught up when the cache no longer holds the object with
// that UID: absent, or recreated with another UID.
func deleteSeen(uid types.UID) func(cached client.Object, found bool) bool {
	return func(cached client.Object, found bool) bool {
		return !found || (uid != "" && cached.GetUID() != uid)
	}
}

// atLeast reports whether have is as new as want: by comparing them where
// both are well-formed, and by equality otherwise.
func atLeast(have, want string) bool {
	if c, err := resourceversion.CompareResourceVersion(have, want); err == nil {
		return c >= 0
	}
	return have == want
}

// caughtUp checks the cache once.
func caughtUp(ctx context.Context, r client.Reader, obj client.Object, done func(client.Object, bool) bool) (bool, string, error) {
	cached := emptyLike(obj)
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), cached)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, "", err
	}
	found := err == nil
	have := ""
	if found {
		have = cached.GetResourceVersion()
	}
	return done(cached, found), have, nil
}

func wait(ctx context.Context, r client.Reader, obj client.Object, want string, opts []Option, done func(client.Object, bool) bool) error {
	o := options(opts)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = reflect.TypeOf(obj).Elem().Name()
	}
	start := time.Now()
	pause := o.InitialBackoff
	for {
		ok, have, err := caughtUp(ctx, r, obj, done)
		switch {
		case err != nil && ctx.Err() == nil:
			waitSeconds.WithLabelValues(kind, "error").Observe(time.Since(start).Seconds())
			return fmt.Errorf("cachewait: reading %s %s from the cache: %w", kind, key(obj), err)
		case ok:
			waitSeconds.WithLabelValues(kind, "caught_up").Observe(time.Since(start).Seconds())
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			waited := time.Since(start)
			waitSeconds.WithLabelValues(kind, "timeout").Observe(waited.Seconds())
			return &TimeoutError{Object: kind + " " + key(obj), Want: want, Have: have, Waited: waited, Err: ctx.Err()}
		case <-t.C:
		}
		pause = min(pause*2, o.MaxBackoff)
	}
}

// emptyLike returns a new object of obj's type and kind.
func emptyLike(obj client.Object) client.Object {
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out
}

func key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
