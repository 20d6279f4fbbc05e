package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/live"
	"github.com/rootcause/rootcause/outbound"
)

// traceServer answers the services route of both backends and records the
// headers it was sent.
func traceServer(t *testing.T) (*httptest.Server, func() http.Header) {
	var mu sync.Mutex
	var last http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/api/v3/services":
			json.NewEncoder(w).Encode(map[string]any{"services": []string{}})
		case "/api/v2/search/tag/resource.service.name/values":
			json.NewEncoder(w).Encode(map[string]any{"tagValues": []any{map[string]string{"type": "string", "value": "cart"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() http.Header { mu.Lock(); defer mu.Unlock(); return last }
}

var evidenceT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestTracesFromJaegerAndTempo(t *testing.T) {
	srv, headers := traceServer(t)
	res := mapResolver{"env:JAEGER_AUTH": "Bearer jaeger-s3cret", "env:TEMPO_KEY": "tempo-s3cret"}
	ctx := context.Background()

	s, err := live.New(ctx, live.Config{Resolver: res, Outbound: loopback, Tools: map[string]any{
		"jaeger": map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "env:JAEGER_AUTH"}, "timeout": float64(5), "scan_traces": float64(50)},
	}})
	if err != nil || s.Traces == nil {
		t.Fatalf("jaeger: %v %v", s, err)
	}
	if _, err := s.Traces.Services(ctx, evidenceT0, evidenceT0.Add(1)); err != nil {
		t.Fatal(err)
	}
	if got := headers().Get("Authorization"); got != "Bearer jaeger-s3cret" {
		t.Errorf("jaeger Authorization %q", got)
	}

	s, err = live.New(ctx, live.Config{Resolver: res, Outbound: loopback, Tools: map[string]any{
		"jaeger": map[string]any{"enabled": false, "url": srv.URL},
		"tempo":  map[string]any{"url": srv.URL, "api_key": "env:TEMPO_KEY", "org_id": "shop"},
	}})
	if err != nil || s.Traces == nil {
		t.Fatalf("tempo: %v %v", s, err)
	}
	got, err := s.Traces.Services(ctx, evidenceT0, evidenceT0.Add(1))
	if err != nil || strings.Join(got, ",") != "cart" {
		t.Fatalf("tempo services %v %v", got, err)
	}
	if h := headers(); h.Get("Authorization") != "Bearer tempo-s3cret" || h.Get("X-Scope-OrgID") != "shop" {
		t.Errorf("tempo headers %v", h)
	}
}

func TestTraceSettingErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		tools map[string]any
		want  string
	}{
		{"no url", map[string]any{"jaeger": map[string]any{}}, "tools.jaeger.url is required"},
		{"both", map[string]any{"jaeger": map[string]any{"url": "http://127.0.0.1:1"}, "tempo": map[string]any{"url": "http://127.0.0.1:2"}}, "both enabled"},
		{"bad scan", map[string]any{"tempo": map[string]any{"url": "http://127.0.0.1:2", "scan_traces": 0.5}}, "tools.tempo.scan_traces"},
		{"bad headers", map[string]any{"jaeger": map[string]any{"url": "http://127.0.0.1:1", "headers": "x"}}, "tools.jaeger.headers"},
		{"unknown secret", map[string]any{"tempo": map[string]any{"url": "http://127.0.0.1:2", "api_key": "env:NOPE"}}, "tools.tempo.api_key"},
		{"org id type", map[string]any{"tempo": map[string]any{"url": "http://127.0.0.1:2", "org_id": 3.0}}, "tools.tempo.org_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := live.New(context.Background(), live.Config{Tools: c.tools, Resolver: mapResolver{}, Outbound: loopback})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want %q", err, c.want)
			}
			if s != nil && s.Traces != nil {
				t.Errorf("a Traces source despite the error: %T", s.Traces)
			}
		})
	}
}

func TestTraceURLsGuarded(t *testing.T) {
	for _, name := range []string{"jaeger", "tempo"} {
		_, err := live.New(context.Background(), live.Config{Resolver: mapResolver{},
			Tools: map[string]any{name: map[string]any{"url": "http://169.254.169.254/", "headers": map[string]any{"A": "env:X"}}}})
		if !outbound.IsRefused(err) || strings.Contains(err.Error(), "env:X") {
			t.Errorf("%s: %v, want refused by the outbound guard", name, err)
		}
	}
}

func TestOpenTraces(t *testing.T) {
	jsrv, _ := traceServer(t)
	tr, err := live.OpenTraces(jsrv.URL, loopback)
	if err != nil || !strings.Contains(fmt.Sprintf("%T", tr), "jaeger") {
		t.Errorf("a server with api/v3: %T %v", tr, err)
	}
	tsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/search/tag/resource.service.name/values" {
			w.Write([]byte(`{"tagValues": []}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer tsrv.Close()
	tr, err = live.OpenTraces(tsrv.URL, loopback)
	if err != nil || !strings.Contains(fmt.Sprintf("%T", tr), "tempo") {
		t.Errorf("a server with Tempo's API: %T %v", tr, err)
	}
	nsrv := httptest.NewServer(http.NotFoundHandler())
	defer nsrv.Close()
	if _, err := live.OpenTraces(nsrv.URL, loopback); err == nil || !strings.Contains(err.Error(), "neither as Jaeger") {
		t.Errorf("a server with neither: %v", err)
	}
	if _, err := live.OpenTraces("http://169.254.169.254", nil); !outbound.IsRefused(err) {
		t.Errorf("guard: %v", err)
	}
}
