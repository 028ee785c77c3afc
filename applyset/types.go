package applyset

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// Labels and annotations of the ApplySet protocol, and the two keep
// annotations honoured by prune.
const (
	IDLabel                  = "applyset.kubernetes.io/id"
	PartOfLabel              = "applyset.kubernetes.io/part-of"
	ParentTypeLabel          = "applyset.kubernetes.io/is-parent-type"
	ToolingAnnotation        = "applyset.kubernetes.io/tooling"
	GroupKindsAnnotation     = "applyset.kubernetes.io/contains-group-kinds"
	NamespacesAnnotation     = "applyset.kubernetes.io/additional-namespaces"
	OnRemoveAnnotation       = "cli-utils.sigs.k8s.io/on-remove"
	LifecycleDeletion        = "client.lifecycle.config.k8s.io/deletion"
	DefaultTooling           = "steady/v0.1.0"
	defaultFieldManagerAffix = "-applyset"
)

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
	// ID is the object's identity, as cli-utils writes it in inventories.
	ID object.ObjMetadata
	// Object is "Kind.group namespace/name".
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

// ParseError names the document of a multi-document input that is wrong.
type ParseError struct {
	// Source names the input (a file name, or "input").
	Source string
	// Document is the index of the document, from 0.
	Document int
	// Field is the field at fault, when known.
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

// ToolingError is returned for a parent managed by another tool.
type ToolingError struct {
	Parent, Tooling, Want string
}

// Error implements error.
func (e *ToolingError) Error() string {
	return fmt.Sprintf("applyset: parent %s is managed by tooling %q, not %q; pass applyset.Adopt() to take it over", e.Parent, e.Tooling, e.Want)
}

// NotCurrentError lists the objects that kstatus did not find Current
// within the wait of [WaitCurrent]; nothing was pruned.
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
	return "applyset: not current, nothing pruned: " + strings.Join(parts, "; ")
}

// ValidationError lists the objects that the server-side dry run refused;
// nothing was written.
type ValidationError struct {
	Errors []error
}

// Error implements error.
func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	return "applyset: nothing applied, the dry run refused: " + strings.Join(msgs, "; ")
}

// Unwrap returns the underlying errors.
func (e *ValidationError) Unwrap() []error { return e.Errors }

func describe(u *unstructured.Unstructured) string {
	gk := u.GroupVersionKind().GroupKind().String()
	if u.GetNamespace() == "" {
		return gk + " " + u.GetName()
	}
	return gk + " " + u.GetNamespace() + "/" + u.GetName()
}
