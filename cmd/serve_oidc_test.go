package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/oidcauth/oidctest"
	"github.com/rootcause/rootcause/server"
)

// serveForTest runs serve in-process on a loopback port with a temp data
// dir and returns its base URL and an admin client on the local socket.
func serveForTest(t *testing.T, mod func(*Settings)) (string, *http.Client) {
	t.Helper()
	v := viper.New()
	NewRootCommand(v)
	s, err := loadSettings(v)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	ln.Close()
	s.DataDir = filepath.Join(t.TempDir(), "data")
	s.Workers, s.QueueSize = 1, 10
	if mod != nil {
		mod(&s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, s, Build{Version: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("serve did not stop")
		}
	})
	base := "http://" + s.Addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sock := socketPath(s.DataDir)
	local := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	return base, local
}

// TestServeOIDCLogin: `rootcause serve` registers /login, /callback and
// /logout, which follow the org's oidc config: 404 before it is set, then
// a redirect to the provider (with <public_url>/callback as the redirect
// URI) once an admin sets it, and the provider's answer at /callback
// signs the user in.
func TestServeOIDCLogin(t *testing.T) {
	is := oidctest.New(t)
	is.SetUser(map[string]any{"sub": "alice-sub", "email": "alice@example.com", "groups": []any{"sre-admins"}})
	t.Setenv("RC_TEST_OIDC_SECRET", is.ClientSecret)
	var public string
	base, local := serveForTest(t, func(s *Settings) {
		s.PublicURL = "http://" + s.Addr
		public = s.PublicURL
	})
	if base != public {
		t.Fatalf("base %s != public %s", base, public)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	get := func(c *http.Client, u string) *http.Response {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	if r := get(noRedirect, base+"/login"); r.StatusCode != http.StatusNotFound {
		t.Fatalf("/login without oidc config: %d, want 404", r.StatusCode)
	}

	// The admin sets the org's oidc config through the admin API (the
	// local socket acts as an admin).
	body := fmt.Sprintf(`{"oidc":{"issuer":%q,"client_id":%q,"client_secret":"env:RC_TEST_OIDC_SECRET","admin_groups":["sre-admins"]}}`, is.URL, is.ClientID)
	req, _ := http.NewRequest("PUT", "http://"+server.LocalHost+"/api/v1/admin/nodes/default/config", strings.NewReader(body))
	req.Host = server.LocalHost
	req.Header.Set("Content-Type", "application/json")
	resp, err := local.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("setting oidc config: %d %s", resp.StatusCode, b)
	}

	var loc *url.URL
	for deadline := time.Now().Add(10 * time.Second); ; {
		r := get(noRedirect, base+"/login")
		if r.StatusCode == http.StatusFound {
			loc, err = url.Parse(r.Header.Get("Location"))
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/login after the oidc config was set: %d, want 302", r.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.HasPrefix(loc.String(), is.URL+"/authorize") {
		t.Errorf("/login redirects to %s, want the provider's authorization endpoint", loc)
	}
	for k, want := range map[string]string{"client_id": is.ClientID, "redirect_uri": public + "/callback", "response_type": "code", "code_challenge_method": "S256"} {
		if got := loc.Query().Get(k); got != want {
			t.Errorf("authorization request %s = %q, want %q", k, got, want)
		}
	}

	// The whole sign-in: /login → provider → /callback → a session.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	r := get(browser, base+"/login")
	if r.StatusCode != 200 || r.Request.URL.Path != "/callback" {
		t.Fatalf("sign-in ended at %s with %d, want 200 at /callback", r.Request.URL, r.StatusCode)
	}
	me, err := browser.Get(base + "/api/v1/auth/me")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(me.Body)
	me.Body.Close()
	if me.StatusCode != 200 || !strings.Contains(string(b), "alice@example.com") || !strings.Contains(string(b), "admin:write") {
		t.Fatalf("auth/me with the session: %d %s", me.StatusCode, b)
	}
	for _, path := range []string{"/callback", "/logout"} {
		if r := get(noRedirect, base+path); r.StatusCode == http.StatusNotFound {
			t.Errorf("%s: %d, want the route registered", path, r.StatusCode)
		}
	}
}

// TestServeWebhookAllowWired: serve hands webhook.allow to the config
// validation, so a loopback receiver can be saved only when allowlisted.
func TestServeWebhookAllowWired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		allow  []string
		status int
	}{
		{"NotAllowlisted", nil, 400},
		{"Allowlisted", []string{"127.0.0.1"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, local := serveForTest(t, func(s *Settings) { s.Webhook.Allow = tc.allow })
			req, _ := http.NewRequest("PUT", "http://"+server.LocalHost+"/api/v1/admin/nodes/default/config",
				strings.NewReader(`{"webhooks":{"investigation_complete":"http://127.0.0.1:9/hook"}}`))
			req.Host = server.LocalHost
			req.Header.Set("Content-Type", "application/json")
			resp, err := local.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == 400 && !strings.Contains(string(b), "webhooks.investigation_complete") {
				t.Errorf("the refusal does not name the field: %s", b)
			}
		})
	}
}

// TestWebhookAllowSetting: a webhook.allow entry that is neither a CIDR,
// an address nor a host name stops loading the settings.
func TestWebhookAllowSetting(t *testing.T) {
	for _, tc := range []struct {
		env string
		ok  bool
	}{
		{"10.0.0.0/8 hooks.internal 127.0.0.1", true},
		{"not_a_host!", false},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("ROOTCAUSE_WEBHOOK_ALLOW", tc.env)
			v := viper.New()
			NewRootCommand(v)
			s, err := loadSettings(v)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && len(s.Webhook.Allow) != 3 {
				t.Errorf("allow = %v", s.Webhook.Allow)
			}
			if !tc.ok && !strings.Contains(err.Error(), "webhook.allow") {
				t.Errorf("error does not name the setting: %v", err)
			}
		})
	}
}
