package reconcile

// Names the tests of package reconcile_test use for what is unexported.
type (
	OptionError   = optionError
	MismatchError = mismatchError
)

const (
	CacheTimeoutRequeue = cacheTimeoutRequeue
	StaleRequeue        = staleRequeue
)
