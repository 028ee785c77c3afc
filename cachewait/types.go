package cachewait

import (
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/observe"
)

// TimeoutError says the cache did not catch up in time. It is not a failure
// of the write: requeue and read again later. The expectation that timed
// out is dropped: later reads do not wait for it again (unless the read's
// own context ended before the timeout: then the next read waits again).
type TimeoutError struct {
	// Object names the object, as "Kind namespace/name" (for a DeleteAllOf,
	// "Kind namespace" and the label selector).
	Object string
	// Want is what was waited for: a resourceVersion, or "deletion of UID x".
	Want string
	// Have is the resourceVersion the cache held last ("" when absent).
	Have string
	// Waited is how long the wait lasted.
	Waited time.Duration
	// Err is the context's error.
	Err error
}

// Error implements error.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("cachewait: cache did not catch up with %s after %s: want %s, have %q: %v",
		e.Object, e.Waited.Round(time.Millisecond), e.Want, e.Have, e.Err)
}

// Unwrap returns the underlying error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// IsTimeout reports whether err is or wraps a [*TimeoutError].
func IsTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te)
}

// Defaults of [WaitOptions] and [TrackerOptions].
const (
	DefaultTimeout        = 10 * time.Second
	DefaultInitialBackoff = 10 * time.Microsecond
	DefaultMaxBackoff     = 100 * time.Millisecond
	DefaultAPIReaderAfter = time.Second
	DefaultRequeue        = 50 * time.Millisecond
	DefaultTTL            = time.Minute
)

// WaitOptions configures a wait ([ForWrite], [ForDelete], the reads of a
// [Client]). Its zero value means the defaults.
type WaitOptions struct {
	// Timeout bounds a wait when the context has no earlier deadline; zero
	// means [DefaultTimeout].
	Timeout time.Duration
	// InitialBackoff is the first pause between reads of the cache; zero
	// means [DefaultInitialBackoff].
	InitialBackoff time.Duration
	// MaxBackoff caps the pause; zero means [DefaultMaxBackoff].
	MaxBackoff time.Duration
	// APIReader, when set, tells "gone" from "not yet seen" (see
	// [WithAPIReader]); nil means the cache alone is read.
	APIReader client.Reader
	// APIReaderAfter is how long the cache must have lagged before the
	// APIReader is asked, and how long between two such reads of one
	// object; zero means [DefaultAPIReaderAfter].
	APIReaderAfter time.Duration
	// CacheOptions, when set, are the options the cache was made with (see
	// [WithCacheOptions]); nil means every write is taken to be one the
	// cache can hold.
	CacheOptions *cache.Options
}

// WaitOption configures a wait.
type WaitOption interface{ ApplyToWait(*WaitOptions) }

// ApplyOptions applies opts to o and returns it.
func (o *WaitOptions) ApplyOptions(opts []WaitOption) *WaitOptions {
	for _, opt := range opts {
		opt.ApplyToWait(o)
	}
	return o
}

// withDefaults returns o with its zero fields set to the defaults.
func (o WaitOptions) withDefaults() WaitOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.APIReaderAfter <= 0 {
		o.APIReaderAfter = DefaultAPIReaderAfter
	}
	return o
}

// WithTimeout bounds each wait: cachewait.WithTimeout(5*time.Second).
type WithTimeout time.Duration

// ApplyToWait implements [WaitOption].
func (w WithTimeout) ApplyToWait(o *WaitOptions) { o.Timeout = time.Duration(w) }

// WithBackoff sets the first and the largest pause between reads of the
// cache; a zero field keeps the default.
type WithBackoff struct {
	Initial, Max time.Duration
}

// ApplyToWait implements [WaitOption].
func (w WithBackoff) ApplyToWait(o *WaitOptions) {
	if w.Initial > 0 {
		o.InitialBackoff = w.Initial
	}
	if w.Max > 0 {
		o.MaxBackoff = w.Max
	}
}

// WithAPIReader lets a wait tell an object that is gone from one the cache
// has not seen yet, which the cache alone cannot: when the cache has lacked
// the written object (or held only an older one) for After (zero:
// [DefaultAPIReaderAfter]), one live GET through Reader (the manager's
// GetAPIReader()) decides: NotFound, or another UID, means the written
// object is gone and the write is caught up; the same UID means it exists
// and the cache lags, and the wait goes on (asking again at most once per
// After). A cache that catches up within After costs no request.
//
// It applies to waits ([ForWrite], [ForDelete], [NewClient]) and to a
// [Tracker]. [NewClient] and [NewTracker] take the manager's API reader
// without it: give it to set After, or another reader.
type WithAPIReader struct {
	Reader client.Reader
	After  time.Duration
}

// ApplyToWait implements [WaitOption].
func (w WithAPIReader) ApplyToWait(o *WaitOptions) {
	o.APIReader = observe.Reader(w.Reader, "cachewait")
	if w.After > 0 {
		o.APIReaderAfter = w.After
	}
}

// ApplyToTracker implements [TrackerOption].
func (w WithAPIReader) ApplyToTracker(o *TrackerOptions) {
	o.APIReader = observe.Reader(w.Reader, "cachewait")
	if w.After > 0 {
		o.APIReaderAfter = w.After
	}
}

// TrackerOptions configures a [Tracker]. Its zero value means the defaults.
type TrackerOptions struct {
	// Requeue is the delay CaughtUp suggests when the cache has not caught
	// up; zero means [DefaultRequeue].
	Requeue time.Duration
	// TTL drops expectations older than it, so that a lost event cannot
	// stall an owner for ever, nor owners never asked about again (deleted
	// without Forget) pile up; zero means [DefaultTTL].
	TTL time.Duration
	// APIReader, APIReaderAfter and CacheOptions are as in [WaitOptions].
	APIReader      client.Reader
	APIReaderAfter time.Duration
	CacheOptions   *cache.Options
}

// TrackerOption configures a [Tracker].
type TrackerOption interface{ ApplyToTracker(*TrackerOptions) }

// ApplyOptions applies opts to o and returns it.
func (o *TrackerOptions) ApplyOptions(opts []TrackerOption) *TrackerOptions {
	for _, opt := range opts {
		opt.ApplyToTracker(o)
	}
	return o
}

// WithRequeue sets the delay [Tracker.CaughtUp] suggests when the cache has
// not caught up.
type WithRequeue time.Duration

// ApplyToTracker implements [TrackerOption].
func (w WithRequeue) ApplyToTracker(o *TrackerOptions) { o.Requeue = time.Duration(w) }

// WithTTL sets how long a [Tracker] keeps an expectation at most.
type WithTTL time.Duration

// ApplyToTracker implements [TrackerOption].
func (w WithTTL) ApplyToTracker(o *TrackerOptions) { o.TTL = time.Duration(w) }

var (
	_ WaitOption    = WithTimeout(0)
	_ WaitOption    = WithBackoff{}
	_ WaitOption    = WithAPIReader{}
	_ TrackerOption = WithAPIReader{}
	_ TrackerOption = WithRequeue(0)
	_ TrackerOption = WithTTL(0)
)
