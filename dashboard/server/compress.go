package server

import (
	"compress/gzip"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// compressible reports whether a file of dist is text worth compressing
// (the JavaScript bundles are 165 KB and more; gzip takes two thirds off).
// Images and fonts are compressed already.
func compressible(name string) bool {
	switch path.Ext(name) {
	case ".js", ".mjs", ".css", ".svg", ".json", ".map", ".txt", ".html":
		return true
	}
	return false
}

// acceptsGzip reports whether the request's Accept-Encoding admits gzip
// (by name or *, with a q other than 0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}

// serveGzip answers with the file compressed. A range request is left to
// the file server (ranges are of the uncompressed bytes); the caller
// checks that.
func serveGzip(w http.ResponseWriter, r *http.Request, root fs.FS, name string) {
	f, err := root.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	h := w.Header()
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	_, _ = io.Copy(gz, f)
	_ = gz.Close()
}
