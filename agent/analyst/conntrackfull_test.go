package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestConntrackFullLines: the kernel's report, as the journal, syslog and
// older kernels print it, names the host; other netfilter lines do not.
func TestConntrackFullLines(t *testing.T) {
	cases := []struct {
		line, host string
		ok         bool
	}{
		{"2026-11-25T14:04:22.661Z ip-10-0-7-19 kernel: [4121361.118000] nf_conntrack: nf_conntrack: table full, dropping packet", "ip-10-0-7-19", true},
		{"Nov 25 14:04:22 worker-3 kernel: [4121361.118000] nf_conntrack: table full, dropping packet", "worker-3", true},
		{"Mar  1 09:00:01 db-01 kernel: ip_conntrack: table full, dropping packet.", "db-01", true},
		{"2026-11-25T14:13:09.924Z ip-10-0-7-19 kernel: [4121888.118000] net_ratelimit: 841 callbacks suppressed", "", false},
		{"2026-11-25T13:58:14.020Z ip-10-0-7-19 kernel: [4120993.118204] IPv4: martian source 10.0.7.255 from 10.0.7.1, on dev eth0", "", false},
		{"2026-11-25T14:00:00Z ip-10-0-7-19 kernel: nf_conntrack: default automatic helper assignment has been turned off for security reasons", "", false},
	}
	for _, c := range cases {
		ok := conntrackFullRE.MatchString(c.line)
		host := ""
		if m := syslogHostRE.FindStringSubmatch(c.line); m != nil && ok {
			host = m[1]
		}
		if ok != c.ok || host != c.host {
			t.Errorf("%.60q: full %v host %q, want %v %q", c.line, ok, host, c.ok, c.host)
		}
	}
}

// TestDetectConntrackFull: the node is the subject; the workloads whose
// pods run there (listed pods or kube_pod_info series) are its victims,
// and a finding about them is related to it; entries against the limit
// are quoted when gathered. Lines only in the baseline count for nothing.
func TestDetectConntrackFull(t *testing.T) {
	now := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	kern := LogSet{Source: "ip-10-0-7-19-kern", Subject: "ip-10-0-7-19-kern", Host: true, Templates: []analysis.LogTemplate{
		{Example: "2026-11-25T14:04:22.661Z ip-10-0-7-19 kernel: [4121361.118000] nf_conntrack: nf_conntrack: table full, dropping packet", Incident: 18, Count: 18,
			FirstSeen: now.Add(-56 * time.Minute), FirstIncident: now.Add(-56 * time.Minute)},
		{Example: "2026-11-25T14:13:09.924Z ip-10-0-7-19 kernel: [4121888.118000] net_ratelimit: 841 callbacks suppressed", Incident: 5, Count: 5},
	}}
	podInfo := MetricSet{Name: "kube_pod_info", Class: MetricState, Series: []evidence.Series{
		{Labels: evidence.Labels{"__name__": "kube_pod_info", "namespace": "edge", "pod": "api-gateway-5f8c7d9b6-2hxqk", "node": "ip-10-0-7-19.eu-north-1.compute.internal"}},
		{Labels: evidence.Labels{"__name__": "kube_pod_info", "namespace": "edge", "pod": "api-gateway-5f8c7d9b6-kq7vn", "node": "ip-10-0-8-112.eu-north-1.compute.internal"}},
	}}
	usage := MetricSet{Name: "node_nf_conntrack_entries", Series: []evidence.Series{
		{Labels: evidence.Labels{"__name__": "node_nf_conntrack_entries", "instance": "10.0.7.19:9100", "node": "ip-10-0-7-19.eu-north-1.compute.internal"}, Points: []evidence.Point{{T: now, V: 262108}}},
		{Labels: evidence.Labels{"__name__": "node_nf_conntrack_entries_limit", "instance": "10.0.7.19:9100", "node": "ip-10-0-7-19.eu-north-1.compute.internal"}, Points: []evidence.Point{{T: now, V: 262144}}},
	}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "price-crawler-7c9d8b6f5-x2k4p", Namespace: "pricing"}, Spec: corev1.PodSpec{NodeName: "ip-10-0-7-19.eu-north-1.compute.internal"}}
	cases := []struct {
		name      string
		ev        Gathered
		n         int
		workloads string
		want      []string
	}{
		{"victims from kube_pod_info, usage quoted", Gathered{Logs: []LogSet{kern}, Metrics: []MetricSet{podInfo, usage}, Window: w}, 1, "api-gateway",
			[]string{"node ip-10-0-7-19 is full", "table full, dropping packet", "pods that run on that node: api-gateway (api-gateway-5f8c7d9b6-2hxqk)", "(100%)"}},
		{"victims from listed pods", Gathered{Logs: []LogSet{kern}, K8s: K8sEvidence{Pods: []corev1.Pod{pod}}, Window: w}, 1, "price-crawler", []string{"price-crawler (price-crawler-7c9d8b6f5-x2k4p)"}},
		{"baseline only", Gathered{Logs: []LogSet{{Source: "k", Templates: []analysis.LogTemplate{{Example: kern.Templates[0].Example, Baseline: 3, Count: 3}}}}, Window: w}, 0, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := oneFinding(t, detectConntrackFull(&c.ev, nil), c.n > 0)
			if !ok {
				return
			}
			if f.Subject != "ip-10-0-7-19" || f.fact("workloads") != c.workloads || !f.Time.Equal(now.Add(-56*time.Minute)) {
				t.Errorf("subject %q workloads %q onset %s", f.Subject, f.fact("workloads"), f.Time)
			}
			h := &Hypothesis{Kind: KindConntrackFull, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			victim := &Finding{Kind: KindLatency, Subject: c.workloads}
			if !conntrackFull.related(h, victim) || conntrackFull.related(h, &Finding{Kind: KindLatency, Subject: "checkout"}) {
				t.Errorf("related: %s should be, checkout should not", c.workloads)
			}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

// TestConntrackChurnChange: a change that makes a client open many
// connections fits; a deploy of an unrelated version does not.
func TestConntrackChurnChange(t *testing.T) {
	h := &Hypothesis{Kind: KindConntrackFull, Subject: "ip-10-0-7-19"}
	for desc, want := range map[string]bool{
		"price-crawler: competitor sweep concurrency 200 -> 2000 (black-week pricing), keepalive off for partner endpoints": true,
		"http client: disable keep-alive to partner API":                                                                    true,
		"catalog-api 8.14.2":        false,
		"raise memory limit to 2Gi": false,
	} {
		c := &Finding{Kind: KindConfigChange, Subject: "x", Facts: map[string]string{"description": desc}}
		if got := conntrackFull.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", desc, got, want)
		}
	}
}

// TestConntrackFullCommands: the kernel log read on the node in a
// transcript (dmesg -T through ssh, journalctl -k in kubectl debug node)
// names the node and dates the first drop; other output is no finding.
func TestConntrackFullCommands(t *testing.T) {
	now := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	cases := []struct {
		name  string
		cmd   evidence.CommandOutput
		host  string
		onset time.Time
	}{
		{"dmesg -T over ssh", evidence.CommandOutput{Command: "ssh ip-10-0-7-19 sudo dmesg -T | grep conntrack", Host: "ip-10-0-7-19", Lines: []string{
			"[Wed Nov 25 14:04:22 2026] nf_conntrack: nf_conntrack: table full, dropping packet",
			"[Wed Nov 25 14:07:28 2026] nf_conntrack: nf_conntrack: table full, dropping packet"}},
			"ip-10-0-7-19", time.Date(2026, 11, 25, 14, 4, 22, 0, time.UTC)},
		{"journalctl -k in kubectl debug node", evidence.CommandOutput{Command: "kubectl debug node/worker-3 -it --image=busybox -- chroot /host journalctl -k", Lines: []string{
			"Nov 25 14:10:03 worker-3 kernel: nf_conntrack: table full, dropping packet"}},
			"worker-3", w.Start},
		{"dmesg without drops", evidence.CommandOutput{Command: "ssh ip-10-0-7-19 dmesg", Host: "ip-10-0-7-19", Lines: []string{
			"[4120993.118204] IPv4: martian source 10.0.7.255 from 10.0.7.1, on dev eth0"}}, "", time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectConntrackFull(&Gathered{Commands: []evidence.CommandOutput{c.cmd}, Window: w}, nil)
			if c.host == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.host || !fs[0].Time.Equal(c.onset) || fs[0].fact("line") == "" {
				t.Fatalf("findings %+v", fs)
			}
		})
	}
}

// TestConntrackAtLimit: without the kernel's reports, entries at 95 % of
// the limit within the window make the finding, dated from when they got
// there; a node well below its limit, or full only before the baseline,
// does not.
func TestConntrackAtLimit(t *testing.T) {
	now := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	series := func(node string, vals ...float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": "node_nf_conntrack_entries", "node": node}}
		for i, v := range vals {
			s.Points = append(s.Points, evidence.Point{T: now.Add(time.Duration(i-len(vals)+1) * 30 * time.Minute), V: v})
		}
		return s
	}
	limit := func(node string) evidence.Series {
		return evidence.Series{Labels: evidence.Labels{"__name__": "node_nf_conntrack_entries_limit", "node": node}, Points: []evidence.Point{{T: now, V: 262144}}}
	}
	sets := []MetricSet{{Name: "node_nf_conntrack_entries", Class: MetricState, Series: []evidence.Series{
		series("ip-10-0-7-19.eu-north-1.compute.internal", 40000, 41000, 262000, 262108, 262100),
		series("ip-10-0-8-112.eu-north-1.compute.internal", 40000, 43000, 43592, 42000, 41000),
		series("ip-10-0-9-46.eu-north-1.compute.internal", 262144, 40000, 40000, 40000, 40000, 40000, 40000),
	}}, {Name: "node_nf_conntrack_entries_limit", Class: MetricState, Series: []evidence.Series{
		limit("ip-10-0-7-19.eu-north-1.compute.internal"), limit("ip-10-0-8-112.eu-north-1.compute.internal"), limit("ip-10-0-9-46.eu-north-1.compute.internal")}}}
	if c, _ := ClassifyMetric("node_nf_conntrack_entries_limit"); c != MetricState {
		t.Errorf("node_nf_conntrack_entries_limit is class %q: it must be gathered as a state", c)
	}
	fs := detectConntrackFull(&Gathered{Metrics: sets, Window: w}, nil)
	if len(fs) != 1 || fs[0].Subject != "ip-10-0-7-19.eu-north-1.compute.internal" || !fs[0].Time.Equal(now.Add(-time.Hour)) || fs[0].Source != SrcMetrics {
		t.Fatalf("findings %+v", fs)
	}
	h := &Hypothesis{Kind: KindConntrackFull, Subject: fs[0].Subject, Onset: fs[0].Time, Primary: []*Finding{&fs[0]}}
	if d := describe(h, Scope{}); !strings.Contains(d, "at 100% of its limit") || strings.Contains(d, "drop report") {
		t.Errorf("description: %s", d)
	}
}
