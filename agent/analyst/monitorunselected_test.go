package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

func cmdOut(command, text string) evidence.CommandOutput {
	return evidence.CommandOutput{Command: command, Run: command, Lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n")}
}

// TestDetectMonitorUnselected reads a ServiceMonitor or PodMonitor as
// kubectl prints it (-o yaml, a List, --show-labels) against the selector
// of a Prometheus resource (its whole YAML, a grep of it): a monitor of the
// service asked about without the selected label is not picked up.
func TestDetectMonitorUnselected(t *testing.T) {
	smYAML := `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  labels:
    app.kubernetes.io/instance: stock-api
    app.kubernetes.io/name: stock-api
    helm.sh/chart: stock-api-3.0.0
  name: stock-api
  namespace: shop
spec:
  endpoints:
  - port: http-metrics
  selector:
    matchLabels:
      app.kubernetes.io/name: stock-api`
	smSelected := strings.Replace(smYAML, "    helm.sh/chart: stock-api-3.0.0\n", "    helm.sh/chart: stock-api-3.0.0\n    release: prom\n", 1)
	promFull := `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: prom-prometheus
  namespace: monitoring
spec:
  replicas: 2
  serviceMonitorNamespaceSelector: {}
  serviceMonitorSelector:
    matchLabels:
      release: prom
  podMonitorSelector:
    matchLabels:
      release: prom
  version: v2.54.1`
	promGrep := `  serviceMonitorNamespaceSelector: {}
  serviceMonitorSelector:
    matchLabels:
      release: "prom"
  podMonitorNamespaceSelector: {}`
	promExpr := `  serviceMonitorSelector:
    matchExpressions:
    - key: release
      operator: In
      values: ["prom"]`
	table := `NAME             AGE    LABELS
stock-api        418d   app.kubernetes.io/instance=stock-api,app.kubernetes.io/name=stock-api,helm.sh/chart=stock-api-3.0.0
stock-sync       233d   app.kubernetes.io/name=stock-sync,release=prom`
	pmList := `{
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": {
                "labels": {"app": "stock-api", "team": "shop"},
                "name": "stock-api",
                "namespace": "shop"
            }
        }
    ],
    "kind": "List"
}`
	for _, c := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		want    bool
		missing string
	}{
		{"-o yaml against the whole Prometheus", []evidence.CommandOutput{cmdOut("kubectl -n shop get servicemonitor stock-api -o yaml", smYAML), cmdOut("kubectl -n monitoring get prometheus prom-prometheus -o yaml", promFull)}, true, "release=prom"},
		{"--show-labels against a grep of it", []evidence.CommandOutput{cmdOut("kubectl -n shop get servicemonitor --show-labels", table), cmdOut("kubectl -n monitoring get prometheus prom-prometheus -o yaml | grep -A4 serviceMonitorNamespaceSelector", promGrep)}, true, "release=prom"},
		{"a PodMonitor List as JSON", []evidence.CommandOutput{cmdOut("kubectl -n shop get podmonitors -o json", pmList), cmdOut("kubectl get prometheuses -A -o yaml", promFull)}, true, "release=prom"},
		{"the monitor carries the label", []evidence.CommandOutput{cmdOut("kubectl -n shop get servicemonitor stock-api -o yaml", smSelected), cmdOut("kubectl -n monitoring get prometheus prom-prometheus -o yaml", promFull)}, false, ""},
		{"a selector by expressions is not read", []evidence.CommandOutput{cmdOut("kubectl -n shop get servicemonitor stock-api -o yaml", smYAML), cmdOut("kubectl -n monitoring get prometheus prom-prometheus -o yaml | grep -A5 serviceMonitorSelector", promExpr)}, false, ""},
		{"no selector printed", []evidence.CommandOutput{cmdOut("kubectl -n shop get servicemonitor stock-api -o yaml", smYAML)}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: "stock-api"}}
			fs := detectMonitorUnselected(ev, nil)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			if fs[0].fact("missing") != c.missing || fs[0].Subject != "stock-api" {
				t.Errorf("subject %q missing %q", fs[0].Subject, fs[0].fact("missing"))
			}
			h := &Hypothesis{Kind: KindMonitorUnselected, Subject: "stock-api", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "is not down", "not selected", c.missing)
		})
	}
	// Another service's monitor is none of this question's business.
	ev := &Gathered{Commands: []evidence.CommandOutput{cmdOut("kubectl -n shop get servicemonitor stock-api -o yaml", smYAML), cmdOut("kubectl -n monitoring get prometheus prom-prometheus -o yaml", promFull)}, Window: win, Scope: Scope{Service: "checkout"}}
	if fs := detectMonitorUnselected(ev, nil); len(fs) != 0 {
		t.Errorf("findings for another service: %+v", fs)
	}
}
