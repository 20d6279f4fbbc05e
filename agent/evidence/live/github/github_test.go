package github

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

// fakeGitHub speaks the REST v3 shapes the client uses.
func fakeGitHub(t *testing.T) (*httptest.Server, *[]string) {
	var seen []string
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, r.URL.RequestURI())
			if r.Header.Get("Authorization") != "Bearer ghp_test" {
				w.WriteHeader(401)
				json.NewEncoder(w).Encode(map[string]string{"message": "Bad credentials"})
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /api/v3/search/code", auth(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "text-match") {
			t.Errorf("search without text-match media type")
		}
		q := r.URL.Query().Get("q")
		if q != "pool exhausted repo:shop/checkout" {
			t.Errorf("q = %q", q)
		}
		w.Write([]byte(`{"total_count": 1, "items": [{"name": "pool.go", "path": "src/pool.go", "repository": {"full_name": "shop/checkout"},
			"text_matches": [{"fragment": "return errors.New(\"connection pool exhausted\")"}]}]}`))
	}))
	mux.HandleFunc("GET /api/v3/repos/shop/checkout/contents/{path...}", auth(func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("path") {
		case "src/pool.go":
			if r.Header.Get("Accept") != "application/vnd.github.raw+json" {
				w.Write([]byte(`{"content": "` + base64.StdEncoding.EncodeToString([]byte("wrong")) + `"}`))
				return
			}
			w.Write([]byte("package checkout\n\nvar MaxOpen = 5\n"))
		default:
			w.WriteHeader(404)
			w.Write([]byte(`{"message": "Not Found"}`))
		}
	}))
	mux.HandleFunc("GET /api/v3/repos/shop/checkout/commits", auth(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("since") != "2026-03-14T00:00:00Z" {
			t.Errorf("since = %q", r.URL.Query().Get("since"))
		}
		w.Write([]byte(`[{"sha": "a1b2c3d4e5", "commit": {"message": "Lower pool size default\n\nbody", "author": {"name": "Alice", "date": "2026-03-14T10:09:00Z"}, "committer": {"date": "2026-03-14T10:10:00Z"}}, "author": {"login": "alice"}}]`))
	}))
	mux.HandleFunc("GET /api/v3/repos/shop/checkout/pulls", auth(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"number": 42, "title": "WIP", "state": "open", "merged_at": null, "updated_at": "2026-03-14T09:00:00Z", "user": {"login": "carol"}, "html_url": "https://x/42"},
			{"number": 41, "title": "Lower pool size", "state": "closed", "merged_at": "2026-03-14T10:05:00Z", "updated_at": "2026-03-14T10:05:00Z", "user": {"login": "alice"}},
			{"number": 3, "title": "old", "state": "closed", "merged_at": null, "updated_at": "2025-01-01T00:00:00Z", "user": {"login": "x"}}]`))
	}))
	mux.HandleFunc("GET /api/v3/repos/shop/checkout/deployments", auth(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"sha": "a1b2c3d4e5", "ref": "v2.4.1", "environment": "production", "created_at": "2026-03-14T10:20:00Z", "creator": {"login": "deploybot"}}]`))
	}))
	mux.HandleFunc("GET /api/v3/repos/shop/checkout/git/trees/HEAD", auth(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"tree": [{"path": "docs", "type": "tree"}, {"path": "docs/runbooks/oom.md", "type": "blob", "size": 10}, {"path": "src/pool.go", "type": "blob", "size": 10}]}`))
	}))
	mux.HandleFunc("GET /api/v3/repos/shop/limited/commits", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1773482400")
		w.WriteHeader(403)
		w.Write([]byte(`{"message": "API rate limit exceeded"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &seen
}

func newClient(t *testing.T, base string, repos ...any) *Client {
	res := secretref.NewResolver(secretref.ResolverOptions{LookupEnv: func(n string) (string, bool) { return "ghp_test\n", n == "GH" }})
	c, err := New(context.Background(), map[string]any{"domain": base + "/api/v3", "repositories": repos}, map[string]string{"github": "env:GH"}, res, outbound.New(outbound.MustAllowlist("127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClient(t *testing.T) {
	srv, _ := fakeGitHub(t)
	c := newClient(t, srv.URL, "shop/checkout", "shop/limited")
	ctx := context.Background()

	repos, _ := c.Repos(ctx)
	if strings.Join(repos, ",") != "shop/checkout,shop/limited" {
		t.Errorf("repos = %v", repos)
	}
	m, err := c.Search(ctx, "pool exhausted", "shop/checkout", 10)
	if err != nil || len(m) != 1 || m[0].Path != "src/pool.go" || m[0].Repo != "shop/checkout" || !strings.Contains(m[0].Text, "pool exhausted") {
		t.Fatalf("search = %+v, %v", m, err)
	}
	text, err := c.ReadFile(ctx, "shop/checkout", "src/pool.go")
	if err != nil || !strings.Contains(text, "MaxOpen = 5") {
		t.Fatalf("read = %q, %v", text, err)
	}
	if _, err := c.ReadFile(ctx, "shop/checkout", "nope.go"); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("missing file: %v", err)
	}
	for _, bad := range []string{"../x", "/etc/passwd"} {
		if _, err := c.ReadFile(ctx, "shop/checkout", bad); evidence.CodeOf(err) != evidence.CodeInvalid {
			t.Errorf("ReadFile(%q): %v", bad, err)
		}
	}
	if _, err := c.ReadFile(ctx, "other/repo", "a"); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("unlisted repository: %v", err)
	}
	since := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	cs, err := c.Commits(ctx, "shop/checkout", since)
	if err != nil || len(cs) != 1 || cs[0].Author != "alice" || !cs[0].Time.Equal(since.Add(10*time.Hour+10*time.Minute)) {
		t.Errorf("commits = %+v, %v", cs, err)
	}
	prs, err := c.PullRequests(ctx, "shop/checkout", since)
	if err != nil || len(prs) != 2 || prs[0].Number != 42 || prs[1].State != "merged" || prs[1].MergedAt.IsZero() {
		t.Errorf("pulls = %+v, %v", prs, err)
	}
	ds, err := c.Deployments(ctx, "shop/checkout", since)
	if err != nil || len(ds) != 1 || ds[0].Service != "checkout" || ds[0].Kind != "deploy" || ds[0].Author != "deploybot" || !strings.Contains(ds[0].Description, "v2.4.1") {
		t.Errorf("deployments = %+v, %v", ds, err)
	}
	files, err := c.ListFiles(ctx, "shop/checkout", "docs")
	if err != nil || len(files) != 1 || files[0] != "docs/runbooks/oom.md" {
		t.Errorf("files = %v, %v", files, err)
	}
	_, err = c.Commits(ctx, "shop/limited", since)
	if evidence.CodeOf(err) != evidence.CodeUnavailable || !strings.Contains(err.Error(), "rate limit") || !strings.Contains(err.Error(), "2026-03-14T10:00:00Z") {
		t.Errorf("rate limit: %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	srv, _ := fakeGitHub(t)
	c := newClient(t, srv.URL, "shop/checkout")
	c.Token = "wrong"
	if _, err := c.Commits(context.Background(), "shop/checkout", time.Time{}); evidence.CodeOf(err) != evidence.CodeUnavailable || !strings.Contains(err.Error(), "Bad credentials") {
		t.Errorf("bad token: %v", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c = newClient(t, down.URL, "shop/checkout")
	if _, err := c.Commits(context.Background(), "shop/checkout", time.Time{}); evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "github" {
		t.Errorf("unreachable: %v", err)
	}
}

func TestNewDomains(t *testing.T) {
	tests := []struct {
		domain, want string
	}{
		{"", "https://api.github.com"},
		{"github.com", "https://api.github.com"},
		{"ghe.example.com", "https://ghe.example.com/api/v3"},
		{"http://127.0.0.1:9/api/v3/", "http://127.0.0.1:9/api/v3"},
	}
	for _, tt := range tests {
		c, err := New(context.Background(), map[string]any{"domain": tt.domain}, nil, nil, outbound.New(outbound.MustAllowlist("127.0.0.1")))
		if err != nil || c.Base != tt.want {
			t.Errorf("%q: base %v, %v", tt.domain, c, err)
		}
	}
	// Without the allowlist, internal domains are the guard's refusal.
	for _, d := range []string{"http://127.0.0.1:9/api/v3/", "localhost", "169.254.169.254", "2130706433", "10.1.2.3"} {
		if _, err := New(context.Background(), map[string]any{"domain": d}, nil, nil, nil); !outbound.IsRefused(err) {
			t.Errorf("domain %q: %v, want the outbound guard's refusal", d, err)
		}
	}
	if _, err := New(context.Background(), map[string]any{"domain": "evil.com/x?"}, nil, nil, nil); err == nil {
		t.Error("bad domain accepted")
	}
	if c, _ := New(context.Background(), map[string]any{"enabled": false}, nil, nil, nil); c != nil {
		t.Error("disabled github gives a client")
	}
}

func TestCodeNilInterface(t *testing.T) {
	var c *Client
	if c.Code() != nil {
		t.Error("nil client gives a non-nil evidence.Code")
	}
}
