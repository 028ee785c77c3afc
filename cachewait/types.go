package cachewait

import (
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

// The defaults of [WaitOptions].
const (
	defaultTimeout        = 10 * time.Second
	defaultInitialBackoff = 10 * time.Microsecond
	defaultMaxBackoff     = 100 * time.Millisecond
	defaultAPIReaderAfter = time.Second
	defaultTTL            = time.Minute
)

// WaitOptions configures the waits of [ForWrite], [ForDelete], a client of
// [NewClient] and a [Tracker]. Its zero value means the defaults.
type WaitOptions struct {
	// Timeout bounds a wait when the context has no earlier deadline; zero
	// means 10s. A Tracker never waits: it ignores it.
	Timeout time.Duration
	// APIReader, when set, tells "gone" from "not yet seen" (see
	// [WithAPIReader]); nil means the cache alone is read (NewClient and
	// NewTracker default it to the cluster's API reader).
	APIReader client.Reader
	// APIReaderAfter is how long the cache must have lagged before the
	// APIReader is asked, and how long between two such reads of one
	// object; zero means 1s.
	APIReaderAfter time.Duration
	// CacheOptions, when set, are the options the cache was made with (see
	// [WithCacheOptions]); nil means every write is taken to be one the
	// cache can hold.
	CacheOptions *cache.Options

	// Set by the package's own tests only.
	initialBackoff, maxBackoff time.Duration
	ttl                        time.Duration // a Client's and a Tracker's; zero means a minute
}

// WaitOption configures a wait.
type WaitOption interface{ ApplyToWait(*WaitOptions) }

// applyOptions returns the options of opts, with the defaults.
func applyOptions(opts []WaitOption) WaitOptions {
	o := WaitOptions{}
	for _, opt := range opts {
		opt.ApplyToWait(&o)
	}
	return o.withDefaults()
}

// withDefaults returns o with its zero fields set to the defaults.
func (o WaitOptions) withDefaults() WaitOptions {
	orDefault(&o.Timeout, defaultTimeout)
	orDefault(&o.initialBackoff, defaultInitialBackoff)
	orDefault(&o.maxBackoff, defaultMaxBackoff)
	orDefault(&o.APIReaderAfter, defaultAPIReaderAfter)
	orDefault(&o.ttl, defaultTTL)
	return o
}

// orDefault sets *d to def where it is zero or negative.
func orDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// WithTimeout bounds each wait: cachewait.WithTimeout(5*time.Second).
type WithTimeout time.Duration

// ApplyToWait implements [WaitOption].
func (w WithTimeout) ApplyToWait(o *WaitOptions) { o.Timeout = time.Duration(w) }

// WithAPIReader lets a wait tell an object that is gone from one the cache
// has not seen yet, which the cache alone cannot: when the cache has lacked
// the written object (or held only an older one) for After (zero: 1s), one
// live GET through Reader (the manager's GetAPIReader(), never its cached
// client) decides: NotFound, or another UID, means the written object is
// gone and the write is caught up; the same UID means it exists and the
// cache lags, and the wait goes on (asking again at most once per After).
// A cache that catches up within After costs no request.
//
// [NewClient] and [NewTracker] take the cluster's API reader without it:
// give it to set After, or another reader.
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

var (
	_ WaitOption = WithTimeout(0)
	_ WaitOption = WithAPIReader{}
)
