package ownership

import "fmt"

// AlreadyOwnedError is returned when the child has another controller.
type AlreadyOwnedError struct {
	// Child, Owner and Controller name the child, the owner that wanted
	// it and its current controller, as "Kind namespace/name".
	Child, Owner, Controller string
}

// Error implements error.
func (e *AlreadyOwnedError) Error() string {
	return fmt.Sprintf("ownership: %s is already controlled by %s; not taking it over for %s (use ownership.Adopt() to do so)",
		e.Child, e.Controller, e.Owner)
}

// InvalidOwnerError is returned, before any write, for an owner reference
// that the API server or the garbage collector would not honour.
type InvalidOwnerError struct {
	// Child and Owner name the objects, as "Kind namespace/name".
	Child, Owner string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *InvalidOwnerError) Error() string {
	return fmt.Sprintf("ownership: %s cannot own %s: %s", e.Owner, e.Child, e.Reason)
}

// Options configures the writes of this package.
type Options struct {
	// Adopt takes over a child controlled by another owner.
	Adopt bool
	// Force makes Apply take over fields owned by other field managers.
	Force bool
}

// Option changes [Options].
type Option func(*Options)

// Adopt replaces another owner's controller reference on the child with
// ours instead of returning an [*AlreadyOwnedError].
func Adopt() Option { return func(o *Options) { o.Adopt = true } }

// Force makes [Apply] take over conflicting fields from other managers.
func Force() Option { return func(o *Options) { o.Force = true } }
