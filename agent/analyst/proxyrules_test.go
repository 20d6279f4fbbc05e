package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// failSeries is a series of n points a minute apart from start, v(i) each.
func failSeries(labels evidence.Labels, start time.Time, n int, v func(i int) float64) evidence.Series {
	s := evidence.Series{Labels: labels}
	for i := 0; i < n; i++ {
		s.Points = append(s.Points, evidence.Point{T: start.Add(time.Duration(i) * time.Minute), V: v(i)})
	}
	return s
}

// TestRisingFrom: a failure rate that turns positive, or a counter that
// starts rising, in the window and goes on is a failure from then; one
// that stopped, never moved or moved only before the baseline is not.
func TestRisingFrom(t *testing.T) {
	now := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	start := now.Add(-60 * time.Minute)
	cases := []struct {
		name  string
		rate  bool
		v     func(i int) float64
		ok    bool
		onset int
	}{
		{"rate turns positive", true, func(i int) float64 { return map[bool]float64{true: 0.033}[i >= 11] }, true, 11},
		{"counter rises every sync", false, func(i int) float64 { return float64(max(0, i-20)) }, true, 21},
		{"rate recovered", true, func(i int) float64 { return map[bool]float64{true: 0.033}[i >= 11 && i < 30] }, false, 0},
		{"counter flat", false, func(i int) float64 { return 7 }, false, 0},
		{"rate zero", true, func(i int) float64 { return 0 }, false, 0},
	}
	for _, c := range cases {
		s := failSeries(nil, start, 60, c.v)
		onset, ok := risingFrom(s.Points, c.rate, w)
		if ok != c.ok || ok && !onset.Equal(start.Add(time.Duration(c.onset)*time.Minute)) {
			t.Errorf("%s: %v %s", c.name, ok, onset)
		}
	}
}

// TestProxySyncFailedLines: kube-proxy's klog of a failed iptables,
// IPVS or nftables sync is a failure; its successful syncs are not.
func TestProxySyncFailedLines(t *testing.T) {
	for line, want := range map[string]bool{
		`E1124 10:12:40.551902       1 proxier.go:1520] "Failed to execute iptables-restore" err=<`:                   true,
		`	exit status 4: Another app is currently holding the xtables lock. Stopped waiting after 5s.`:                true,
		`I1124 10:12:40.552011       1 proxier.go:810] "Sync failed" ipFamily="IPv4" retryingTime="30s"`:              true,
		`E0301 09:00:00.000000       1 proxier.go:1105] "Failed to sync ipvs rules" err="..."`:                        true,
		`I1124 10:11:02.904116       1 proxier.go:805] "SyncProxyRules complete" ipFamily="IPv4" elapsed="398.114ms"`: false,
		`I1124 10:11:02.904116       1 config.go:188] "Starting service config controller"`:                           false,
	} {
		if got := proxySyncFailedRE.MatchString(line); got != want {
			t.Errorf("%.70q: %v, want %v", line, got, want)
		}
	}
}

// TestDetectProxyRules: the node whose kube-proxy failures rise is the
// subject; the applications with pods there are its victims, the Services
// rolled out after the rules froze moved, kube-proxy's own line is
// quoted; nodes that sync are no finding. Only a change to what writes
// the node's netfilter tables triggers it, not the rollout.
func TestDetectProxyRules(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 58, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	start := now.Add(-56 * time.Minute)
	name := "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
	lbl := func(node, ip string) evidence.Labels {
		return evidence.Labels{"__name__": name, "instance": ip + ":10249", "job": "kube-proxy", "node": node}
	}
	set := MetricSet{Name: name, Unit: "/s", Series: []evidence.Series{
		failSeries(lbl("ip-10-9-1-201.eu-west-1.compute.internal", "10.9.1.201"), start, 56, func(int) float64 { return 0 }),
		failSeries(lbl("ip-10-9-2-14.eu-west-1.compute.internal", "10.9.2.14"), start, 56, func(i int) float64 { return map[bool]float64{true: 1.0 / 30}[i >= 11] }),
	}}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-6d9b8c7f54-8kz4w", Namespace: "storefront"}, Spec: corev1.PodSpec{NodeName: "ip-10-9-2-14.eu-west-1.compute.internal"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-6d9b8c7f54-5xq2p", Namespace: "storefront"}, Spec: corev1.PodSpec{NodeName: "ip-10-9-1-201.eu-west-1.compute.internal"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-zc4h8", Namespace: "kube-system"}, Spec: corev1.PodSpec{NodeName: "ip-10-9-2-14.eu-west-1.compute.internal"}},
	}
	ev := &Gathered{Metrics: []MetricSet{set}, K8s: K8sEvidence{Pods: pods}, Window: w,
		Changes: []evidence.Change{
			{Timestamp: now.Add(-48 * time.Minute), Service: "netguard-agent", Kind: "infra", Description: "secops: netguard-agent DaemonSet 3.8.0 -> 3.9.1 (host firewall rule sync every 2s, iptables-legacy backend)"},
			{Timestamp: now.Add(-28 * time.Minute), Service: "pricing-api", Kind: "deploy", Description: "pricing-api 4.12.0: regional VAT rounding"}},
		Commands: []evidence.CommandOutput{{Command: "kubectl logs -n kube-system kube-proxy-zc4h8 --since=60m | tail -14", Lines: []string{
			`I1124 10:11:02.904116       1 proxier.go:805] "SyncProxyRules complete" ipFamily="IPv4" elapsed="398.114ms"`,
			`E1124 10:12:40.551902       1 proxier.go:1520] "Failed to execute iptables-restore" err=<`}}}}
	fs := detectProxyRules(ev, nil)
	if len(fs) != 1 || fs[0].Subject != "ip-10-9-2-14.eu-west-1.compute.internal" || !fs[0].Time.Equal(start.Add(11*time.Minute)) {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.fact("workloads") != "web" || f.fact("moved") != "pricing-api" {
		t.Errorf("workloads %q moved %q", f.fact("workloads"), f.fact("moved"))
	}
	h := &Hypothesis{Kind: KindProxyRules, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
	wantDescribed(t, h, Scope{}, "kube-proxy on node ip-10-9-2-14", "cannot write the Service rules", "Failed to execute iptables-restore", "pricing-api was rolled out", "web (web-6d9b8c7f54-8kz4w)")
	if !proxyRules.related(h, &Finding{Kind: KindConnRefused, Subject: "pricing-api"}) || !proxyRules.related(h, &Finding{Kind: KindTimeout, Subject: "pricing-api", Facts: map[string]string{"caller": "web"}}) ||
		proxyRules.related(h, &Finding{Kind: KindConnRefused, Subject: "checkout"}) {
		t.Error("related: the refused calls to the moved Service and the web pods' are, checkout's are not")
	}
	for desc, want := range map[string]bool{
		ev.Changes[0].Description:  true,
		"calico-node 3.27 -> 3.28": true,
		ev.Changes[1].Description:  false,
	} {
		c := &Finding{Kind: KindInfraChange, Subject: "x", Facts: map[string]string{"description": desc}}
		if got := proxyRules.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", desc, got, want)
		}
	}
}
