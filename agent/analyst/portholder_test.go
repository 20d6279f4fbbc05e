package analyst

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A workload a transcript printed only in part (a jsonpath of its ports,
// a grep of its YAML) is the holder of the host port it binds.
func TestPortHoldersInCommands(t *testing.T) {
	cases := []struct {
		name, command string
		lines         []string
		port          int
		want          string
	}{
		{"jsonpath of hostNetwork and ports", `kubectl get ds prometheus-node-exporter -n monitoring -o jsonpath='{.spec.template.spec.hostNetwork}{" "}{.spec.template.spec.containers[0].ports}{"\n"}'`,
			[]string{`true [{"containerPort":9100,"hostPort":9100,"name":"metrics","protocol":"TCP"}]`}, 9100, "DaemonSet monitoring/prometheus-node-exporter (hostNetwork)"},
		{"host network, container port only", `kubectl get daemonset/node-exporter --namespace=kube-system -o jsonpath='{.spec.template.spec.hostNetwork} {.spec.template.spec.containers[*].ports}'`,
			[]string{`true [{"containerPort":9100,"name":"metrics","protocol":"TCP"}]`}, 9100, "DaemonSet kube-system/node-exporter (hostNetwork)"},
		{"YAML lines of a Deployment", `kubectl -n edge get deploy envoy-edge -o yaml | grep -A3 ports`,
			[]string{"        ports:", "        - containerPort: 8443", "          hostPort: 443", "          protocol: TCP"}, 443, "Deployment edge/envoy-edge"},
		{"another port", `kubectl get ds fluent-bit -n logging -o jsonpath='{.spec.template.spec.containers[0].ports}'`,
			[]string{`[{"containerPort":2020,"hostPort":2020,"protocol":"TCP"}]`}, 9100, ""},
		{"the pending workload itself", `kubectl get deploy kafka-lag-exporter -n monitoring -o jsonpath='{.spec.template.spec.containers[0].ports}'`,
			[]string{`[{"containerPort":9100,"hostPort":9100,"protocol":"TCP"}]`}, 9100, ""},
		{"not on the host network", `kubectl get ds agent -n ops -o jsonpath='{.spec.template.spec.hostNetwork} {.spec.template.spec.containers[0].ports}'`,
			[]string{` [{"containerPort":9100,"protocol":"TCP"}]`}, 9100, ""},
	}
	for _, c := range cases {
		got := strings.Join(portHoldersInCommands([]evidence.CommandOutput{{Command: c.command, Lines: c.lines}}, c.port, "kafka-lag-exporter"), " and ")
		if got != c.want {
			t.Errorf("%s: holder %q, want %q", c.name, got, c.want)
		}
	}
}

// The scheduler's event names no port: the pending pod's description
// does, and the DaemonSet a jsonpath printed binds it.
func TestPortConflictFromTranscript(t *testing.T) {
	transcript := `$ kubectl describe pod exporter-5d8b9c7f6-jx4wd -n monitoring
Name:             exporter-5d8b9c7f6-jx4wd
Namespace:        monitoring
Priority:         0
Node:             <none>
Labels:           app.kubernetes.io/name=exporter
                  pod-template-hash=5d8b9c7f6
Status:           Pending
Controlled By:    ReplicaSet/exporter-5d8b9c7f6
Containers:
  exporter:
    Image:      example/exporter:0.8.2
    Port:       9100/TCP
    Host Port:  9100/TCP
    Requests:
      cpu:     50m
Conditions:
  Type           Status
  PodScheduled   False
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  36m   default-scheduler  0/4 nodes are available: 4 node(s) didn't have free ports for the requested pod ports. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.
$ kubectl get ds node-agent -n monitoring -o jsonpath='{.spec.template.spec.hostNetwork}{" "}{.spec.template.spec.containers[0].ports}{"\n"}'
true [{"containerPort":9100,"hostPort":9100,"name":"metrics","protocol":"TCP"}]
`
	now := time.Date(2026, 11, 20, 13, 48, 0, 0, time.UTC)
	src := bundleSources(t, fstest.MapFS{
		"bundle.json":             {Data: []byte(`{"captured_at":"2026-11-20T13:48:00Z"}`)},
		"kubernetes/terminal.txt": {Data: []byte(transcript)},
	}, now)
	g := newGatherer(Options{}, Scope{Namespace: "monitoring"}, src)
	outs, err := src.Kubernetes.(evidence.CommandOutputReader).CommandOutputs(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	g.commands = outs
	f := Finding{Kind: KindUnschedulable, Subject: "exporter", Object: "pod monitoring/exporter-5d8b9c7f6-jx4wd", Namespace: "monitoring", Weight: 0.85,
		Facts: map[string]string{"message": "0/4 nodes are available: 4 node(s) didn't have free ports for the requested pod ports."}}
	fs := g.explainPortConflicts(context.Background(), []Finding{f})
	if got := fs[0].fact("host_ports"); got != "9100/TCP" {
		t.Fatalf("host ports %q, want 9100/TCP", got)
	}
	if got := fs[0].fact("port_holder"); got != "DaemonSet monitoring/node-agent (hostNetwork)" {
		t.Fatalf("holder %q", got)
	}
	if fs[0].fact("why") == "" || fs[0].Weight < 0.95 {
		t.Errorf("a named holder is direct evidence: why %q, weight %.2f", fs[0].fact("why"), fs[0].Weight)
	}
}
