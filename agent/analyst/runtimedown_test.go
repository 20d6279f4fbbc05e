package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestRuntimeLines: the kubelet finding its runtime down, and package
// managers upgrading a runtime (dpkg, apt history, unattended-upgrades,
// yum, dnf); a CNI not ready and other packages are not it.
func TestRuntimeLines(t *testing.T) {
	for line, want := range map[string]bool{
		`E1121 18:46:09.004417    1402 kubelet.go:2396] "Skipping pod synchronization" err="[container runtime is down, PLEG is not healthy: pleg was last seen active 3m5.404s ago; threshold is 3m0s]"`:                     true,
		`E1121 18:42:53.118611    1402 kubelet.go:2885] "Container runtime sanity check failed" err="rpc error: code = Unavailable desc = connection error"`:                                                                  true,
		`E0301 10:00:00.000000    700 remote_runtime.go:633] "Status from runtime service failed" err="rpc error: code = Unavailable desc = dial unix /var/run/crio/crio.sock: connect: no such file or directory"`:           true,
		`E0301 10:00:00.000000    700 kubelet.go:2874] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"`: false,
	} {
		if got := runtimeDownRE.MatchString(line); got != want {
			t.Errorf("down %.70q: %v, want %v", line, got, want)
		}
	}
	for line, want := range map[string]bool{
		"2026-11-21T18:42:44+0000 upgrade containerd.io:amd64 1.7.24-1 2.0.1-1":                                  true,
		"Upgrade: containerd.io:amd64 (1.6.33-1, 2.0.0-1), libssl3:amd64 (3.0.2-0ubuntu1.15, 3.0.2-0ubuntu1.18)": true,
		"2026-03-01 06:25:11,118 INFO Packages that will be upgraded: cri-o runc":                                true,
		"Mar 01 06:25:12 Updated: containerd.io-1.6.33-3.1.el7.x86_64":                                           true,
		"2026-11-21T18:42:36+0000 upgrade libssl3t64:amd64 3.0.13-0ubuntu3.3 3.0.13-0ubuntu3.4":                  false,
	} {
		if got := runtimeUpgradeRE.MatchString(line); got != want {
			t.Errorf("upgrade %.70q: %v, want %v", line, got, want)
		}
	}
}

// TestDetectRuntimeDown: a NotReady node whose kubelet finds the runtime
// down is the root, with the runtime's own failure and the upgrade before
// it (a syslog with CRI-O and dnf, a journal with containerd and a dpkg
// log named after the node); a Ready node is none.
func TestDetectRuntimeDown(t *testing.T) {
	now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-2 * time.Hour), End: now}
	at := now.Add(-90 * time.Minute)
	node := func(name, runtime string, ready corev1.ConditionStatus) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: runtime},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletNotReady",
				Message: "container runtime is down, PLEG is not healthy: pleg was last seen active 12m0s ago; threshold is 3m0s", LastTransitionTime: metav1.NewTime(at.Add(3 * time.Minute))}}}}
	}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "search-api-7d9f5c8b64-2hkq8", Namespace: "search"}, Spec: corev1.PodSpec{NodeName: "ip-10-2-3-4.ec2.internal"}}
	syslog := LogSet{Source: "ip-10-2-3-4-messages", Subject: "ip-10-2-3-4-messages", Host: true, Templates: []analysis.LogTemplate{
		{Example: `Mar  1 06:30:02 ip-10-2-3-4 dnf[3110]: Upgraded: cri-o-1.31.1-1.el9.x86_64`, Incident: 1, FirstSeen: at.Add(-time.Minute), FirstIncident: at.Add(-time.Minute)},
		{Example: `Mar  1 06:30:05 ip-10-2-3-4 crio[3202]: time="2026-03-01 06:30:05.118" level=fatal msg="validating runtime config: runtime validation: \"runc\" not found in $PATH"`, Incident: 1, FirstSeen: at, FirstIncident: at},
		{Example: `Mar  1 06:30:05 ip-10-2-3-4 systemd[1]: crio.service: Main process exited, code=exited, status=1/FAILURE`, Incident: 4, FirstSeen: at, FirstIncident: at},
		{Example: `Mar  1 06:31:10 ip-10-2-3-4 kubelet[1402]: E0301 06:31:10.118611    1402 kubelet.go:2885] "Container runtime sanity check failed" err="rpc error: code = Unavailable desc = dial unix /var/run/crio/crio.sock: connect: no such file or directory"`, Incident: 20, FirstSeen: at.Add(time.Minute), FirstIncident: at.Add(time.Minute)},
	}}
	journal := LogSet{Source: "wk-4-journal", Subject: "wk-4-journal", Host: true, Templates: []analysis.LogTemplate{
		{Example: `2026-03-01T06:30:05+0000 wk-4 containerd[419507]: containerd: failed to load TOML from /etc/containerd/config.toml: unsupported config version ` + "`1`", Incident: 1, FirstSeen: at, FirstIncident: at},
	}}
	dpkg := LogSet{Source: "wk-4-dpkg", Subject: "wk-4-dpkg", Host: true, Templates: []analysis.LogTemplate{
		{Example: "2026-03-01T06:29:44+0000 upgrade containerd.io:amd64 1.7.24-1 2.0.1-1", Count: 1, Baseline: 1, FirstSeen: at.Add(-time.Minute)},
	}}
	cases := []struct {
		name, node string
		ev         Gathered
		n          int
		want       []string
	}{
		{"syslog, cri-o, dnf", "ip-10-2-3-4.ec2.internal", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node("ip-10-2-3-4.ec2.internal", "cri-o://1.30.4", corev1.ConditionFalse)}, Pods: []corev1.Pod{pod}}, Logs: []LogSet{syslog}, Window: w}, 1,
			[]string{"container runtime (cri-o) on node ip-10-2-3-4.ec2.internal is down after a package upgrade of cri-o to 1.31.1", `runtime validation: \"runc\" not found`, "search-api (search-api-7d9f5c8b64-2hkq8)"}},
		{"journal, containerd, dpkg", "wk-4", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node("wk-4", "containerd://1.7.24", corev1.ConditionFalse)}}, Logs: []LogSet{journal, dpkg}, Window: w}, 1,
			[]string{"from 1.7.24-1 to 2.0.1-1", "unsupported config version", "PLEG is not healthy"}},
		{"Ready node", "wk-4", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node("wk-4", "containerd://1.7.24", corev1.ConditionTrue)}}, Logs: []LogSet{dpkg}, Window: w}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := oneFinding(t, detectRuntimeDown(&c.ev, nil), c.n > 0)
			if !ok {
				return
			}
			if f.Subject != c.node || f.Weight != 0.95 || f.fact("upgrade") == "" {
				t.Errorf("subject %q weight %v upgrade %q", f.Subject, f.Weight, f.fact("upgrade"))
			}
			h := &Hypothesis{Kind: KindRuntimeDown, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
	// Only a change to the node's runtime or packages triggers it.
	h := &Hypothesis{Kind: KindRuntimeDown, Subject: "wk-4"}
	for desc, want := range map[string]bool{"node image: bump AMI to al2023-1.30-20260301": true, "cart_saved_for_later = 25%": false} {
		if got := runtimeDown.fitsChange(h, &Finding{Kind: KindFeatureFlag, Facts: map[string]string{"description": desc}}); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", desc, got, want)
		}
	}
}
