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

// conflictError is returned when another index holds the name for the type
// on the cache, or when an index made with New takes the name of
// ControllerOwner's.
type conflictError struct {
	// Index is the index name, Type the indexed object type.
	Index, Type string
}

// Error implements error.
func (e *conflictError) Error() string {
	if e.Index == controllerOwnerIndex {
		return fmt.Sprintf("indexer: another index %q for %s: the name is ControllerOwner's, on every cache; name this index otherwise", e.Index, e.Type)
	}
	return fmt.Sprintf("indexer: another index %q for %s is already registered on this cache; "+
		"declare each index once (a package variable) and register that same value everywhere", e.Index, e.Type)
}
