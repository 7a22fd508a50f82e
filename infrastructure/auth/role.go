package auth

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/httpserver"
)

// Role is what a token's holder may do, carried in the token's role claim.
// Roles are ordered: each may do everything the ones below it may.
type Role string

// The roles, lowest first.
const (
	// RoleViewer reads everything (GET, HEAD and OPTIONS on every route).
	RoleViewer Role = "viewer"
	// RoleOperator also runs every mutating route that is not an admin
	// route: rules, dead letters, outbox retries, reprocess, priorities.
	RoleOperator Role = "operator"
	// RoleAdmin also runs the admin routes each service names (index
	// creation, deletion, settings and maintenance, accounts).
	RoleAdmin Role = "admin"
)

// Roles lists the roles, lowest first.
func Roles() []Role { return []Role{RoleViewer, RoleOperator, RoleAdmin} }

// rank orders the roles; 0 is no known role.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a holder of r may do what needs the role need. An
// unknown role allows nothing.
func (r Role) Allows(need Role) bool { return r.Valid() && r.rank() >= need.rank() }

// ParseRole returns the role named s, or an error naming the known roles.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", fmt.Errorf("unknown role %q (want viewer, operator or admin)", s)
	}
	return r, nil
}

// Route is one route of a gin engine: its method and its full path
// pattern, as gin.Context.FullPath answers it ("/api/v1/indices/:name").
type Route struct {
	Method string
	Path   string
}

// Policy is the minimum role of every route behind Middleware. Reading
// (GET, HEAD, OPTIONS) needs RoleViewer, every other method needs
// RoleOperator, and the service's admin routes need RoleAdmin. It is
// applied by the middleware itself, so a new route is guarded by the rule
// of its method without anyone remembering to add it.
type Policy struct {
	// Admin lists the routes that need RoleAdmin.
	Admin []Route
	// Read lists the routes that only read although their method is not
	// GET (a search or a dry run sent by POST): they need RoleViewer.
	Read []Route
}

// Required returns the minimum role of the route method fullPath.
func (p Policy) Required(method, fullPath string) Role {
	if slices.Contains(p.Admin, Route{Method: method, Path: fullPath}) {
		return RoleAdmin
	}
	if slices.Contains(p.Read, Route{Method: method, Path: fullPath}) {
		return RoleViewer
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return RoleViewer
	}
	return RoleOperator
}

// roleKey stores the verified role on the gin context.
const roleKey = "github.com/north-cloud/infrastructure/auth.role"

// RoleOf returns the verified role of the request, or "" when the request
// did not pass through Middleware.
func RoleOf(c *gin.Context) Role {
	r, _ := c.Get(roleKey)
	role, _ := r.(Role)
	return role
}

// authorize answers 403 when role may not run the request's route under p.
func authorize(c *gin.Context, p Policy, role Role) bool {
	need := p.Required(c.Request.Method, c.FullPath())
	if role.Allows(need) {
		return true
	}
	httpserver.WriteError(c, http.StatusForbidden, httpserver.CodeForbidden,
		fmt.Sprintf("%s %s needs the %s role; this token has the %s role", c.Request.Method, c.FullPath(), need, role))
	return false
}
