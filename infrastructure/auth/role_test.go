package auth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/infrastructure/auth"
)

// TestMiddlewareAppliesThePolicy: reading needs viewer, every other method
// operator, the service's admin routes admin; a refusal is 403 with the
// standard error naming the role needed and the role held, and the
// handler sees the token's role.
func TestMiddlewareAppliesThePolicy(t *testing.T) {
	t.Parallel()
	a := newAuth(t, secret)
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	v1 := r.Group("/api/v1", a.Middleware(auth.Policy{Admin: []auth.Route{
		{Method: http.MethodDelete, Path: "/api/v1/things/:name"},
	}, Read: []auth.Route{{Method: http.MethodPost, Path: "/api/v1/things/_search"}}}))
	echo := func(c *gin.Context) { c.String(http.StatusOK, string(auth.RoleOf(c))+" "+auth.Subject(c)) }
	v1.GET("/things", echo)
	v1.HEAD("/things", echo)
	v1.POST("/things", echo)
	v1.POST("/things/_search", echo)
	v1.PUT("/things/:name", echo)
	v1.PATCH("/things/:name", echo)
	v1.DELETE("/things/:name", echo)
	v1.DELETE("/things/:name/notes", echo)

	tests := []struct {
		method, path string
		need         auth.Role
	}{
		{http.MethodGet, "/api/v1/things", auth.RoleViewer},
		{http.MethodHead, "/api/v1/things", auth.RoleViewer},
		{http.MethodPost, "/api/v1/things", auth.RoleOperator},
		{http.MethodPost, "/api/v1/things/_search", auth.RoleViewer},
		{http.MethodPut, "/api/v1/things/x", auth.RoleOperator},
		{http.MethodPatch, "/api/v1/things/x", auth.RoleOperator},
		{http.MethodDelete, "/api/v1/things/x/notes", auth.RoleOperator},
		{http.MethodDelete, "/api/v1/things/x", auth.RoleAdmin},
	}
	for _, role := range auth.Roles() {
		token, _, err := a.Issue("user-1", role, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if role.Allows(tt.need) {
				if rec.Code != http.StatusOK || (tt.method != http.MethodHead && rec.Body.String() != string(role)+" user-1") {
					t.Errorf("%s %s as %s = %d %q, want 200", tt.method, tt.path, role, rec.Code, rec.Body)
				}
				continue
			}
			if rec.Code != http.StatusForbidden {
				t.Errorf("%s %s as %s = %d, want 403", tt.method, tt.path, role, rec.Code)
				continue
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body is not JSON: %s", rec.Body)
			}
			want := tt.method + " " + routePattern(tt.path) + " needs the " + string(tt.need) + " role; this token has the " + string(role) + " role"
			if body.Error.Code != "forbidden" || body.Error.Message != want {
				t.Errorf("%s %s as %s: error = %+v, want forbidden / %q", tt.method, tt.path, role, body.Error, want)
			}
		}
	}
}

func routePattern(path string) string {
	switch path {
	case "/api/v1/things/x":
		return "/api/v1/things/:name"
	case "/api/v1/things/x/notes":
		return "/api/v1/things/:name/notes"
	}
	return path
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"viewer", "operator", "admin"} {
		if r, err := auth.ParseRole(s); err != nil || string(r) != s {
			t.Errorf("ParseRole(%q) = %q, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "root", "Admin", " viewer"} {
		if _, err := auth.ParseRole(s); err == nil {
			t.Errorf("ParseRole(%q) accepted", s)
		}
	}
	if !auth.RoleAdmin.Allows(auth.RoleOperator) || auth.RoleViewer.Allows(auth.RoleOperator) || auth.Role("root").Allows(auth.RoleViewer) {
		t.Error("role order is wrong")
	}
}
