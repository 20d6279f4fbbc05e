package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Conditional and compressed answers for large, cached JSON bodies (the
// effective config): a strong ETag computed once per body, 304 Not
// Modified for a matching If-None-Match, and a gzip copy compressed once
// and kept for clients that accept it.

// minGzipSize is the smallest body worth compressing.
const minGzipSize = 1024

// encodedBody is one body with its validator and, once asked for, its
// gzip encoding.
type encodedBody struct {
	body   []byte // the identity body, without the trailing newline
	wire   []byte // body and its newline, written in one call
	etag   string // quoted strong entity tag of the identity body
	gzOnce sync.Once
	gz     []byte // gzip of body + "\n"
	gzTag  string // gzipETag
	// The header values of both answers, made once with the body
	// (fixedValue): ETag and Content-Length of the identity body and of
	// the gzip one.
	etagValue, lengthValue, gzTagValue, gzLenValue []string
	// lines and gzLines are the answer's fixed header lines (validators,
	// Vary, Cache-Control, X-Content-Type-Options and, for gzip,
	// Content-Encoding) as they go on the wire, for a corked connection
	// to add to the header section (corkLines).
	lines, gzLines []byte
}

// fixedLines returns the header lines of a cached 200 answer with entity
// tag etag, as net/http would write them from the map (canonical keys):
// the values are this package's constants and a tag of base64url
// characters, so no line can carry a CR or LF of its own.
func fixedLines(etag string, gzip bool) []byte {
	b := []byte("Cache-Control: " + valueNoCache[0] + "\r\n")
	if gzip {
		b = append(b, "Content-Encoding: "+valueGzip[0]+"\r\n"...)
	}
	b = append(b, "Etag: "+etag+"\r\n"...)
	b = append(b, "Vary: "+valueVaryEncoding[0]+"\r\n"...)
	b = append(b, "X-Content-Type-Options: "+valueNosniff[0]+"\r\n"...)
	return b
}

// gzipETag is the entity tag of the gzip representation: another
// representation needs another strong validator.
func (e *encodedBody) gzipETag() string { return e.etag[:len(e.etag)-1] + `-gzip"` }

func (e *encodedBody) gzipped() []byte {
	e.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(e.wire)
		_ = zw.Close()
		e.gz = buf.Bytes()
		e.gzLenValue = fixedValue(strconv.Itoa(len(e.gz)))
	})
	return e.gz
}

// bodyCache keeps an encodedBody per key (a node name) for the body last
// served under it; a different body (another slice) replaces it.
type bodyCache struct {
	mu      sync.RWMutex
	max     int
	entries map[string]*encodedBody
}

func newBodyCache(max int) *bodyCache {
	return &bodyCache{max: max, entries: map[string]*encodedBody{}}
}

// get returns the encodedBody of b under key, made (hashing b) on first use.
// The effective config cache hands out the same slice while it is current,
// so identity is a pointer comparison.
func (c *bodyCache) get(key string, b []byte) *encodedBody {
	c.mu.RLock()
	e := c.entries[key]
	c.mu.RUnlock()
	if e != nil && len(e.body) == len(b) && (len(b) == 0 || &e.body[0] == &b[0]) {
		return e
	}
	sum := sha256.Sum256(b)
	e = &encodedBody{body: b, wire: append(b[:len(b):len(b)], '\n'),
		etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
	e.gzTag = e.gzipETag()
	e.etagValue, e.gzTagValue = fixedValue(e.etag), fixedValue(e.gzTag)
	e.lengthValue = fixedValue(strconv.Itoa(len(e.wire)))
	e.lines, e.gzLines = fixedLines(e.etag, false), fixedLines(e.gzTag, true)
	c.mu.Lock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = e
	c.mu.Unlock()
	return e
}

// writeCachedJSON answers b (encoded JSON, cached by the caller under key)
// with its ETag: 304 when If-None-Match names it, gzip when the client
// accepts it, the identity body otherwise.
//
// On a corked connection (cork.go) a 200 answer's fixed headers leave as
// lines made once with the body (corkLines), and net/http's header map
// holds only the per-request ones: with the contract's headers the map
// would pass eight entries, which costs net/http a larger table for it and
// for its copy of it on every answer. Elsewhere (the local socket, tests
// without a connection) every header goes through the map.
func writeCachedJSON(w http.ResponseWriter, r *http.Request, c *bodyCache, key string, b []byte) error {
	e := c.get(key, b)
	gz := len(b) >= minGzipSize && acceptsGzip(r.Header["Accept-Encoding"])
	// Every header value here was made once with the body (fixedValue):
	// each header is one map assignment under its canonical key.
	h := w.Header()
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatches(inm, e.etag, e.gzTag) {
		setValidators(h, e, gz)
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	body, length, lines := e.wire, e.lengthValue, e.lines
	if gz {
		body = e.gzipped() // sets e.gzLenValue
		length, lines = e.gzLenValue, e.gzLines
	}
	if len(body) >= corkMin {
		if cc := corkOf(w); cc != nil {
			h["Content-Type"] = valueJSON
			h["Content-Length"] = length
			cc.corkLines(lines)
			// The request's own headers leave as lines too, so that
			// net/http's map (cloned, sorted and written header by
			// header) holds only the two above.
			cc.moveLines(h)
			defer cc.uncork()
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body)
			// Everything of the answer reaches the connection while it
			// is corked; it leaves in one write call with the lines.
			w.(http.Flusher).Flush()
			return nil
		}
	}
	setValidators(h, e, gz)
	if gz {
		h["Content-Encoding"] = valueGzip
	}
	writeJSONBytes(w, http.StatusOK, body, length)
	return nil
}

// setValidators sets the ETag of e's identity or gzip answer, Vary and
// Cache-Control.
func setValidators(h http.Header, e *encodedBody, gz bool) {
	h["Vary"] = valueVaryEncoding
	h["Cache-Control"] = valueNoCache
	if gz {
		h["Etag"] = e.gzTagValue
	} else {
		h["Etag"] = e.etagValue
	}
}

// acceptsGzip reports whether Accept-Encoding values accept gzip (named, or
// "*", with a q-value above 0; an explicit gzip entry wins over "*").
func acceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			ok := qAboveZero(params)
			if name == "*" {
				star = ok
				continue
			}
			return ok
		}
	}
	return star
}

// qAboveZero reads ";q=..." parameters: false only for a q-value of 0.
func qAboveZero(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q > 0
	}
	return true
}

// etagMatches reports whether If-None-Match values name one of tags, by the
// weak comparison RFC 9110 prescribes for If-None-Match ("*" matches any).
func etagMatches(values []string, tags ...string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" {
				return true
			}
			t = strings.TrimPrefix(t, "W/")
			for _, tag := range tags {
				if t == tag {
					return true
				}
			}
		}
	}
	return false
}
