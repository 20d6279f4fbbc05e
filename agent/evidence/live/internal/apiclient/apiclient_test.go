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

// TestAnswersAreNotQuoted: whatever answers at a team-chosen address, the
// error tells only the status and a message the API wrote as JSON; raw bytes
// (a banner, an HTML page, another protocol) never reach the caller.
func TestAnswersAreNotQuoted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/banner":
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("SSH-2.0-OpenSSH_9.2 secret-banner"))
		case "/html200":
			w.Write([]byte("<html>internal admin secret-banner</html>"))
		case "/jsonerr":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": "malformed query"}`))
		case "/jaegererr":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"errors": [{"code": 500, "msg": "storage down"}]}`))
		}
	}))
	defer srv.Close()
	c, err := New("jaeger", srv.URL, srv.Client(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/banner", "HTTP 502"},
		{"/html200", "not JSON"},
		{"/jsonerr", "malformed query"},
		{"/jaegererr", "storage down"},
	} {
		_, err := c.Get(context.Background(), tc.path, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to contain %q", tc.path, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "secret-banner") || strings.Contains(err.Error(), "SSH")) {
			t.Errorf("%s: the answer's bytes are in the error: %v", tc.path, err)
		}
	}
}
