package cachewait

import (
	"errors"
	"fmt"
	"time"
)

// TimeoutError says the cache did not catch up in time. It is not a failure
// of the write: requeue and read again later.
type TimeoutError struct {
	// Object names the object, as "Kind namespace/name".
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

// Options configures a wait.
type Options struct {
	// Timeout bounds a wait when the context has no earlier deadline; zero
	// means 10 seconds.
	Timeout time.Duration
	// InitialBackoff is the first pause between reads; zero means 10µs.
	InitialBackoff time.Duration
	// MaxBackoff caps the pause; zero means 100ms.
	MaxBackoff time.Duration
}

// Option changes [Options].
type Option func(*Options)

// WithTimeout bounds each wait.
func WithTimeout(d time.Duration) Option { return func(o *Options) { o.Timeout = d } }

// WithBackoff sets the first and the largest pause between reads of the
// cache.
func WithBackoff(initial, max time.Duration) Option {
	return func(o *Options) { o.InitialBackoff, o.MaxBackoff = initial, max }
}

func options(opts []Option) Options {
	o := Options{Timeout: 10 * time.Second, InitialBackoff: 10 * time.Microsecond, MaxBackoff: 100 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
