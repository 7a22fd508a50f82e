package domain

// ErrorCode names why a document was not classified. Package fault turns an
// error into one, the worker results carry it, and the dead-letter queue
// (package deadletter) stores it and picks its retry policy by it.
type ErrorCode string

// Error codes. The first five are the specification's; DB_ERROR,
// VALIDATION_ERROR and NOT_FOUND are ours, so that a document's own fault and
// a document that no longer exists are told apart from an outage.
const (
	ErrorCodeESTimeout     ErrorCode = "ES_TIMEOUT"
	ErrorCodeESUnavailable ErrorCode = "ES_UNAVAILABLE"
	ErrorCodeRulePanic     ErrorCode = "RULE_PANIC"
	ErrorCodeQualityError  ErrorCode = "QUALITY_ERROR"
	ErrorCodeUnknown       ErrorCode = "UNKNOWN"
	ErrorCodeDB            ErrorCode = "DB_ERROR"
	ErrorCodeValidation    ErrorCode = "VALIDATION_ERROR"
	ErrorCodeNotFound      ErrorCode = "NOT_FOUND"
	// ErrorCodeStalled names a document whose claim expired without a
	// commit CLASSIFIER_MAX_STALLS times (a replica died or hung on it each
	// time): it is set aside instead of taking down more replicas.
	ErrorCodeStalled ErrorCode = "STALLED"
)
