package live_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/live"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

type mapResolver map[string]string

func (m mapResolver) Resolve(_ context.Context, ref string) (string, error) {
	v, ok := m[ref]
	if !ok {
		return "", fmt.Errorf("unknown reference %s", ref)
	}
	return v, nil
}

func TestNewUnconfigured(t *testing.T) {
	s, err := live.New(context.Background(), live.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Kubernetes != nil || s.Metrics != nil || s.Logs != nil || s.CloudWatch != nil || s.Code != nil || s.Changes != nil {
		t.Errorf("unconfigured sources are not plain nils: %+v", s)
	}
	if s.Clock().IsZero() {
		t.Error("no clock")
	}
}

func TestNewKubernetesAndPrometheus(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx1
  context: {cluster: c, user: u}
current-context: ctx1
`), 0o600)
	tools := map[string]any{
		"kubernetes": map[string]any{"kubeconfig": kc, "context": "ctx1", "default_namespace": "shop"},
		"prometheus": map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "env:PROM_AUTH"}, "timeout": float64(5)},
	}
	s, err := live.New(context.Background(), live.Config{Tools: tools, Resolver: mapResolver{"env:PROM_AUTH": "Bearer s3cret"}, Outbound: outbound.New(outbound.MustAllowlist("127.0.0.1"))})
	if err != nil {
		t.Fatal(err)
	}
	if s.Kubernetes == nil || s.Metrics == nil {
		t.Fatalf("sources not built: %+v", s)
	}
	if _, err := s.Metrics.Query(context.Background(), "up", time.Now()); err != nil {
		t.Fatal(err)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("resolved header not sent: %q", gotAuth)
	}
}

// loopback lets tests reach their own servers on 127.0.0.1.
var loopback = outbound.New(outbound.MustAllowlist("127.0.0.1"))

func TestNewErrors(t *testing.T) {
	cases := []struct {
		name  string
		tools map[string]any
		want  string
	}{
		{"prom no url", map[string]any{"prometheus": map[string]any{}}, "tools.prometheus.url is required"},
		{"prom bad url", map[string]any{"prometheus": map[string]any{"url": "localhost:9090"}}, "not an http(s) URL"},
		{"prom header ref", map[string]any{"prometheus": map[string]any{"url": "http://127.0.0.1:9", "headers": map[string]any{"X": "env:NOPE"}}}, "tools.prometheus.headers.X"},
		{"prom timeout", map[string]any{"prometheus": map[string]any{"url": "http://127.0.0.1:9", "timeout": "5s"}}, "tools.prometheus.timeout"},
		{"kube bad kubeconfig", map[string]any{"kubernetes": map[string]any{"kubeconfig": "/nonexistent/kubeconfig"}}, "tools.kubernetes"},
		{"kube in_cluster type", map[string]any{"kubernetes": map[string]any{"in_cluster": "yes"}}, "tools.kubernetes.in_cluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := live.New(context.Background(), live.Config{Tools: tc.tools, Resolver: mapResolver{}, Outbound: loopback})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	s, err := live.New(context.Background(), live.Config{Tools: map[string]any{
		"kubernetes": map[string]any{"enabled": false, "kubeconfig": "/nonexistent"},
		"prometheus": map[string]any{"enabled": false},
	}})
	if err != nil || s.Kubernetes != nil || s.Metrics != nil {
		t.Errorf("disabled integrations: %+v %v", s, err)
	}
}

// TestNumbersFromDecodedConfig: effective configs are decoded with
// UseNumber, so numeric settings arrive as json.Number and must work.
func TestNumbersFromDecodedConfig(t *testing.T) {
	doc, err := mergeconf.Decode([]byte(`{"prometheus": {"url": "http://127.0.0.1:9", "timeout": 30}, "kubernetes": {"enabled": false, "timeout": 5}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := live.New(context.Background(), live.Config{Tools: doc, Outbound: loopback})
	if err != nil {
		t.Fatalf("a json.Number timeout was refused: %v", err)
	}
	if s.Metrics == nil {
		t.Fatal("prometheus source not built")
	}
	bad, _ := mergeconf.Decode([]byte(`{"prometheus": {"url": "http://127.0.0.1:9", "timeout": -1}}`))
	if _, err := live.New(context.Background(), live.Config{Tools: bad}); err == nil || !strings.Contains(err.Error(), "tools.prometheus.timeout") {
		t.Errorf("negative timeout: %v, want an error naming tools.prometheus.timeout", err)
	}
}

// A secret an admin set above the team is never sent to an address the
// team wrote at its own level; the same secret goes to the admin's address.
func TestInheritedSecretNeverFollowsATeamAddress(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	res := mapResolver{"env:ORG_PROM": "Bearer org-secret", "vault:secret/teams/a/prom#t": "Bearer team-a"}
	tools := map[string]any{"prometheus": map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "env:ORG_PROM"}}}
	scope := &secretref.Scope{Node: "a", Prefixes: []string{"secret/teams/a/"}, Own: map[string]bool{}}

	// The URL is the team's own (written at its level): the inherited
	// header is refused and nothing is sent.
	own := map[string]any{"prometheus": map[string]any{"url": srv.URL}}
	s, err := live.New(context.Background(), live.Config{Tools: tools, Resolver: res, Outbound: loopback, Scope: scope, OwnTools: own})
	if err == nil || !errors.Is(err, secretref.ErrOutOfScope) || s.Metrics != nil {
		t.Fatalf("team URL with an inherited secret: %v, metrics %v", err, s.Metrics)
	}
	// The team's own secret, within its scope, goes to its own URL.
	teamTools := map[string]any{"prometheus": map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "vault:secret/teams/a/prom#t"}}}
	s, err = live.New(context.Background(), live.Config{Tools: teamTools, Resolver: res, Outbound: loopback, Scope: scope, OwnTools: teamTools})
	if err != nil {
		t.Fatal(err)
	}
	s.Metrics.Query(context.Background(), "up", time.Now())
	// Another team's secret is refused even at an admin's address.
	other := map[string]any{"prometheus": map[string]any{"headers": map[string]any{"Authorization": "vault:secret/teams/b/slack#t"}}}
	scopeOwn := &secretref.Scope{Node: "a", Prefixes: scope.Prefixes, Own: map[string]bool{"vault:secret/teams/b/slack#t": true}}
	merged := map[string]any{"prometheus": map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "vault:secret/teams/b/slack#t"}}}
	if _, err := live.New(context.Background(), live.Config{Tools: merged, Resolver: mapResolver{"vault:secret/teams/b/slack#t": "xoxb-b"}, Outbound: loopback, Scope: scopeOwn, OwnTools: other}); !errors.Is(err, secretref.ErrOutOfScope) {
		t.Fatalf("another team's vault path: %v", err)
	}
	// The admin's URL and the admin's secret: sent.
	s, err = live.New(context.Background(), live.Config{Tools: tools, Resolver: res, Outbound: loopback, Scope: scope, OwnTools: nil})
	if err != nil {
		t.Fatal(err)
	}
	s.Metrics.Query(context.Background(), "up", time.Now())
	if len(got) != 2 || got[0] != "Bearer team-a" || got[1] != "Bearer org-secret" {
		t.Fatalf("headers received: %q", got)
	}
}

// Without an allowlist, the Prometheus integration refuses internal URLs
// before resolving a secret or connecting.
func TestPrometheusURLGuarded(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:9090", "http://169.254.169.254/", "http://2130706433/", "http://localhost:9090"} {
		_, err := live.New(context.Background(), live.Config{Tools: map[string]any{"prometheus": map[string]any{"url": u, "headers": map[string]any{"A": "env:X"}}}, Resolver: mapResolver{}})
		if !outbound.IsRefused(err) || strings.Contains(err.Error(), "env:X") {
			t.Errorf("%s: %v, want the guard's refusal only", u, err)
		}
	}
}
