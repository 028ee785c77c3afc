package applyset

// The protocol's keys that only the tests read, the default tooling, the
// cached-client error and the establish timeout, for the external tests.
const (
	ParentTypeLabel      = parentTypeLabel
	ToolingAnnotation    = toolingAnnotation
	NamespacesAnnotation = namespacesAnnotation
	OnRemoveAnnotation   = onRemoveAnnotation
	LifecycleDeletion    = lifecycleDeletion
	DefaultTooling       = defaultTooling
	GroupKindsAnnotation = groupKindsAnnotation
)

// ID computes the id of a set from its parent's kind, namespace and name.
var ID = id

var ErrCachedClient = errCachedClient

type EstablishTimeout = establishTimeout
