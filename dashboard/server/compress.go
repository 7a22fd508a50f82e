package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
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
func acceptsGzip(r *http.Request) bool { return accepts(r, "gzip", true) }

// acceptsBrotli reports whether the request's Accept-Encoding names br
// with a q other than 0 (not through *: brotli only when asked for).
func acceptsBrotli(r *http.Request) bool { return accepts(r, "br", false) }

func accepts(r *http.Request, want string, star bool) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != want && (!star || coding != "*") {
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
	setContentType(h, name)
	h.Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	_, _ = io.Copy(gz, f)
	_ = gz.Close()
}

func setContentType(h http.Header, name string) {
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		h.Set("Content-Type", ct)
	}
}

// Bounds of the brotli cache: files larger than brotliMaxFile are not
// compressed with brotli (gzip serves them), and the cache holds at most
// brotliMaxCache bytes of compressed files (the built dashboard's are
// about 150 KB in all).
const (
	brotliMaxFile  = 8 << 20
	brotliMaxCache = 64 << 20
	// brotliQuality 10: the built index bundle (166 KB) compresses to
	// 54.4 KB in about 125 ms, against 53.4 KB in about 400 ms at 11 and
	// 68.4 KB with gzip; each file is compressed once per file version and
	// process (at its first request, which waits for it), and kept.
	brotliQuality = 10
)

// brotliCache compresses each text file of dist with brotli once (at its
// first request) and keeps the result, keyed by name, size and
// modification time, so a rebuilt dist is compressed again. The pure-Go
// encoder at a high quality is too slow to run per request; once per file
// it is about a tenth of a second.
type brotliCache struct {
	mu      sync.Mutex
	entries map[string]*brotliEntry
	bytes   int
}

type brotliEntry struct {
	once    sync.Once
	size    int64
	modTime time.Time
	data    []byte // nil when the file could not be read
}

func newBrotliCache() *brotliCache { return &brotliCache{entries: map[string]*brotliEntry{}} }

// get returns the compressed bytes of name, or nil when the file is too
// large, the cache is full or the file cannot be read (the caller falls
// back to gzip).
func (c *brotliCache) get(root fs.FS, name string, st fs.FileInfo) []byte {
	if st.Size() > brotliMaxFile {
		return nil
	}
	c.mu.Lock()
	e := c.entries[name]
	if e == nil || e.size != st.Size() || !e.modTime.Equal(st.ModTime()) {
		if e != nil {
			c.bytes -= len(e.data)
		}
		if c.bytes+int(st.Size()) > brotliMaxCache {
			c.mu.Unlock()
			return nil
		}
		e = &brotliEntry{size: st.Size(), modTime: st.ModTime()}
		c.entries[name] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		plain, err := fs.ReadFile(root, name)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		bw := brotli.NewWriterLevel(&buf, brotliQuality)
		_, _ = bw.Write(plain)
		_ = bw.Close()
		e.data = buf.Bytes()
		c.mu.Lock()
		c.bytes += len(e.data)
		c.mu.Unlock()
	})
	return e.data
}

// serveBrotli answers with the file's cached brotli bytes.
func serveBrotli(w http.ResponseWriter, r *http.Request, name string, data []byte) {
	h := w.Header()
	setContentType(h, name)
	h.Set("Content-Encoding", "br")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

// gzipJSON compresses the API's JSON answers (the proxied services' and the
// server's own) for a browser that accepts gzip: 200 outbox rows are
// 134 KB of JSON and about a tenth of that compressed. An answer that is
// not JSON, is already encoded, or is an event stream passes as it is.
func gzipJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || !acceptsGzip(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept-Encoding")
		gw := &gzipJSONWriter{ResponseWriter: w}
		defer gw.close()
		next.ServeHTTP(gw, r)
	})
}

// gzipJSONMinBytes: an answer whose Content-Length says it is smaller is
// not worth compressing (gzip's own framing is about 20 bytes).
const gzipJSONMinBytes = 512

type gzipJSONWriter struct {
	http.ResponseWriter
	decided bool
	gz      *gzip.Writer
}

func (g *gzipJSONWriter) WriteHeader(status int) {
	if !g.decided {
		g.decided = true
		h := g.Header()
		ct, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
		small := false
		if n, err := strconv.Atoi(h.Get("Content-Length")); err == nil && n < gzipJSONMinBytes {
			small = true
		}
		if ct == "application/json" && h.Get("Content-Encoding") == "" && !small &&
			status != http.StatusNoContent && status != http.StatusNotModified && status >= 200 {
			h.Del("Content-Length")
			h.Set("Content-Encoding", "gzip")
			g.gz, _ = gzip.NewWriterLevel(g.ResponseWriter, gzip.BestSpeed)
		}
	}
	g.ResponseWriter.WriteHeader(status)
}

func (g *gzipJSONWriter) Write(p []byte) (int, error) {
	if !g.decided {
		if g.Header().Get("Content-Type") == "" {
			g.Header().Set("Content-Type", http.DetectContentType(p))
		}
		g.WriteHeader(http.StatusOK)
	}
	if g.gz != nil {
		return g.gz.Write(p)
	}
	return g.ResponseWriter.Write(p)
}

// Flush sends what is compressed so far (the proxy flushes).
func (g *gzipJSONWriter) Flush() {
	if g.gz != nil {
		_ = g.gz.Flush()
	}
	http.NewResponseController(g.ResponseWriter).Flush() //nolint:errcheck // nothing to do when it cannot flush
}

// Unwrap lets http.ResponseController reach the connection.
func (g *gzipJSONWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *gzipJSONWriter) close() {
	if g.gz != nil {
		_ = g.gz.Close()
	}
}
