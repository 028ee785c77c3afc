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
)

var ErrCachedClient = errCachedClient

type EstablishTimeout = establishTimeout
