package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/north-cloud/infrastructure/auth"
)

// Bounds of a silence set through the dashboard (POST /api/alerts/silences).
const (
	// SilenceMaxDuration is the longest silence the dashboard sets: a
	// week, so a forgotten silence cannot hide an alert for good. Longer
	// ones are set with amtool, on purpose.
	SilenceMaxDuration = 7 * 24 * time.Hour
	// silenceMinDuration is the shortest (Alertmanager would take an end a
	// second away, which silences nothing).
	silenceMinDuration = time.Minute
	// silenceCommentMaxBytes bounds the comment, as the audit record does.
	silenceCommentMaxBytes = 1024
	// silenceMatchersMax bounds the label matchers besides alertname.
	silenceMatchersMax = 15
	// silenceLabelMaxBytes bounds a label name or value.
	silenceLabelMaxBytes = 255
	// silenceTimeout bounds each call to Alertmanager and the audit log.
	silenceTimeout = 10 * time.Second
	// silenceBodyMaxBytes bounds a request body and an upstream answer.
	silenceBodyMaxBytes = 64 << 10
	silenceListMaxBytes = 8 << 20
)

// labelName is Prometheus's label name syntax; silenceID is the UUID
// Alertmanager gives a silence.
var (
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	silenceID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// SilenceMatcher is one label equal to a value.
type SilenceMatcher struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SilenceRequest is the body of POST /api/alerts/silences: the alert's
// name, more labels it must have (optional), how long (duration, Go syntax
// such as "2h") or until when (ends_at, RFC 3339), one of the two, and why.
// Who silences is the token's subject, never a field of the body.
type SilenceRequest struct {
	Alertname string           `json:"alertname"`
	Matchers  []SilenceMatcher `json:"matchers,omitempty"`
	Duration  string           `json:"duration,omitempty"`
	EndsAt    *time.Time       `json:"ends_at,omitempty"`
	Comment   string           `json:"comment"`
}

// Silence is an Alertmanager silence as the dashboard lists it.
type Silence struct {
	ID        string           `json:"id"`
	Alertname string           `json:"alertname"`
	Matchers  []SilenceMatcher `json:"matchers"`
	StartsAt  time.Time        `json:"starts_at"`
	EndsAt    time.Time        `json:"ends_at"`
	CreatedBy string           `json:"created_by"`
	Comment   string           `json:"comment"`
	// State is active, pending (starts later) or expired.
	State string `json:"state"`
}

// SilenceList answers GET /api/alerts/silences.
type SilenceList struct {
	Silences []Silence `json:"silences"`
}

// amMatcher and amSilence are Alertmanager's API v2 shapes.
type amMatcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	IsEqual *bool  `json:"isEqual,omitempty"`
}

type amSilence struct {
	ID        string      `json:"id,omitempty"`
	Matchers  []amMatcher `json:"matchers"`
	StartsAt  time.Time   `json:"startsAt"`
	EndsAt    time.Time   `json:"endsAt"`
	CreatedBy string      `json:"createdBy"`
	Comment   string      `json:"comment"`
	Status    *struct {
		State string `json:"state"`
	} `json:"status,omitempty"`
}

// silences serves GET, POST /api/alerts/silences and DELETE
// /api/alerts/silences/{id}: Alertmanager's silences (Config.AlertmanagerURL),
// read by any role, set and expired by an operator or admin, each set and
// expiry recorded in the index-manager's audit log (POST
// /api/v1/audit/silences with the caller's own token, so the row's actor is
// the token's subject) because Alertmanager forgets expired silences. A
// silence the audit log did not take is expired again at once.
type silences struct {
	amURL    string
	auditURL string
	readOnly bool
	authn    *auth.Authenticator
	client   *http.Client
	now      func() time.Time
	failures interface{ Inc() }
	logger   *slog.Logger
	// changed (when set) is called after a silence is set or expired.
	changed func()
}

func newSilences(cfg Config, authn *auth.Authenticator, m *metrics, logger *slog.Logger) *silences {
	return &silences{
		amURL:    strings.TrimRight(cfg.AlertmanagerURL, "/"),
		auditURL: joinPath(strings.TrimRight(cfg.IndexManagerURL, "/"), "/api/v1/audit/silences"),
		readOnly: cfg.ReadOnly,
		authn:    authn,
		client:   &http.Client{Timeout: silenceTimeout},
		now:      time.Now,
		failures: m.silenceAuditFailures,
		logger:   logger.With("component", "silences"),
	}
}

func (s *silences) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	claims, err := s.authn.VerifyRequest(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required (log in to the dashboard)")
		return
	}
	id := r.PathValue("id")
	switch {
	case id == "" && r.Method == http.MethodGet:
	case id == "" && r.Method == http.MethodPost, id != "" && r.Method == http.MethodDelete:
		if s.readOnly {
			writeError(w, http.StatusForbidden, "read_only", "the dashboard is read-only (DASHBOARD_READ_ONLY): silences cannot be set or expired")
			return
		}
		if !claims.Role.Allows(auth.RoleOperator) {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("setting or expiring a silence needs the operator role; this token has the %s role", claims.Role))
			return
		}
	default:
		allow := "GET, POST"
		if id != "" {
			allow = "DELETE"
		}
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here ("+allow+")")
		return
	}
	if s.amURL == "" {
		writeError(w, http.StatusServiceUnavailable, "alertmanager_not_configured", "ALERTMANAGER_URL is not set: the dashboard has no silences")
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.list(w, r)
	case http.MethodPost:
		s.create(w, r, claims)
	default:
		s.expire(w, r, claims, id)
	}
}

func (s *silences) list(w http.ResponseWriter, r *http.Request) {
	var raw []amSilence
	if status, err := s.am(r.Context(), http.MethodGet, "/api/v2/silences", nil, &raw); err != nil {
		s.upstreamError(w, r, "list silences", status, err)
		return
	}
	out := SilenceList{Silences: []Silence{}}
	for _, a := range raw {
		if sil := fromAM(a); sil.State != "expired" {
			out.Silences = append(out.Silences, sil)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

func (s *silences) create(w http.ResponseWriter, r *http.Request, claims *auth.Claims) {
	var req SilenceRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, silenceBodyMaxBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", "the body must be one JSON object of alertname, matchers, duration or ends_at, and comment: "+err.Error())
		return
	}
	now := s.now().UTC()
	ends, msg := req.check(now)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_silence", msg)
		return
	}
	t := true
	matchers := []amMatcher{{Name: "alertname", Value: req.Alertname, IsEqual: &t}}
	for _, m := range req.Matchers {
		matchers = append(matchers, amMatcher{Name: m.Name, Value: m.Value, IsEqual: &t})
	}
	sil := amSilence{Matchers: matchers, StartsAt: now, EndsAt: ends, CreatedBy: claims.Subject, Comment: strings.TrimSpace(req.Comment)}
	var created struct {
		SilenceID string `json:"silenceID"`
	}
	if status, err := s.am(r.Context(), http.MethodPost, "/api/v2/silences", sil, &created); err != nil {
		s.upstreamError(w, r, "create silence", status, err)
		return
	}
	sil.ID = created.SilenceID
	if err := s.record(r, "silence", fromAM(sil)); err != nil {
		// Not recorded: undo it, so no silence stands that the log lacks.
		_, undoErr := s.am(context.WithoutCancel(r.Context()), http.MethodDelete, "/api/v2/silence/"+sil.ID, nil, nil)
		s.logger.ErrorContext(r.Context(), "silence not recorded in the audit log, expired again", "silence_id", sil.ID,
			"alertname", req.Alertname, "actor", claims.Subject, "error", err, "undo_error", undoErr)
		writeError(w, http.StatusBadGateway, "audit_unavailable", "the audit log (index-manager) did not record the silence, so it was not kept: "+err.Error())
		return
	}
	if s.changed != nil {
		s.changed()
	}
	s.logger.InfoContext(r.Context(), "silence set", "silence_id", sil.ID, "alertname", req.Alertname, "actor", claims.Subject, "ends_at", ends)
	writeJSON(w, http.StatusCreated, fromAM(sil))
}

func (s *silences) expire(w http.ResponseWriter, r *http.Request, claims *auth.Claims, id string) {
	if !silenceID.MatchString(id) {
		writeError(w, http.StatusBadRequest, "invalid_silence_id", "a silence id is a UUID such as 2f4c6a1e-0b1d-4c3e-9f5a-7d8e9a0b1c2d")
		return
	}
	var cur amSilence
	if status, err := s.am(r.Context(), http.MethodGet, "/api/v2/silence/"+id, nil, &cur); err != nil {
		if status == http.StatusNotFound {
			writeError(w, http.StatusNotFound, "unknown_silence", "Alertmanager has no silence "+id)
			return
		}
		s.upstreamError(w, r, "read silence", status, err)
		return
	}
	sil := fromAM(cur)
	if sil.State == "expired" {
		writeError(w, http.StatusConflict, "silence_expired", "silence "+id+" has already expired")
		return
	}
	if status, err := s.am(r.Context(), http.MethodDelete, "/api/v2/silence/"+id, nil, nil); err != nil {
		s.upstreamError(w, r, "expire silence", status, err)
		return
	}
	if s.changed != nil {
		s.changed()
	}
	if err := s.record(r, "expire_silence", sil); err != nil {
		s.logger.ErrorContext(r.Context(), "silence expired but not recorded in the audit log", "silence_id", id,
			"alertname", sil.Alertname, "actor", claims.Subject, "error", err)
		writeError(w, http.StatusBadGateway, "audit_unavailable", "the silence is expired, but the audit log (index-manager) did not record it: "+err.Error())
		return
	}
	s.logger.InfoContext(r.Context(), "silence expired", "silence_id", id, "alertname", sil.Alertname, "actor", claims.Subject)
	w.WriteHeader(http.StatusNoContent)
}

// check returns the silence's end, or what is wrong with the request.
func (req *SilenceRequest) check(now time.Time) (time.Time, string) {
	req.Alertname = strings.TrimSpace(req.Alertname)
	switch {
	case req.Alertname == "":
		return time.Time{}, "alertname is required: a silence matches one alert name"
	case len(req.Alertname) > silenceLabelMaxBytes || !utf8.ValidString(req.Alertname):
		return time.Time{}, "alertname is at most 255 bytes of UTF-8"
	case len(req.Matchers) > silenceMatchersMax:
		return time.Time{}, fmt.Sprintf("at most %d matchers besides alertname", silenceMatchersMax)
	case strings.TrimSpace(req.Comment) == "":
		return time.Time{}, "comment is required: say why the alert is silenced"
	case len(req.Comment) > silenceCommentMaxBytes || !utf8.ValidString(req.Comment):
		return time.Time{}, "comment is at most 1024 bytes of UTF-8"
	case (req.Duration == "") == (req.EndsAt == nil):
		return time.Time{}, "give either duration (such as 2h) or ends_at (RFC 3339), not both"
	}
	for _, m := range req.Matchers {
		switch {
		case !labelName.MatchString(m.Name) || len(m.Name) > silenceLabelMaxBytes:
			return time.Time{}, fmt.Sprintf("matcher name %q is not a label name", m.Name)
		case m.Name == "alertname":
			return time.Time{}, "alertname goes in the alertname field, not in matchers"
		case m.Value == "" || len(m.Value) > silenceLabelMaxBytes || !utf8.ValidString(m.Value):
			return time.Time{}, fmt.Sprintf("matcher %s needs a value of 1 to 255 bytes", m.Name)
		}
	}
	var ends time.Time
	if req.Duration != "" {
		d, err := time.ParseDuration(req.Duration)
		if err != nil {
			return time.Time{}, fmt.Sprintf("duration %q is not a duration such as 30m or 2h", req.Duration)
		}
		ends = now.Add(d)
	} else {
		ends = req.EndsAt.UTC()
	}
	switch {
	case !ends.After(now):
		return time.Time{}, "the silence would end in the past"
	case ends.Sub(now) < silenceMinDuration:
		return time.Time{}, "a silence lasts at least a minute"
	case ends.Sub(now) > SilenceMaxDuration:
		return time.Time{}, fmt.Sprintf("a silence lasts at most %s (7 days); set a longer one with amtool", SilenceMaxDuration)
	}
	return ends.Truncate(time.Second), ""
}

func fromAM(a amSilence) Silence {
	out := Silence{ID: a.ID, Matchers: []SilenceMatcher{}, StartsAt: a.StartsAt.UTC(), EndsAt: a.EndsAt.UTC(), CreatedBy: a.CreatedBy, Comment: a.Comment, State: "active"}
	if a.Status != nil {
		out.State = a.Status.State
	}
	for _, m := range a.Matchers {
		if m.Name == "alertname" && !m.IsRegex {
			out.Alertname = m.Value
			continue
		}
		out.Matchers = append(out.Matchers, SilenceMatcher{Name: m.Name, Value: m.Value})
	}
	return out
}

// record writes the set or expiry of sil to the index-manager's audit log
// with the caller's token.
func (s *silences) record(r *http.Request, action string, sil Silence) error {
	matchers := append([]SilenceMatcher{{Name: "alertname", Value: sil.Alertname}}, sil.Matchers...)
	body, err := json.Marshal(map[string]any{
		"action": action, "silence_id": sil.ID, "alertname": sil.Alertname, "matchers": matchers,
		"starts_at": sil.StartsAt, "ends_at": sil.EndsAt, "comment": sil.Comment,
	})
	if err != nil {
		return fmt.Errorf("record silence: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), silenceTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.auditURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("record silence: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	res, err := s.client.Do(req)
	if err != nil {
		s.failures.Inc()
		return fmt.Errorf("record silence: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		s.failures.Inc()
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return fmt.Errorf("record silence: index-manager answered %d: %s", res.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// am calls Alertmanager's API; out (when not nil) gets the JSON answer.
// It returns Alertmanager's status with an error for anything but 2xx.
func (s *silences) am(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("alertmanager %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, silenceTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.amURL+path, body)
	if err != nil {
		return 0, fmt.Errorf("alertmanager %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("alertmanager %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return res.StatusCode, fmt.Errorf("alertmanager %s %s: %d: %s", method, path, res.StatusCode, bytes.TrimSpace(msg))
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(res.Body, silenceListMaxBytes)).Decode(out); err != nil {
			return res.StatusCode, fmt.Errorf("alertmanager %s %s: decode: %w", method, path, err)
		}
	}
	return res.StatusCode, nil
}

// upstreamError answers a failed Alertmanager call: its own 4xx refusal
// as 400 with its reason, anything else as 502.
func (s *silences) upstreamError(w http.ResponseWriter, r *http.Request, op string, status int, err error) {
	s.logger.WarnContext(r.Context(), "alertmanager call failed", "operation", op, "status", status, "error", err)
	if status >= 400 && status < 500 {
		writeError(w, http.StatusBadRequest, "invalid_silence", "Alertmanager refused it: "+err.Error())
		return
	}
	var timeout bool
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		timeout = true
	}
	if timeout {
		writeError(w, http.StatusGatewayTimeout, "upstream_timeout", fmt.Sprintf("Alertmanager did not answer within %s", silenceTimeout))
		return
	}
	writeError(w, http.StatusBadGateway, "upstream_unavailable", "Alertmanager did not answer: "+op)
}
