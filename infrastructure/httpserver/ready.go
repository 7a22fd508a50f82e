package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
)

type checkResult struct {
	name     string
	err      error
	advisory bool
}

// readyHandler runs every check at once, each bounded by timeout, so /ready
// answers within about timeout however many dependencies are down.
//
// The error text of a failing check goes only to callers details allows;
// everyone else reads "failing" (or "degraded" for an advisory check), which
// says what an orchestrator needs without host names, addresses or user
// names from driver errors.
func readyHandler(timeout time.Duration, details func(*http.Request) bool, checks []ReadyCheck) gin.HandlerFunc {
	return func(c *gin.Context) {
		showText := details != nil && details(c.Request)
		ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
		defer cancel()
		// Buffered so that a check which ignores ctx can still deliver its
		// result and exit after this handler has stopped waiting for it.
		results := make(chan checkResult, len(checks))
		for _, rc := range checks {
			go func() { results <- checkResult{name: rc.Name, err: rc.Check(ctx), advisory: rc.Advisory} }()
		}

		status := make(map[string]string, len(checks))
		failing, degraded := []string{}, []string{}
	collect:
		for len(status) < len(checks) {
			select {
			case r := <-results:
				status[r.name] = "ok"
				switch {
				case r.err != nil && r.advisory:
					status[r.name] = "degraded"
					if showText {
						status[r.name] = r.err.Error()
					}
					degraded = append(degraded, r.name)
				case r.err != nil:
					status[r.name] = "failing"
					if showText {
						status[r.name] = r.err.Error()
					}
					failing = append(failing, r.name)
				}
			case <-ctx.Done():
				break collect
			}
		}
		for _, rc := range checks {
			if _, answered := status[rc.Name]; !answered && !rc.Advisory {
				status[rc.Name] = fmt.Sprintf("no answer within %s", timeout)
				failing = append(failing, rc.Name)
			}
		}

		if len(failing) > 0 {
			slices.Sort(failing)
			c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not_ready", "failing": failing, "checks": status})
			return
		}
		if len(degraded) > 0 {
			slices.Sort(degraded)
			c.JSON(http.StatusOK, gin.H{"status": "ready", "degraded": degraded, "checks": status})
			return
		}
		c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": status})
	}
}
