package analyst_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	corev1 "k8s.io/api/core/v1"
)

// standIns are minimal Kubernetes and Prometheus tools over evidence
// sources, for tests. testCatalog adds them to the built-in catalog only
// where it lacks a tool of the same name, so the real tools win as soon as
// they exist.
func standIns() []tools.Tool {
	k8s := func(env *tools.Env) (evidence.Kubernetes, error) {
		if env.Sources.Kubernetes == nil {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotConfigured, "not configured")
		}
		return env.Sources.Kubernetes, nil
	}
	prom := func(env *tools.Env) (evidence.Metrics, error) {
		if env.Sources.Metrics == nil {
			return nil, evidence.Errorf("prometheus", evidence.CodeNotConfigured, "not configured")
		}
		return env.Sources.Metrics, nil
	}
	parse := func(raw json.RawMessage, v any) error { return json.Unmarshal(raw, v) }
	tm := func(env *tools.Env, s string, def time.Time) time.Time {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
		return def
	}
	spec := func(name, integration string, agents ...string) tools.Spec {
		return tools.Spec{Name: name, Integration: integration, ReadOnly: true, Parameters: json.RawMessage(`{"type":"object"}`), Agents: agents}
	}
	const inv, kag, met, cod = tools.AgentInvestigation, tools.AgentK8s, tools.AgentMetrics, tools.AgentCoding
	type nsArgs struct {
		Namespace  string `json:"namespace"`
		Deployment string `json:"deployment"`
		Kind       string `json:"kind"`
	}
	return []tools.Tool{
		{Spec: spec("list_pods", "kubernetes", kag, met, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a nsArgs
			_ = parse(raw, &a)
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			return k.Pods(ctx, a.Namespace, "")
		}},
		{Spec: spec("get_events", "kubernetes", kag, met, cod, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a nsArgs
			_ = parse(raw, &a)
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			evs, err := k.Events(ctx, a.Namespace)
			if err != nil || a.Kind == "" {
				return evs, err
			}
			var out []corev1.Event
			for _, e := range evs {
				if e.InvolvedObject.Kind == a.Kind {
					out = append(out, e)
				}
			}
			return out, nil
		}},
		{Spec: spec("get_pod_logs", "kubernetes", kag, met, cod, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a struct {
				Namespace, Pod, Container, Since, Until string
				Previous                                bool
				Limit                                   int
			}
			_ = parse(raw, &a)
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			return k.PodLogs(ctx, evidence.PodLogQuery{Namespace: a.Namespace, Pod: a.Pod, Container: a.Container, Previous: a.Previous,
				Since: tm(env, a.Since, time.Time{}), Until: tm(env, a.Until, time.Time{}), Limit: a.Limit})
		}},
		{Spec: spec("list_deployments", "kubernetes", kag, met, cod, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a nsArgs
			_ = parse(raw, &a)
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			return k.Deployments(ctx, a.Namespace)
		}},
		{Spec: spec("get_rollout_history", "kubernetes", kag, cod, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a nsArgs
			_ = parse(raw, &a)
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			rss, err := k.ReplicaSets(ctx, a.Namespace)
			if err != nil {
				return nil, err
			}
			var out []any
			for _, rs := range rss {
				for _, o := range rs.OwnerReferences {
					if o.Kind == "Deployment" && o.Name == a.Deployment {
						out = append(out, rs)
					}
				}
			}
			return out, nil
		}},
		{Spec: spec("list_services", "kubernetes", kag, met, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a nsArgs
			_ = parse(raw, &a)
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			svcs, err := k.Services(ctx, a.Namespace)
			if err != nil {
				return nil, err
			}
			eps, _ := k.Endpoints(ctx, a.Namespace)
			var out []map[string]any
			for _, s := range svcs {
				ready, notReady := 0, 0
				for _, e := range eps {
					if e.Namespace == s.Namespace && e.Name == s.Name {
						for _, ss := range e.Subsets {
							ready += len(ss.Addresses)
							notReady += len(ss.NotReadyAddresses)
						}
					}
				}
				out = append(out, map[string]any{"service": s, "ready_endpoints": ready, "not_ready_endpoints": notReady})
			}
			return out, nil
		}},
		{Spec: spec("list_nodes", "kubernetes", kag, met, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			k, err := k8s(env)
			if err != nil {
				return nil, err
			}
			return k.Nodes(ctx)
		}},
		{Spec: spec("list_metrics", "prometheus", met, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a struct{ Match, Start, End string }
			_ = parse(raw, &a)
			m, err := prom(env)
			if err != nil {
				return nil, err
			}
			now := env.Sources.Clock()
			return m.SeriesSet(ctx, a.Match, tm(env, a.Start, now.Add(-time.Hour)), tm(env, a.End, now))
		}},
		{Spec: spec("prometheus_query_range", "prometheus", met, inv), Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (any, error) {
			var a struct{ Query, Start, End, Step string }
			_ = parse(raw, &a)
			m, err := prom(env)
			if err != nil {
				return nil, err
			}
			step, err := time.ParseDuration(a.Step)
			if err != nil {
				return nil, fmt.Errorf("step: %w", err)
			}
			now := env.Sources.Clock()
			return m.QueryRange(ctx, a.Query, tm(env, a.Start, now.Add(-time.Hour)), tm(env, a.End, now), step)
		}},
	}
}

func testCatalog() *tools.Catalog { return tools.Builtin().With(standIns()) }
