package ownership

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AlreadyOwnedError is returned when the child has another controller, or
// has none but its owner record ([OwnerKindLabel] and [OwnerNameLabel], or
// the annotation of an owner whose kind or name is not a label value; see
// [RecordOwner]) names another owner (a child orphaned by its owner's
// deletion, or restored from a backup, that another owner of the same name
// will take back). The record is read whether or not the call passes
// [RecordOwner].
type AlreadyOwnedError struct {
	// Child, Owner and Controller name the child, the owner that wanted
	// it and its current controller, as "Kind namespace/name"
	// (Controller as "Kind name": a reference does not say whether the
	// controller is namespaced). Controller is empty when the child has
	// no controller and Recorded refused it.
	Child, Owner, Controller string
	// Recorded is the owner the child's record names, when that is what
	// refused the child: as "Kind namespace/name" (or "Kind name" for a
	// cluster-scoped owner) when read from the annotation, as "Kind
	// name" when read from the labels, which do not say whether the owner
	// is namespaced; the values quoted when they name no owner. The kind
	// is named with its group ("Kind.group", or "Kind (core group)") when
	// it is Owner's kind of another group.
	Recorded string
	// RecordedIn is the form Recorded was read from: "labels" or
	// "annotation" (empty when Recorded is).
	RecordedIn string

	// sameName, for a controller of Owner's kind and name, says that
	// its UID is not Owner's and what that may mean.
	sameName string
}

// Error implements error.
func (e *AlreadyOwnedError) Error() string {
	if e.Controller == "" && e.Recorded != "" {
		where := formKeys(e.RecordedIn) + " records"
		if e.RecordedIn == inLabels {
			where = formKeys(e.RecordedIn) + " record"
		}
		return fmt.Sprintf("ownership: %s has no controller, but its %s %s as its owner; not taking it over for %s (pass ownership.Adopt{} to do so)",
			e.Child, where, e.Recorded, e.Owner)
	}
	if e.sameName != "" {
		// Adopt would be the wrong advice: from a stale copy of the owner
		// it takes the child from the live one.
		return fmt.Sprintf("ownership: %s is already controlled by another %s; not taking it over: %s", e.Child, e.Controller, e.sameName)
	}
	return fmt.Sprintf("ownership: %s is already controlled by %s; not taking it over for %s (pass ownership.Adopt{} to do so)",
		e.Child, e.Controller, e.Owner)
}

// invalidOwnerError is returned, before any write, for an owner reference
// that the API server or the garbage collector would not honour.
type invalidOwnerError struct {
	// Child and Owner name the objects, as "Kind namespace/name".
	Child, Owner string
	// Field is the field at fault: "metadata.uid" (the owner's: it has
	// none) or "metadata.namespace" (the child's: another namespace than
	// the owner's, or none).
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *invalidOwnerError) Error() string {
	return fmt.Sprintf("ownership: %s cannot own %s: field %s: %s", e.Owner, e.Child, e.Field, e.Reason)
}

// MutateOptions are the options of [CreateOrUpdate], the call that builds
// the child with a mutate function; the zero value is no option.
type MutateOptions struct {
	// Adopt takes over a child controlled by another owner.
	Adopt bool
	// Record writes the owner record on the child (see [RecordOwner]).
	Record bool
}

// MutateOption configures [CreateOrUpdate].
type MutateOption interface {
	ApplyToMutate(*MutateOptions)
}

// ApplyOptions are the options of [Apply]; the zero value is no option.
type ApplyOptions struct {
	// Adopt takes over a child controlled by another owner.
	Adopt bool
	// Force takes over fields owned by other field managers.
	Force bool
	// Record writes the owner record on the child (see [RecordOwner]).
	Record bool
}

// ApplyOption configures [Apply].
type ApplyOption interface {
	ApplyToApply(*ApplyOptions)
}

// Adopt replaces another owner's controller reference on the child with
// ours, or takes a child without a controller whose record
// ([OwnerKindLabel] and [OwnerNameLabel], or the annotation) names another
// owner, instead of returning an [*AlreadyOwnedError]: the other owner's
// record is removed (and ours written with [RecordOwner]). It works for
// [CreateOrUpdate] and [Apply].
type Adopt struct{}

// ApplyToMutate implements [MutateOption].
func (Adopt) ApplyToMutate(o *MutateOptions) { o.Adopt = true }

// ApplyToApply implements [ApplyOption].
func (Adopt) ApplyToApply(o *ApplyOptions) { o.Adopt = true }

// Force makes [Apply] take over fields that other field managers own
// (server-side apply's force).
type Force struct{}

// ApplyToApply implements [ApplyOption].
func (Force) ApplyToApply(o *ApplyOptions) { o.Force = true }

// RecordOwner makes [CreateOrUpdate] and [Apply] write
// the owner record on the child, beside its controller reference: the
// owner's kind and name in [OwnerKindLabel] and [OwnerNameLabel] (in the
// annotation "ownership.steady.dev/owner" when the owner's kind or name is
// not a label value). A child restored from a backup without its owner
// references (as Velero restores) is then taken back by the owner created
// again under its kind and name (a new UID), and refused to another owner
// with an [*AlreadyOwnedError]. Without it no record is written; a record
// already on a child is read all the same (one that names another owner
// refuses the child, one that names this owner takes it back), and kept:
// another owner's record is removed only when the call takes the child
// (with [Adopt], or from a stale controller reference of this owner's),
// never from a child the owner controls already.
//
// Pass it on every call for a child, or on none: [Apply] without it sends
// no record, so the API server removes the record labels its field manager
// applied before.
type RecordOwner struct{}

// ApplyToMutate implements [MutateOption].
func (RecordOwner) ApplyToMutate(o *MutateOptions) { o.Record = true }

// ApplyToApply implements [ApplyOption].
func (RecordOwner) ApplyToApply(o *ApplyOptions) { o.Record = true }

var (
	_ MutateOption = Adopt{}
	_ ApplyOption  = Adopt{}
	_ ApplyOption  = Force{}
	_ MutateOption = RecordOwner{}
	_ ApplyOption  = RecordOwner{}
)

// immutable adds to err, the API server's refusal of a write that changes
// a field it does not let change (a Job's template, a Deployment's
// selector), the way out: set such a field only when the child is created.
// Any other error is returned as it is.
func immutable(err error) error {
	var fields []string
	for _, c := range invalidCauses(err) {
		if strings.Contains(c.Message, "field is immutable") && !slices.Contains(fields, c.Field) {
			fields = append(fields, c.Field)
		}
	}
	if len(fields) == 0 {
		return err
	}
	return fmt.Errorf("%w (the API server does not let %s change: set it in mutate only when the child is created, where child.GetCreationTimestamp().IsZero())",
		err, strings.Join(fields, ", "))
}

// invalidCauses are the causes of err when it is the API server's refusal
// of an invalid object (422, apierrors.IsInvalid), else none.
func invalidCauses(err error) []metav1.StatusCause {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	return status.Status().Details.Causes
}
