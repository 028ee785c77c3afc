package indexer

import "fmt"

// NotRegisteredError is returned when a reader has no index of that name for
// that type: the index was not registered on this cache, or the reader is
// not a cache (an API reader, say).
type NotRegisteredError struct {
	// Index is the index name, Type the indexed object type.
	Index, Type string
	// Err is the error of the reader.
	Err error
}

// Error implements error.
func (e *NotRegisteredError) Error() string {
	return fmt.Sprintf("indexer: no index %q for %s in this reader; register it with Register(ctx, mgr.GetFieldIndexer()) "+
		"before the manager starts, and query the manager's cached client (%v)", e.Index, e.Type, e.Err)
}

// Unwrap returns the underlying error.
func (e *NotRegisteredError) Unwrap() error { return e.Err }

// conflictError is returned when a different declaration was already
// registered under the same index name and type on the same cache.
type conflictError struct {
	// Index is the index name, Type the indexed object type.
	Index, Type string
}

// Error implements error.
func (e *conflictError) Error() string {
	return fmt.Sprintf("indexer: another index %q for %s is already registered on this cache; "+
		"declare each index once (a package variable) and register that same value everywhere", e.Index, e.Type)
}
