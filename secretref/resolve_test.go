package secretref

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Ref
		wantErr bool
	}{
		{in: "env:GITHUB_TOKEN", want: Ref{Kind: KindEnv, Name: "GITHUB_TOKEN"}},
		{in: "file:/run/secrets/gh", want: Ref{Kind: KindFile, Path: "/run/secrets/gh"}},
		{in: "vault:secret/teams/payments#api_key", want: Ref{Kind: KindVault, Path: "secret/teams/payments", Mount: "secret", Key: "api_key"}},
		{in: "ghp_abcdef123456", wantErr: true},
		{in: "env:1BAD", wantErr: true},
		{in: "env:", wantErr: true},
		{in: "file:relative/path", wantErr: true},
		{in: "vault:secret#key", wantErr: true},
		{in: "vault:secret/x", wantErr: true},
		{in: "vault:secret/../x#k", wantErr: true},
		{in: "https://user:pass@host", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				// A mistyped reference may be a pasted secret: never echo it.
				if strings.Contains(err.Error(), tt.in) {
					t.Errorf("error %q echoes the input", err)
				}
				return
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestResolveLocal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain", "s3cret")
	nl := write("nl", "s3cret\n")
	crlf := write("crlf", "s3cret\r\n")
	two := write("two", "s3cret\n\n")
	empty := write("empty", "\n")
	big := write("big", strings.Repeat("x", MaxFileSize+1))
	exact := write("exact", strings.Repeat("x", MaxFileSize))
	unreadable := write("unreadable", "x")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOKEN": "t0ken", "EMPTY": ""}
	r := NewResolver(ResolverOptions{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})

	tests := []struct {
		ref     string
		want    string
		wantErr error
	}{
		{ref: "env:TOKEN", want: "t0ken"},
		{ref: "env:MISSING", wantErr: ErrNotFound},
		{ref: "env:EMPTY", wantErr: ErrEmpty},
		{ref: "file:" + plain, want: "s3cret"},
		{ref: "file:" + nl, want: "s3cret"},
		{ref: "file:" + crlf, want: "s3cret"},
		{ref: "file:" + two, want: "s3cret\n"},
		{ref: "file:" + empty, wantErr: ErrEmpty},
		{ref: "file:" + big, wantErr: ErrTooLarge},
		{ref: "file:" + exact, want: strings.Repeat("x", MaxFileSize)},
		{ref: "file:" + filepath.Join(dir, "nope"), wantErr: ErrNotFound},
		{ref: "vault:secret/x#k", wantErr: ErrNotConfigured},
	}
	if os.Geteuid() != 0 { // root reads anything
		tests = append(tests, struct {
			ref     string
			want    string
			wantErr error
		}{ref: "file:" + unreadable, wantErr: ErrPermissionDenied})
	}
	for _, tt := range tests {
		t.Run(tt.ref[:min(len(tt.ref), 40)], func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve(%q) error = %v, want %v", tt.ref, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.ref, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.ref, got, tt.want)
			}
		})
	}
	if _, err := r.Resolve(context.Background(), "plainvalue"); err == nil {
		t.Error("Resolve of a plain value succeeded")
	}
}

func TestResolveCustomReadFileBounded(t *testing.T) {
	r := NewResolver(ResolverOptions{ReadFile: func(string) ([]byte, error) {
		return make([]byte, MaxFileSize+10), nil
	}})
	if _, err := r.Resolve(context.Background(), "file:/x"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error = %v, want ErrTooLarge", err)
	}
}

// fakeVault speaks Vault's KV v2 read API.
type fakeVault struct {
	token   string
	secrets map[string]map[string]any // "mount/path" → data
	deleted map[string]bool
	hits    atomic.Int64
	lastNS  atomic.Value
}

func (f *fakeVault) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	f.lastNS.Store(r.Header.Get("X-Vault-Namespace"))
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("X-Vault-Token") != f.token {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"errors":["permission denied"]}`))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	mount, sub, ok2 := strings.Cut(rest, "/data/")
	if !ok || !ok2 {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":[]}`))
		return
	}
	key := mount + "/" + sub
	meta := map[string]any{
		"created_time": "2026-03-01T10:00:00.000000Z", "custom_metadata": nil,
		"deletion_time": "", "destroyed": false, "version": 3,
	}
	if f.deleted[key] {
		meta["deletion_time"] = "2026-03-02T10:00:00.000000Z"
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"data": nil, "metadata": meta}})
		return
	}
	data, ok := f.secrets[key]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":[]}`))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"request_id": "8f3c", "lease_id": "", "renewable": false, "lease_duration": 0,
		"data":      map[string]any{"data": data, "metadata": meta},
		"wrap_info": nil, "warnings": nil, "auth": nil,
	})
}

func TestResolveVault(t *testing.T) {
	fv := &fakeVault{
		token: "hvs.root",
		secrets: map[string]map[string]any{
			"secret/teams/payments": {"api_key": "gh-123", "port": 5432.0, "nested": map[string]any{"a": 1}},
			"kv/a b/c":              {"k": "spaced"},
		},
		deleted: map[string]bool{"secret/old": true},
	}
	srv := httptest.NewServer(fv)
	defer srv.Close()
	env := map[string]string{"VAULT_TOKEN": "hvs.root", "BAD_TOKEN": "hvs.nope"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	newR := func(token string) Resolver {
		return NewResolver(ResolverOptions{LookupEnv: lookup, Vault: VaultOptions{Address: srv.URL + "/", Token: token, Namespace: "team-a"}})
	}

	tests := []struct {
		name    string
		token   string
		ref     string
		want    string
		wantErr error
	}{
		{name: "OK", token: "env:VAULT_TOKEN", ref: "vault:secret/teams/payments#api_key", want: "gh-123"},
		{name: "NumberValue", token: "env:VAULT_TOKEN", ref: "vault:secret/teams/payments#port", want: "5432"},
		{name: "EscapedPath", token: "env:VAULT_TOKEN", ref: "vault:kv/a b/c#k", want: "spaced"},
		{name: "KeyMissing", token: "env:VAULT_TOKEN", ref: "vault:secret/teams/payments#nope", wantErr: ErrKeyMissing},
		{name: "NotFound", token: "env:VAULT_TOKEN", ref: "vault:secret/teams/nobody#api_key", wantErr: ErrNotFound},
		{name: "Deleted", token: "env:VAULT_TOKEN", ref: "vault:secret/old#k", wantErr: ErrNotFound},
		{name: "PermissionDenied", token: "env:BAD_TOKEN", ref: "vault:secret/teams/payments#api_key", wantErr: ErrPermissionDenied},
		{name: "TokenRefUnset", token: "env:NO_SUCH", ref: "vault:secret/teams/payments#api_key", wantErr: ErrNotFound},
		{name: "NoToken", token: "", ref: "vault:secret/teams/payments#api_key", wantErr: ErrNotConfigured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newR(tt.token).Resolve(context.Background(), tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				for _, secret := range []string{"gh-123", "hvs.root", "hvs.nope"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q contains a secret", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if ns, _ := fv.lastNS.Load().(string); ns != "team-a" {
		t.Errorf("X-Vault-Namespace = %q, want team-a", ns)
	}
	if _, err := newR("env:VAULT_TOKEN").Resolve(context.Background(), "vault:secret/teams/payments#nested"); err == nil {
		t.Error("object value resolved")
	}
	if _, err := newR("vault:secret/t#k").Resolve(context.Background(), "vault:secret/teams/payments#api_key"); err == nil {
		t.Error("vault: token reference accepted")
	}
}

func TestResolveVaultCache(t *testing.T) {
	fv := &fakeVault{token: "tok", secrets: map[string]map[string]any{"secret/a": {"x": "1", "y": "2"}}}
	srv := httptest.NewServer(fv)
	defer srv.Close()
	now := time.Unix(1000, 0)
	r := NewResolver(ResolverOptions{
		LookupEnv: func(string) (string, bool) { return "tok", true },
		Vault:     VaultOptions{Address: srv.URL, Token: "env:T"},
		CacheTTL:  time.Minute,
		Now:       func() time.Time { return now },
	})
	ctx := context.Background()
	for _, ref := range []string{"vault:secret/a#x", "vault:secret/a#y", "vault:secret/a#x"} {
		if _, err := r.Resolve(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	if n := fv.hits.Load(); n != 1 {
		t.Fatalf("vault hit %d times within the TTL, want 1", n)
	}
	now = now.Add(2 * time.Minute)
	if _, err := r.Resolve(ctx, "vault:secret/a#x"); err != nil {
		t.Fatal(err)
	}
	if n := fv.hits.Load(); n != 2 {
		t.Fatalf("vault hit %d times after expiry, want 2", n)
	}
}

func TestResolveVaultUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := NewResolver(ResolverOptions{
		LookupEnv: func(string) (string, bool) { return "tok", true },
		Vault:     VaultOptions{Address: "http://" + addr, Token: "env:T"},
	})
	if _, err := r.Resolve(context.Background(), "vault:secret/a#x"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("error = %v, want ErrUnreachable", err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/secret/data/500":
			w.WriteHeader(http.StatusInternalServerError)
		case "/v1/secret/data/v1mount":
			_, _ = w.Write([]byte(`{"data":{"password":"leaky"}}`)) // KV v1 shape
		default:
			_, _ = w.Write([]byte(`{"data": "leaky`))
		}
	}))
	defer srv.Close()
	r = NewResolver(ResolverOptions{
		LookupEnv: func(string) (string, bool) { return "tok", true },
		Vault:     VaultOptions{Address: srv.URL, Token: "env:T"},
	})
	for _, ref := range []string{"vault:secret/500#x", "vault:secret/garbage#x", "vault:secret/v1mount#password"} {
		_, err := r.Resolve(context.Background(), ref)
		if err == nil {
			t.Fatalf("%s: no error", ref)
		}
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s: error = %v, want ErrUnreachable", ref, err)
		}
		if strings.Contains(err.Error(), "leaky") {
			t.Errorf("%s: error %q echoes the body", ref, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Resolve(ctx, "vault:secret/500#x"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error = %v, want context.Canceled", err)
	}
}
