package applyset

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Labels of the ApplySet protocol: the parent's ID label (its value is
// [Set.ID]) and the members' part-of label (the same value).
const (
	IDLabel     = "applyset.kubernetes.io/id"
	PartOfLabel = "applyset.kubernetes.io/part-of"
)

// The rest of the protocol (see docs/applyset.md), the two keep annotations
// honoured by prune, and the defaults.
const (
	parentTypeLabel          = "applyset.kubernetes.io/is-parent-type"
	groupKindsAnnotation     = "applyset.kubernetes.io/contains-group-kinds"
	toolingAnnotation        = "applyset.kubernetes.io/tooling"
	namespacesAnnotation     = "applyset.kubernetes.io/additional-namespaces"
	onRemoveAnnotation       = "cli-utils.sigs.k8s.io/on-remove"
	lifecycleDeletion        = "client.lifecycle.config.k8s.io/deletion"
	defaultTooling           = "steady/v0.1.0"
	defaultFieldManagerAffix = "-applyset"
)

// ObjectID identifies an object by group, kind, namespace and name. Its
// fields are those of cli-utils' object.ObjMetadata, in the same order, so
// that object.ObjMetadata(id) converts it (or use the applyset/cliutils
// package); applyset does not import cli-utils/pkg/object, which would add
// kustomize and cli-runtime to every binary.
type ObjectID struct {
	Namespace string
	Name      string
	GroupKind schema.GroupKind
}

// String names the object as "Kind.group namespace/name" ("Kind name" for a
// cluster-scoped object of the core group).
func (id ObjectID) String() string {
	if id.Namespace == "" {
		return id.GroupKind.String() + " " + id.Name
	}
	return id.GroupKind.String() + " " + id.Namespace + "/" + id.Name
}

// Action is what happened to one object.
type Action string

// The actions of a [Result].
const (
	Applied   Action = "Applied"
	Unchanged Action = "Unchanged"
	Pruned    Action = "Pruned"
	Detached  Action = "Detached" // kept by annotation, no longer a member
	Skipped   Action = "Skipped"
	Failed    Action = "Failed"
)

// ObjectResult is what happened to one object.
type ObjectResult struct {
	// ID is the object's identity; for a Skipped kind or a Failed list only
	// its GroupKind (and Namespace) are set. A Skipped object (a Namespace
	// or CRD that members still need) has its whole identity.
	ID ObjectID
	// Object is ID as a string, "Kind.group namespace/name".
	Object string
	Action Action
	// Err is set for Failed, and says why for Skipped.
	Err error
}

// Result lists what happened to each object, applied ones first.
type Result struct {
	Objects []ObjectResult
}

// Count returns how many objects had the action.
func (r *Result) Count(a Action) int {
	n := 0
	for _, o := range r.Objects {
		if o.Action == a {
			n++
		}
	}
	return n
}

func (r *Result) add(id ObjectID, a Action, err error) {
	r.Objects = append(r.Objects, ObjectResult{ID: id, Object: id.String(), Action: a, Err: err})
}

// ParseError names the document of a multi-document input that is wrong.
type ParseError struct {
	// Source names the input (a file name, or "input").
	Source string
	// Document is the index of the document, from 0.
	Document int
	// Field is the field at fault, when known ("items[2].kind" for an item
	// of a List).
	Field string
	Err   error
}

// Error implements error.
func (e *ParseError) Error() string {
	field := ""
	if e.Field != "" {
		field = " field " + e.Field + ":"
	}
	return fmt.Sprintf("applyset: %s document %d:%s %v", e.Source, e.Document, field, e.Err)
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ToolingError is returned for a parent that another tool manages, or for
// an existing Secret or ConfigMap that is not a parent yet (Tooling empty).
// Nothing was written.
type ToolingError struct {
	Parent, Tooling, Want string
}

// Error implements error.
func (e *ToolingError) Error() string {
	if e.Tooling == "" {
		return fmt.Sprintf("applyset: parent %s already exists and is missing the annotation %s; pass applyset.Adopt{} to make it a parent", e.Parent, toolingAnnotation)
	}
	return fmt.Sprintf("applyset: parent %s is managed by tooling %q, not %q; pass applyset.Adopt{} to take it over", e.Parent, e.Tooling, e.Want)
}

// NotCurrentError lists the objects that kstatus did not find Current
// within the wait of [WaitCurrent]; they were applied, nothing was pruned.
type NotCurrentError struct {
	// Objects maps "Kind.group namespace/name" to its kstatus status and
	// message.
	Objects map[string]string
}

// Error implements error.
func (e *NotCurrentError) Error() string {
	var parts []string
	for o, s := range e.Objects {
		parts = append(parts, o+": "+s)
	}
	sort.Strings(parts)
	return "applyset: applied but not current, nothing pruned: " + strings.Join(parts, "; ")
}

// ObjectError is one object that the checks of the input, the server-side
// dry run or the wait for a CRD refused: one of the Errors of a
// [*ValidationError], which callers reach with errors.As (it names the
// first) or by ranging over ValidationError.Errors.
type ObjectError struct {
	// Index is the object's index in the input of [Set.Apply].
	Index int
	// ID is the object's identity, as far as the input gives it (empty for
	// a nil object).
	ID ObjectID
	// Field is the field at fault ("metadata.name", "kind", "apiVersion",
	// "metadata.namespace", "spec.names", or the field the API server's
	// refusal names); empty when the refusal names none.
	Field string
	// Err says what is wrong: for a refusal of the API server, its
	// *StatusError (apierrors.IsInvalid and the like read through).
	Err error
}

// Error implements error.
func (e *ObjectError) Error() string {
	what := fmt.Sprintf("object %d", e.Index)
	if e.ID != (ObjectID{}) {
		what += ", " + e.ID.String()
	}
	if e.Field != "" && !strings.Contains(e.Err.Error(), e.Field) { // a 422 names its fields
		what += ": field " + e.Field
	}
	return fmt.Sprintf("%s: %v", what, e.Err)
}

// Unwrap returns the underlying error.
func (e *ObjectError) Unwrap() error { return e.Err }

// ValidationError lists the objects that the checks of the input or the
// server-side dry run refused, each an [*ObjectError]. Written names what this Apply had written
// before (the parent, CRDs and Namespaces of the set, which must be in place
// before the members they define or hold can be dry-run); no member was
// written besides those.
type ValidationError struct {
	Errors []error
	// Written is what was written before the refusal, "Kind.group
	// namespace/name" in order; empty when nothing was.
	Written []string
}

// Error implements error.
func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	if len(e.Written) == 0 {
		return "applyset: nothing written, refused: " + strings.Join(msgs, "; ")
	}
	return "applyset: refused: " + strings.Join(msgs, "; ") + "; written before the refusal: " + strings.Join(e.Written, ", ")
}

// Unwrap returns the underlying errors.
func (e *ValidationError) Unwrap() []error { return e.Errors }
