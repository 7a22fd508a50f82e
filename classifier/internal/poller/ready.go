package poller

import (
	"fmt"
	"strings"
)

// Failing returns an error naming the raw indices the poller is skipping,
// with their reason codes, or nil when every index is polled. It feeds an
// advisory /ready check: one bad index degrades the service, it does not
// make it unready.
func Failing(statuses []IndexStatus) error {
	var names []string
	for _, s := range statuses {
		if s.Failing {
			names = append(names, fmt.Sprintf("%s (%s)", s.Index, s.ReasonCode))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%d raw index(es) skipped: %s", len(names), strings.Join(names, ", "))
}
