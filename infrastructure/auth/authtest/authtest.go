// Package authtest checks a service's routes against its role policy and
// against the role matrix of docs/roles.md: every route called with a
// token of every role, and every route listed in the matrix with its
// minimum role, so a new route without a row fails its service's test.
package authtest

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/auth"
)

// APIPrefix is the prefix of the routes the policy guards.
const APIPrefix = "/api/v1/"

// Public is the minimum role the matrix gives a route that takes no token
// (the index-manager's login).
const Public = "public"

// Route is one route with its minimum role: a role name, or Public.
type Route struct {
	Method, Path, Role string
}

// pathValue fills every path parameter of a route pattern.
const pathValue = "zz-roletest"

// fill returns the route pattern with its parameters filled in.
func fill(pattern string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			parts[i] = pathValue
		}
	}
	return strings.Join(parts, "/")
}

// CheckRoutes calls every /api/v1 route of routes on h, first without a
// token, then with token(role) for every role, and checks each answer
// against policy: a route that answers without a token is Public; on the
// others, a role the policy allows is not refused (not 401 or 403; the
// request may still fail validation), a role it does not allow gets 403
// with the standard error "forbidden". It returns every route with its
// minimum role as observed.
func CheckRoutes(t *testing.T, h http.Handler, routes gin.RoutesInfo, policy auth.Policy, token func(auth.Role) string) []Route {
	t.Helper()
	var out []Route
	for _, r := range routes {
		if !strings.HasPrefix(r.Path, APIPrefix) {
			continue
		}
		if status, _ := call(h, r.Method, fill(r.Path), ""); status != http.StatusUnauthorized {
			out = append(out, Route{Method: r.Method, Path: r.Path, Role: Public})
			continue
		}
		need := policy.Required(r.Method, r.Path)
		out = append(out, Route{Method: r.Method, Path: r.Path, Role: string(need)})
		for _, role := range auth.Roles() {
			status, code := call(h, r.Method, fill(r.Path), token(role))
			switch {
			case role.Allows(need) && (status == http.StatusUnauthorized || status == http.StatusForbidden):
				t.Errorf("%s %s as %s = %d %s, want it let through (the policy needs %s)", r.Method, r.Path, role, status, code, need)
			case !role.Allows(need) && (status != http.StatusForbidden || code != "forbidden"):
				t.Errorf("%s %s as %s = %d %q, want 403 forbidden (the policy needs %s)", r.Method, r.Path, role, status, code, need)
			}
		}
	}
	return out
}

// call sends an empty JSON object to method path with token and returns
// the status and the error code of the answer.
func call(h http.Handler, method, path, token string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e.Error.Code
}

// Matrix reads the rows of service from the role matrix at path (the
// table of docs/roles.md):
// "| service | METHOD | `/api/v1/...` | what | ✓ | ✓ | ✓ | role |".
func Matrix(t *testing.T, path, service string) []Route {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Route
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) != 8 || strings.TrimSpace(cells[0]) != service {
			continue
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		r := Route{Method: cells[1], Path: cells[2], Role: cells[7]}
		// The three role columns must agree with the minimum role.
		for i, role := range auth.Roles() {
			want := "✓"
			if r.Role != Public && !role.Allows(auth.Role(r.Role)) {
				want = "—"
			}
			if cells[4+i] != want {
				t.Errorf("%s: %s %s: the %s column says %q, want %q for minimum role %s", path, r.Method, r.Path, role, cells[4+i], want, r.Role)
			}
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckMatrix checks that the matrix of service at path lists exactly the
// routes observed (CheckRoutes), each with its minimum role.
func CheckMatrix(t *testing.T, path, service string, observed []Route) {
	t.Helper()
	docs := Matrix(t, path, service)
	key := func(r Route) string { return r.Method + " " + r.Path + " " + r.Role }
	var want, got []string
	for _, r := range observed {
		want = append(want, key(r))
	}
	for _, r := range docs {
		got = append(got, key(r))
	}
	slices.Sort(want)
	slices.Sort(got)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: no row \"| %s | %s |\" with minimum role %s", path, service, w[:strings.LastIndex(w, " ")], w[strings.LastIndex(w, " ")+1:])
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s: the row %q of %s is not a route of the service with that minimum role", path, g, service)
		}
	}
}

// CheckAudited checks that every call CheckRoutes made to a mutating route
// (minimum role operator or admin) left one entry in the audit_log table
// of db: one per role, the refused ones included.
func CheckAudited(t *testing.T, db *sql.DB, observed []Route) {
	t.Helper()
	for _, r := range observed {
		if r.Role == Public || r.Role == string(auth.RoleViewer) {
			continue
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM audit_log WHERE method = $1 AND route = $2`, r.Method, r.Path).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(auth.Roles()) {
			t.Errorf("%s %s: %d audit entries, want %d (one per role)", r.Method, r.Path, n, len(auth.Roles()))
		}
	}
}

// Header is a request header with a token a issues for role.
func Header(t testing.TB, a *auth.Authenticator, role auth.Role) http.Header {
	t.Helper()
	return http.Header{"Authorization": {"Bearer " + issue(t, a, role)}}
}

// issue returns a token a issues for role, valid for an hour.
func issue(t testing.TB, a *auth.Authenticator, role auth.Role) string {
	t.Helper()
	return Token(t, a, string(role)+"@example.org", role)
}

// CheckService is the whole check of a service's API as its main mounts it
// on engine: every route called with a token issued by a for every role
// (CheckRoutes), the matrix of service in the docs at docsPath
// (CheckMatrix), and the audit log in db (CheckAudited).
func CheckService(t *testing.T, engine *gin.Engine, a *auth.Authenticator, policy auth.Policy, db *sql.DB, docsPath, service string) {
	t.Helper()
	token := func(r auth.Role) string { return issue(t, a, r) }
	observed := CheckRoutes(t, engine, engine.Routes(), policy, token)
	CheckMatrix(t, docsPath, service, observed)
	CheckAudited(t, db, observed)
}
