package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Bounds of the Prometheus proxy: the charts ask for a few series over at
// most a week, so anything heavier is refused before Prometheus sees it.
const (
	promQueryMaxBytes = 2048
	promRangeMax      = 7 * 24 * time.Hour
	promPointsMax     = 11_000 // Prometheus's own limit per series
	promTimeout       = 20 * time.Second
)

// prometheusProxy answers GET /api/prometheus/api/v1/query_range and
// /query from PrometheusURL, with only query, start, end, step and time
// passed on: the Overview's charts read the history Prometheus already
// keeps, so they survive a reload and match Grafana.
func prometheusProxy(base string, logger *slog.Logger) http.Handler {
	client := &http.Client{Timeout: promTimeout}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if base == "" {
			writeError(w, http.StatusServiceUnavailable, "prometheus_not_configured", "PROMETHEUS_URL is not set: the dashboard has no metrics history")
			return
		}
		endpoint := r.PathValue("endpoint")
		q := r.URL.Query()
		out := url.Values{}
		query := q.Get("query")
		if query == "" || len(query) > promQueryMaxBytes {
			writeError(w, http.StatusBadRequest, "invalid_query", fmt.Sprintf("query is required, at most %d bytes", promQueryMaxBytes))
			return
		}
		out.Set("query", query)
		switch endpoint {
		case "query_range":
			start, err1 := promTime(q.Get("start"))
			end, err2 := promTime(q.Get("end"))
			step, err3 := strconv.ParseFloat(q.Get("step"), 64)
			switch {
			case err1 != nil || err2 != nil || !end.After(start):
				writeError(w, http.StatusBadRequest, "invalid_range", "start and end must be Unix times or RFC 3339, end after start")
				return
			case end.Sub(start) > promRangeMax:
				writeError(w, http.StatusBadRequest, "invalid_range", "the range is at most 7 days")
				return
			case err3 != nil || step <= 0 || math.IsInf(step, 0) || end.Sub(start).Seconds()/step > promPointsMax:
				writeError(w, http.StatusBadRequest, "invalid_step", fmt.Sprintf("step must be a positive number of seconds giving at most %d points", promPointsMax))
				return
			}
			out.Set("start", q.Get("start"))
			out.Set("end", q.Get("end"))
			out.Set("step", q.Get("step"))
		case "query":
			if t := q.Get("time"); t != "" {
				if _, err := promTime(t); err != nil {
					writeError(w, http.StatusBadRequest, "invalid_time", "time must be a Unix time or RFC 3339")
					return
				}
				out.Set("time", t)
			}
		default:
			writeError(w, http.StatusNotFound, "not_found", "only query and query_range are proxied to Prometheus")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), promTimeout)
		defer cancel()
		out.Set("timeout", "15s")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/"+endpoint+"?"+out.Encode(), nil)
		res, err := client.Do(req)
		if err != nil {
			logger.WarnContext(r.Context(), "prometheus unavailable", "error", err)
			writeError(w, http.StatusBadGateway, "upstream_unavailable", "Prometheus did not answer")
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(res.Body, 32<<20))
	})
}

func promTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
