package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/tools"
)

func shopSession(t *testing.T, settings map[string]map[string]any, write bool) *tools.Session {
	t.Helper()
	b, err := bundle.OpenDir(evidencetest.ShopBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Builtin()
	return &tools.Session{Catalog: c, Toolkit: c.Names(),
		Env: &tools.Env{Sources: b.Sources(b.CapturedAt), Settings: settings, WriteActions: write}}
}

func TestKubernetesToolsOnBundle(t *testing.T) {
	s := shopSession(t, map[string]map[string]any{"kubernetes": {"default_namespace": "shop"}}, true)
	ctx := context.Background()
	call := func(name, args string) any {
		t.Helper()
		out, err := s.Call(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s(%s): %v", name, args, err)
		}
		return out
	}
	if ns := call("list_namespaces", `{}`).([]string); strings.Join(ns, ",") != "default,shop" {
		t.Errorf("list_namespaces: %v", ns)
	}
	if pods := call("list_pods", `{}`).([]corev1.Pod); len(pods) != 2 {
		t.Errorf("list_pods with default namespace: %d", len(pods))
	}
	if pods := call("list_pods", `{"namespace": "default"}`).([]corev1.Pod); len(pods) != 0 {
		t.Errorf("list_pods default: %d", len(pods))
	}
	d := call("describe_pod", `{"name": "checkout-7d9f8b6c5-x2k4p"}`).(tools.PodDescription)
	if d.Pod.Name != "checkout-7d9f8b6c5-x2k4p" || len(d.Events) != 3 {
		t.Errorf("describe_pod: %s with %d events", d.Pod.Name, len(d.Events))
	}
	logs := call("get_pod_logs", `{"pod": "checkout-7d9f8b6c5-x2k4p", "previous": true, "pattern": "OutOfMemory", "limit": 1}`).(*evidence.LogResult)
	if len(logs.Lines) != 1 || logs.Matched != 2 || !logs.Truncated {
		t.Errorf("get_pod_logs: %+v", logs)
	}
	// clock is captured_at 10:42: "5m" is since 10:37
	logs = call("get_pod_logs", `{"pod": "cart-5c6d7f8b9-q8w7e", "container": "cart", "since": "5m"}`).(*evidence.LogResult)
	if len(logs.Lines) != 2 {
		t.Errorf("get_pod_logs since 5m: %+v", logs.Lines)
	}
	if evs := call("get_events", `{"type": "Warning", "kind": "pod"}`).([]corev1.Event); len(evs) != 3 {
		t.Errorf("get_events warnings: %d", len(evs))
	}
	if evs := call("get_events", `{"since": "2026-03-14T10:30:00Z"}`).([]corev1.Event); len(evs) != 3 {
		t.Errorf("get_events since 10:30: %d", len(evs))
	}
	if deps := call("list_deployments", `{"namespace": "*"}`).([]appsv1.Deployment); len(deps) != 2 {
		t.Errorf("list_deployments: %d", len(deps))
	}
	h := call("get_rollout_history", `{"deployment": "checkout"}`).([]appsv1.ReplicaSet)
	if len(h) != 3 || h[0].Name != "checkout-6f8d9c7b4" || h[2].Name != "checkout-7d9f8b6c5" {
		t.Errorf("get_rollout_history order: %v", h)
	}
	svcs := call("list_services", `{}`).([]tools.ServiceStatus)
	if len(svcs) != 3 || svcs[0].Service.Name != "cart" || len(svcs[0].ReadyEndpoints) != 1 || len(svcs[1].NotReadyEndpoints) != 1 || len(svcs[2].ReadyEndpoints) != 0 {
		t.Errorf("list_services: %+v", svcs)
	}
	if nodes := call("list_nodes", `{}`).([]corev1.Node); len(nodes) != 2 {
		t.Errorf("list_nodes: %d", len(nodes))
	}
	// write tools: bundles are read-only
	for w, args := range map[string]string{"restart_deployment": `{"name": "checkout"}`, "scale_deployment": `{"name": "checkout", "replicas": 2}`} {
		_, err := s.Call(ctx, w, json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), "bundles are read-only") {
			t.Errorf("%s on a bundle: %v", w, err)
		}
	}
}

func TestKubernetesToolErrors(t *testing.T) {
	s := shopSession(t, nil, false)
	ctx := context.Background()
	cases := []struct {
		tool, args, code, msg string
	}{
		{"describe_pod", `{"name": "x"}`, evidence.CodeInvalid, `"namespace": is required`},
		{"describe_pod", `{"namespace": "shop"}`, evidence.CodeInvalid, `"name": is required`},
		{"describe_pod", `{"namespace": "shop", "name": "nope"}`, evidence.CodeNotFound, "not found"},
		{"get_pod_logs", `{"namespace": "shop", "pod": "cart-5c6d7f8b9-q8w7e", "since": "yesterday"}`, evidence.CodeInvalid, `"since"`},
		{"get_pod_logs", `{"namespace": "shop", "pod": "cart-5c6d7f8b9-q8w7e", "limit": "ten"}`, evidence.CodeInvalid, `"limit"`},
		{"get_pod_logs", `{"namespace": "shop", "pod": "cart-5c6d7f8b9-q8w7e", "pattern": "("}`, evidence.CodeInvalid, `"pattern"`},
		{"get_events", `{"type": "Error"}`, evidence.CodeInvalid, `"type"`},
		{"list_pods", `{"selector": "app=x"}`, evidence.CodeInvalid, "unknown field"},
		{"get_rollout_history", `{"namespace": "shop", "deployment": "nope"}`, evidence.CodeNotFound, "not found"},
		{"prometheus_query", `{}`, evidence.CodeInvalid, `"query": is required`},
		{"get_pod_logs", `{"namespace": "shop"}`, evidence.CodeInvalid, `"pod": is required`},
		{"get_rollout_history", `{"namespace": "shop"}`, evidence.CodeInvalid, `"deployment": is required`},
		{"detect_anomalies", `{"start": "30m"}`, evidence.CodeInvalid, `"query": is required`},
		{"correlate_series", `{"query_a": "up"}`, evidence.CodeInvalid, `"query_b": is required`},
		{"find_change_points", `{"query": 1}`, evidence.CodeInvalid, `"query": want a string`},
		{"find_change_points", `{"query": "up", "start": "soon"}`, evidence.CodeInvalid, `time "soon"`},
		{"prometheus_query_range", `{"query": "up", "step": "1ms"}`, evidence.CodeInvalid, `"step"`},
		{"prometheus_query_range", `{"query": "up", "start": "2026-03-14T10:00:00Z", "end": "2026-03-14T09:00:00Z"}`, evidence.CodeInvalid, `"start"`},
		{"prometheus_query", `{"query": "sum(a"}`, evidence.CodeInvalid, `query "sum(a" at 2026-03-14T10:42:00Z: 1:6: parse error: unclosed left parenthesis`},
	}
	for _, tc := range cases {
		_, err := s.Call(ctx, tc.tool, json.RawMessage(tc.args))
		if evidence.CodeOf(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s(%s): %v, want %s mentioning %s", tc.tool, tc.args, err, tc.code, tc.msg)
		}
	}
}

func TestKubePromToolsNotConfigured(t *testing.T) {
	c := tools.Builtin()
	s := &tools.Session{Catalog: c, Toolkit: c.Names(), Env: &tools.Env{Sources: &evidence.Sources{}}}
	for _, n := range []string{"list_pods", "get_pod_logs", "list_nodes", "prometheus_query", "list_metrics"} {
		args := map[string]string{"get_pod_logs": `{"namespace": "a", "pod": "b"}`, "prometheus_query": `{"query": "up"}`}[n]
		if args == "" {
			args = `{}`
		}
		_, err := s.Call(context.Background(), n, json.RawMessage(args))
		var e *evidence.Error
		if !errors.As(err, &e) || e.Code != evidence.CodeNotConfigured || !strings.Contains(err.Error(), "is not configured for this team (set tools.") {
			t.Errorf("%s without the integration: %v", n, err)
		}
	}
}

func TestPrometheusToolsOnBundle(t *testing.T) {
	s := shopSession(t, nil, false)
	ctx := context.Background()
	out, err := s.Call(ctx, "prometheus_query", map[string]any{"query": `sum by (service) (rate(http_requests_total[5m]))`, "time": "2026-03-14T09:30:30Z"})
	if err != nil {
		t.Fatal(err)
	}
	ss := out.([]evidence.Series)
	if len(ss) != 2 || ss[0].Labels["service"] != "cart" || ss[0].Points[0].V != 35 {
		t.Errorf("prometheus_query: %+v", ss)
	}
	// default window: the last hour before captured_at (10:42), automatic step 15s
	out, err = s.Call(ctx, "prometheus_query_range", map[string]any{"query": `sum(rate(http_requests_total{code="500"}[5m]))`})
	if err != nil {
		t.Fatal(err)
	}
	ss = out.([]evidence.Series)
	if len(ss) != 1 || len(ss[0].Points) != 241 || !ss[0].Points[0].T.Equal(time.Date(2026, 3, 14, 9, 42, 0, 0, time.UTC)) {
		t.Errorf("prometheus_query_range: %d series, %d points", len(ss), len(ss[0].Points))
	}
	out, err = s.Call(ctx, "prometheus_query_range", map[string]any{"query": `up_nothing`, "start": "2h", "end": "1h", "step": "300"})
	if err != nil || len(out.([]evidence.Series)) != 0 {
		t.Errorf("empty range: %v %v", out, err)
	}
	out, err = s.Call(ctx, "list_metrics", map[string]any{"match": `http_requests_total`})
	if err != nil || len(out.([]evidence.Labels)) != 3 {
		t.Errorf("list_metrics: %v %v", out, err)
	}
}
