package indexer

// For the tests: the name of the ControllerOwner index, the index values of
// an object, and the error of a conflicting registration.
const ControllerOwnerIndex = controllerOwnerIndex

func (i *Index[T]) Values(obj T) []string { return i.values(obj) }

type ConflictError = conflictError
