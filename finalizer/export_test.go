package finalizer

// Names the tests of package finalizer_test use for what is unexported.
const DefaultInProgressRequeue = defaultInProgressRequeue

// Names lists the registered finalizers in registration order.
func (h *Handler) Names() []string { return h.names() }
