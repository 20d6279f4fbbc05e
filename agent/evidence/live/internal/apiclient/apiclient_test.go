package apiclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/prefix/ok":
			if r.URL.Query().Get("q") != "a b" || r.Header.Get("X-Token") != "tok-123456" || r.Header.Get("Accept") != "application/json" {
				http.Error(w, "bad request shape", http.StatusTeapot)
				return
			}
			w.Write([]byte(`{"ok": true}`))
		case "/prefix/bad":
			http.Error(w, "bad query", http.StatusBadRequest)
		case "/prefix/echo":
			http.Error(w, "denied for "+r.Header.Get("X-Token"), http.StatusForbidden)
		case "/prefix/slow":
			time.Sleep(300 * time.Millisecond)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New("jaeger", srv.URL+"/prefix/", srv.Client(), map[string]string{"X-Token": "tok-123456"}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.Get(context.Background(), "/ok", url.Values{"q": {"a b"}})
	if err != nil || string(body) != `{"ok": true}` {
		t.Fatalf("ok: %s %v", body, err)
	}
	for _, tc := range []struct {
		path, code string
		status     int
	}{
		{"/bad", evidence.CodeInvalid, 400},
		{"/missing", evidence.CodeNotFound, 404},
		{"/echo", evidence.CodeUnavailable, 403},
		{"/slow", evidence.CodeUnavailable, 0},
	} {
		_, err := c.Get(context.Background(), tc.path, nil)
		if evidence.CodeOf(err) != tc.code || Status(err) != tc.status || evidence.SourceOf(err) != "jaeger" {
			t.Errorf("%s: %v (code %q, status %d), want %s %d", tc.path, err, evidence.CodeOf(err), Status(err), tc.code, tc.status)
		}
		if err != nil && strings.Contains(err.Error(), "tok-123456") {
			t.Errorf("%s: the header's secret is in the error: %v", tc.path, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, u := range []string{"", "jaeger:16686", "ftp://x", "http://", "http://u:p@x"} {
		if _, err := New("tempo", u, http.DefaultClient, nil, 0); evidence.CodeOf(err) != evidence.CodeInvalid {
			t.Errorf("%q: %v", u, err)
		}
	}
	if _, err := New("tempo", "http://x", nil, nil, 0); err == nil {
		t.Error("no client: no error")
	}
}
