package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"deflate, gzip;q=0.5"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.0"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false}, // an explicit gzip entry wins
		{[]string{"br", "x-gzip"}, true},
		{[]string{"identity"}, false},
		{[]string{"gzipped"}, false},
	} {
		if got := acceptsGzip(tc.in); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestETagMatches(t *testing.T) {
	const tag, gz = `"abc"`, `"abc-gzip"`
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`"abc"`, true},
		{`W/"abc"`, true},
		{`"x", "abc-gzip"`, true},
		{`*`, true},
		{`"abd"`, false},
		{`abc`, false},
		{``, false},
	} {
		if got := etagMatches([]string{tc.in}, tag, gz); got != tc.want {
			t.Errorf("etagMatches(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestEffectiveConfigConditional checks the effective config's ETag, 304,
// gzip and that a change anywhere in the lineage changes the tag.
func TestEffectiveConfigConditional(t *testing.T) {
	h := newHarness(t)
	big := `{"agents":{"a":{"prompt":"` + strings.Repeat("investigate the checkout service ", 100) + `"}}}`
	if r := h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: big}); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	plain := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"Accept-Encoding": "identity"}})
	etag := plain.header.Get("ETag")
	if plain.status != 200 || etag == "" || plain.header.Get("Content-Encoding") != "" || plain.header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("plain: %d, ETag %q, headers %v", plain.status, etag, plain.header)
	}
	// The same tag again while nothing changed.
	if again := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"Accept-Encoding": "identity"}}); again.header.Get("ETag") != etag {
		t.Fatalf("ETag moved without a change: %q then %q", etag, again.header.Get("ETag"))
	}
	// If-None-Match: 304 with no body, also weak and in a list.
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag} {
		r := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"If-None-Match": inm}})
		if r.status != http.StatusNotModified || len(r.body) != 0 {
			t.Fatalf("If-None-Match %s: %d, %d bytes", inm, r.status, len(r.body))
		}
	}
	// gzip: another tag, the same content once decoded.
	zr := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"Accept-Encoding": "gzip"}})
	if zr.status != 200 || zr.header.Get("Content-Encoding") != "gzip" || zr.header.Get("ETag") == etag || len(zr.body) >= len(plain.body) {
		t.Fatalf("gzip: %d, encoding %q, ETag %q, %d bytes (identity %d)", zr.status, zr.header.Get("Content-Encoding"), zr.header.Get("ETag"), len(zr.body), len(plain.body))
	}
	rd, err := gzip.NewReader(bytes.NewReader(zr.body))
	if err != nil {
		t.Fatal(err)
	}
	if dec, _ := io.ReadAll(rd); !bytes.Equal(dec, plain.body) {
		t.Fatalf("gzip body decodes to %d bytes, not the identity body", len(dec))
	}
	// The gzip tag also validates.
	if r := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"If-None-Match": zr.header.Get("ETag")}}); r.status != http.StatusNotModified {
		t.Fatalf("If-None-Match with the gzip tag: %d", r.status)
	}
	// A change at the group level moves the team's tag: the old one gets 200.
	if r := h.do(req{method: "PUT", path: "/api/v1/admin/nodes/platform/config", token: "admin", body: `{"slack_channel":"#platform"}`}); r.status != 200 {
		t.Fatalf("group PUT: %d %s", r.status, r.body)
	}
	after := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"If-None-Match": etag, "Accept-Encoding": "identity"}})
	if after.status != 200 || after.header.Get("ETag") == etag || !bytes.Contains(after.body, []byte("#platform")) {
		t.Fatalf("after a group change: %d, ETag %q (was %q)", after.status, after.header.Get("ETag"), etag)
	}
	// Authentication still comes first: no token, no 304.
	if r := h.do(req{path: "/api/v1/config/me/effective", header: map[string]string{"If-None-Match": etag}}); r.status != http.StatusUnauthorized {
		t.Fatalf("no token with If-None-Match: %d", r.status)
	}
}
