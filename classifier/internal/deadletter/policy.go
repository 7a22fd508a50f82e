package deadletter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/north-cloud/classifier/internal/domain"
	"github.com/north-cloud/infrastructure/backoff"
)

// retryJitter spreads the retries of documents that failed together.
const retryJitter = 0.3

// Policies are the retry schedules by error code
// (CLASSIFIER_DLQ_RETRY_POLICY). A code without one follows the default
// schedule, except VALIDATION_ERROR, NOT_FOUND and STALLED: a document that
// can never succeed as it is, no longer exists, or stalled every replica that
// took it, gets no retries (it stays
// visible, and an operator can requeue it).
type Policies map[domain.ErrorCode]domain.RetryPolicy

// For returns the schedule of code.
func (ps Policies) For(code domain.ErrorCode) domain.RetryPolicy {
	if p, ok := ps[code]; ok {
		return p
	}
	return domain.DefaultRetryPolicy(code)
}

// backoff is the jittered first wait of code's schedule; Record doubles it
// per retry in SQL.
func (ps Policies) backoff(code domain.ErrorCode) backoff.Policy {
	p := ps.For(code)
	return backoff.Policy{Initial: p.Initial, Max: p.Max, Multiplier: 2, Jitter: retryJitter}
}

// ErrorCodes are every error code a dead-letter entry can carry.
func ErrorCodes() []domain.ErrorCode {
	return []domain.ErrorCode{domain.ErrorCodeESTimeout, domain.ErrorCodeESUnavailable, domain.ErrorCodeRulePanic,
		domain.ErrorCodeQualityError, domain.ErrorCodeUnknown, domain.ErrorCodeDB, domain.ErrorCodeValidation,
		domain.ErrorCodeNotFound, domain.ErrorCodeStalled}
}

// ParsePolicies reads CLASSIFIER_DLQ_RETRY_POLICY: comma-separated
// CODE=INITIAL/MAX/RETRIES, e.g. "ES_TIMEOUT=30s/30m/8,RULE_PANIC=5m/1h/2".
// Empty is no override.
func ParsePolicies(s string) (Policies, error) {
	ps := Policies{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		code, spec, ok := strings.Cut(item, "=")
		c := domain.ErrorCode(strings.ToUpper(strings.TrimSpace(code)))
		if !ok || !slices.Contains(ErrorCodes(), c) {
			return nil, fmt.Errorf("%q: want CODE=INITIAL/MAX/RETRIES with CODE one of %v", item, ErrorCodes())
		}
		parts := strings.Split(spec, "/")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q: want CODE=INITIAL/MAX/RETRIES, e.g. ES_TIMEOUT=30s/30m/8", item)
		}
		initial, err1 := time.ParseDuration(strings.TrimSpace(parts[0]))
		most, err2 := time.ParseDuration(strings.TrimSpace(parts[1]))
		retries, err3 := strconv.Atoi(strings.TrimSpace(parts[2]))
		switch {
		case err1 != nil || err2 != nil || err3 != nil:
			return nil, fmt.Errorf("%q: INITIAL and MAX are durations (30s, 1h) and RETRIES a whole number", item)
		case initial < time.Second || most < initial || most > 24*time.Hour:
			return nil, fmt.Errorf("%q: want 1s <= INITIAL <= MAX <= 24h", item)
		case retries < 0 || retries > 100:
			return nil, fmt.Errorf("%q: RETRIES must be 0..100", item)
		}
		if _, dup := ps[c]; dup {
			return nil, fmt.Errorf("%q: %s is given twice", item, c)
		}
		ps[c] = domain.RetryPolicy{Initial: initial, Max: most, Retries: retries}
	}
	return ps, nil
}
