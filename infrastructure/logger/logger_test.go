package logger_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/logger"
)

func TestNew(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		cfg       logger.Config
		wantErr   string
		wantDebug bool
		wantInfo  bool
		text      bool
	}{
		{name: "defaults are json at info", cfg: logger.Config{Service: "svc"}, wantInfo: true},
		{name: "debug text", cfg: logger.Config{Service: "svc", Level: "debug", Format: "text"}, wantDebug: true, wantInfo: true, text: true},
		{name: "warn hides info", cfg: logger.Config{Service: "svc", Level: "warn"}},
		{name: "bad level", cfg: logger.Config{Service: "svc", Level: "loud"}, wantErr: `Level must be debug, info, warn or error (got "loud")`},
		{name: "bad format", cfg: logger.Config{Service: "svc", Format: "xml"}, wantErr: `Format must be json or text (got "xml")`},
		{name: "missing service", cfg: logger.Config{}, wantErr: "Service is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log, err := logger.New(&buf, tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New() error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New() error = %v", err)
			}
			log.Debug("debug_line", "content_id", "c1")
			log.Info("info_line", "content_id", "c2")
			out := buf.String()
			if got := strings.Contains(out, "debug_line"); got != tt.wantDebug {
				t.Errorf("debug logged = %v, want %v:\n%s", got, tt.wantDebug, out)
			}
			if got := strings.Contains(out, "info_line"); got != tt.wantInfo {
				t.Errorf("info logged = %v, want %v:\n%s", got, tt.wantInfo, out)
			}
			if !tt.wantInfo {
				return
			}
			last := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:]
			if tt.text {
				if !strings.Contains(last, "service=svc") || !strings.Contains(last, "content_id=c2") {
					t.Errorf("text line lacks attributes: %s", last)
				}
				return
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(last), &rec); err != nil {
				t.Fatalf("line is not JSON: %v: %s", err, last)
			}
			if rec["service"] != "svc" || rec["content_id"] != "c2" || rec["msg"] != "info_line" {
				t.Errorf("record = %v", rec)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		env     map[string]string
		want    logger.Config
		wantErr string
	}{
		{"defaults", nil, logger.Config{Level: "info", Format: "json", Service: "svc"}, ""},
		{"set", map[string]string{"LOG_LEVEL": "debug", "LOG_FORMAT": "text"}, logger.Config{Level: "debug", Format: "text", Service: "svc"}, ""},
		{"invalid", map[string]string{"LOG_LEVEL": "trace", "LOG_FORMAT": "xml"}, logger.Config{Level: "info", Format: "json", Service: "svc"},
			`invalid configuration: LOG_FORMAT: must be one of json, text (got "xml"); LOG_LEVEL: must be one of debug, info, warn, error (got "trace")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := config.NewFromMap(tt.env)
			if got := logger.ConfigFromEnv(l, "svc"); got != tt.want {
				t.Errorf("ConfigFromEnv = %+v, want %+v", got, tt.want)
			}
			err := l.Err()
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("Err() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
