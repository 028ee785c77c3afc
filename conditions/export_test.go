package conditions

// The limits, the fitting, the summary and the names that only the tests
// use, for the external tests.
const (
	MaxMessageLength       = maxMessageLength
	MaxReasonLength        = maxReasonLength
	MaxTypeLength          = maxTypeLength
	ReasonConditionMissing = reasonConditionMissing
)

var (
	FitMessage = fitMessage
	FitReason  = fitReason
	IsUnknown  = isUnknown
)
