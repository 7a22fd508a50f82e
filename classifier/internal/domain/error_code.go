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

// Permanent reports whether a failure with code cannot be undone by
// classifying the same document again: VALIDATION_ERROR (the door refused
// the document as it is) and NOT_FOUND (the document no longer exists).
// Their entries get no automatic retries (DefaultRetryPolicy), and an
// operator's retry of one is refused (package deadletter): only a new
// crawl of the document, which writes it again as pending, can change the
// outcome.
func (c ErrorCode) Permanent() bool {
	return c == ErrorCodeValidation || c == ErrorCodeNotFound
}

// PermanentCodes lists the codes whose failures are Permanent.
func PermanentCodes() []ErrorCode { return []ErrorCode{ErrorCodeValidation, ErrorCodeNotFound} }

// NotRetryableReason says why an entry with code is not retried, or ""
// when it may be.
func (c ErrorCode) NotRetryableReason() string {
	switch c {
	case ErrorCodeValidation:
		return "VALIDATION_ERROR is permanent: the document was refused as it is, and a retry classifies the same document; a new crawl of it is classified on its own"
	case ErrorCodeNotFound:
		return "NOT_FOUND is permanent: the document no longer exists in its raw index, so there is nothing to classify again"
	}
	return ""
}
