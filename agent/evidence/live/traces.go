package live

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/live/internal/apiclient"
	"github.com/rootcause/rootcause/agent/evidence/live/jaeger"
	"github.com/rootcause/rootcause/agent/evidence/live/tempo"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

// Traces builds the Traces source from tools.jaeger or tools.tempo; a team
// reads traces from one of them.
func Traces(ctx context.Context, cfg Config) (evidence.Traces, error) {
	js, ts := Settings(cfg.Tools, "jaeger"), Settings(cfg.Tools, "tempo")
	if enabled(js) && enabled(ts) {
		return nil, fmt.Errorf("tools.jaeger and tools.tempo are both enabled: traces come from one (disable the other)")
	}
	if enabled(ts) {
		return Tempo(ctx, ts, cfg.resolver("tempo"), cfg.Outbound)
	}
	return Jaeger(ctx, js, cfg.resolver("jaeger"), cfg.Outbound)
}

// Jaeger builds the Traces source of tools.jaeger settings {enabled, url,
// headers (name → secret reference), timeout (seconds), scan_traces}.
func Jaeger(ctx context.Context, s map[string]any, res secretref.Resolver, guard *outbound.Guard) (evidence.Traces, error) {
	if !enabled(s) {
		return nil, nil
	}
	cfg, err := traceConfig(ctx, "jaeger", s, res, guard)
	if err != nil {
		return nil, err
	}
	c, err := jaeger.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("tools.jaeger: %w", err)
	}
	return c, nil
}

// Tempo builds the Traces source of tools.tempo settings {enabled, url,
// headers, api_key (secret reference, sent as a bearer token), org_id
// (X-Scope-OrgID of a multi-tenant Tempo), timeout, scan_traces}.
func Tempo(ctx context.Context, s map[string]any, res secretref.Resolver, guard *outbound.Guard) (evidence.Traces, error) {
	if !enabled(s) {
		return nil, nil
	}
	cfg, err := traceConfig(ctx, "tempo", s, res, guard)
	if err != nil {
		return nil, err
	}
	if ref, ok := s["api_key"]; ok && ref != nil {
		key, err := resolveRef(ctx, "tools.tempo.api_key", ref, res)
		if err != nil {
			return nil, err
		}
		cfg.Headers["Authorization"] = "Bearer " + key
	}
	org, err := str(s, "org_id")
	if err != nil {
		return nil, fmt.Errorf("tools.tempo.org_id: %w", err)
	}
	if org != "" {
		cfg.Headers["X-Scope-OrgID"] = org
	}
	c, err := tempo.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("tools.tempo: %w", err)
	}
	return c, nil
}

// traceConfig reads the settings of tools.<name> every trace backend has:
// url (judged by the guard before any secret is resolved for it),
// timeout, scan_traces and headers; requests go through the guard.
func traceConfig(ctx context.Context, name string, s map[string]any, res secretref.Resolver, guard *outbound.Guard) (apiclient.Config, error) {
	var cfg apiclient.Config
	var err error
	if cfg.URL, err = str(s, "url"); err != nil {
		return cfg, fmt.Errorf("tools.%s.url: %w", name, err)
	}
	if err := checkTraceURL(name, cfg.URL, guard); err != nil {
		return cfg, err
	}
	if cfg.Timeout, err = seconds(s, "timeout"); err != nil {
		return cfg, fmt.Errorf("tools.%s.timeout: %w", name, err)
	}
	if cfg.ScanTraces, err = scanTraces(name, s["scan_traces"]); err != nil {
		return cfg, err
	}
	if cfg.Headers, err = secretHeaders(ctx, name, s["headers"], res); err != nil {
		return cfg, err
	}
	cfg.HTTP = guard.Client(traceTimeout(cfg.Timeout))
	return cfg, nil
}

// checkTraceURL checks the url setting; the guard judges the address
// before any secret is resolved for it.
func checkTraceURL(name, u string, guard *outbound.Guard) error {
	if u == "" {
		return fmt.Errorf("tools.%s.url is required", name)
	}
	if err := guard.CheckURL(u); err != nil {
		return fmt.Errorf("tools.%s.url: %w", name, err)
	}
	return nil
}

func traceTimeout(t time.Duration) time.Duration {
	if t <= 0 {
		return apiclient.DefaultTimeout
	}
	return t
}

func scanTraces(name string, v any) (int, error) {
	if v == nil {
		return 0, nil
	}
	n, ok := mergeconf.Number(v)
	if !ok || n < 1 || n > float64(evidence.MaxTraceLimit) || n != math.Trunc(n) {
		return 0, fmt.Errorf("tools.%s.scan_traces: want a whole number from 1 to %d", name, evidence.MaxTraceLimit)
	}
	return int(n), nil
}

// secretHeaders resolves a headers setting: header name → secret reference.
func secretHeaders(ctx context.Context, name string, hs any, res secretref.Resolver) (map[string]string, error) {
	out := map[string]string{}
	if hs == nil {
		return out, nil
	}
	m, ok := hs.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tools.%s.headers: want an object of header name → secret reference", name)
	}
	for h, ref := range m {
		val, err := resolveRef(ctx, fmt.Sprintf("tools.%s.headers.%s", name, h), ref, res)
		if err != nil {
			return nil, err
		}
		out[h] = val
	}
	return out, nil
}

func resolveRef(ctx context.Context, setting string, v any, res secretref.Resolver) (string, error) {
	ref, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a secret reference string", setting)
	}
	if res == nil {
		return "", fmt.Errorf("%s: no secret resolver", setting)
	}
	val, err := res.Resolve(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("%s: %w", setting, err)
	}
	return val, nil
}

// OpenTraces opens the trace backend at rawURL for an operator's capture:
// Jaeger when its api/v3 answers there, else Tempo when its API does. The
// connection goes through guard.
func OpenTraces(rawURL string, guard *outbound.Guard) (evidence.Traces, error) {
	if err := checkTraceURL("traces", rawURL, guard); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	hc := guard.Client(traceTimeout(0))
	j, err := jaeger.New(jaeger.Config{URL: rawURL, HTTP: hc})
	if err != nil {
		return nil, err
	}
	jerr := probe(ctx, j)
	if jerr == nil {
		return j, nil
	}
	t, err := tempo.New(tempo.Config{URL: rawURL, HTTP: hc})
	if err != nil {
		return nil, err
	}
	terr := probe(ctx, t)
	if terr == nil {
		return t, nil
	}
	return nil, fmt.Errorf("%s answers neither as Jaeger (%v) nor as Tempo (%v)", rawURL, jerr, terr)
}

// probe asks a backend for its services of the last minute.
func probe(ctx context.Context, tr evidence.Traces) error {
	now := time.Now()
	type lister interface {
		Services(context.Context, time.Time, time.Time) ([]string, error)
	}
	_, err := tr.(lister).Services(ctx, now.Add(-time.Minute), now)
	return err
}
