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
	return fmt.Sprintf("ownership: %s is already controlled by %s; not taking it over for %s (pass ownership.Adopt{} to do so)",
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

// CreateOrUpdateOptions are the options of [CreateOrUpdate]; the zero value
// is no option.
type CreateOrUpdateOptions struct {
	// Adopt takes over a child controlled by another owner.
	Adopt bool
}

// CreateOrUpdateOption configures [CreateOrUpdate].
type CreateOrUpdateOption interface {
	ApplyToCreateOrUpdate(*CreateOrUpdateOptions)
}

// CreateOrPatchOptions are the options of [CreateOrPatch]; the zero value
// is no option.
type CreateOrPatchOptions struct {
	// Adopt takes over a child controlled by another owner.
	Adopt bool
}

// CreateOrPatchOption configures [CreateOrPatch].
type CreateOrPatchOption interface {
	ApplyToCreateOrPatch(*CreateOrPatchOptions)
}

// ApplyOptions are the options of [Apply]; the zero value is no option.
type ApplyOptions struct {
	// Adopt takes over a child controlled by another owner.
	Adopt bool
	// Force takes over fields owned by other field managers.
	Force bool
}

// ApplyOption configures [Apply].
type ApplyOption interface {
	ApplyToApply(*ApplyOptions)
}

// SetControllerReferenceOptions are the options of
// [SetControllerReference]; the zero value is no option.
type SetControllerReferenceOptions struct {
	// Adopt replaces another controller's reference.
	Adopt bool
}

// SetControllerReferenceOption configures [SetControllerReference].
type SetControllerReferenceOption interface {
	ApplyToSetControllerReference(*SetControllerReferenceOptions)
}

// Adopt replaces another owner's controller reference on the child with
// ours instead of returning an [*AlreadyOwnedError]. It works for
// [CreateOrUpdate], [CreateOrPatch], [Apply] and [SetControllerReference].
type Adopt struct{}

// ApplyToCreateOrUpdate implements [CreateOrUpdateOption].
func (Adopt) ApplyToCreateOrUpdate(o *CreateOrUpdateOptions) { o.Adopt = true }

// ApplyToCreateOrPatch implements [CreateOrPatchOption].
func (Adopt) ApplyToCreateOrPatch(o *CreateOrPatchOptions) { o.Adopt = true }

// ApplyToApply implements [ApplyOption].
func (Adopt) ApplyToApply(o *ApplyOptions) { o.Adopt = true }

// ApplyToSetControllerReference implements [SetControllerReferenceOption].
func (Adopt) ApplyToSetControllerReference(o *SetControllerReferenceOptions) { o.Adopt = true }

// Force makes [Apply] take over fields that other field managers own
// (server-side apply's force).
type Force struct{}

// ApplyToApply implements [ApplyOption].
func (Force) ApplyToApply(o *ApplyOptions) { o.Force = true }

var (
	_ CreateOrUpdateOption         = Adopt{}
	_ CreateOrPatchOption          = Adopt{}
	_ ApplyOption                  = Adopt{}
	_ SetControllerReferenceOption = Adopt{}
	_ ApplyOption                  = Force{}
)
