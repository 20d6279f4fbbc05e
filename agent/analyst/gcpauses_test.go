package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
)

// TestParseGCPause reads the GC logs of the JVM (unified logging with G1,
// Parallel and ZGC, JDK 8 GC details), Go's gctrace, Node's --trace-gc and
// dotnet-counters.
func TestParseGCPause(t *testing.T) {
	cases := []struct {
		line          string
		severe, full  bool
		pause         time.Duration
		after, capMB  float64
		collectorSays string
		notGC         bool
	}{
		{line: "[2026-11-25T08:11:06.556+0000][info][gc          ] GC(2435) Pause Full (G1 Compaction Pause) 1218M->1124M(1229M) 3969.680ms",
			severe: true, full: true, pause: 3969680 * time.Microsecond, after: 1124, capMB: 1229, collectorSays: "G1 Compaction Pause"},
		{line: "[2026-11-25T07:41:19.763+0000][info][gc          ] GC(2337) Pause Young (Normal) (G1 Evacuation Pause) 1177M->1167M(1229M) 94.352ms",
			pause: 94352 * time.Microsecond, after: 1167, capMB: 1229},
		{line: "[12.345s][info][gc] GC(12) Pause Full (Ergonomics) 2010M->1990M(2048M) 2345.678ms",
			severe: true, full: true, pause: 2345678 * time.Microsecond, after: 1990, capMB: 2048, collectorSays: "Ergonomics"},
		{line: "[2026-03-01T10:00:00.000+0000][info][gc] Allocation Stall (http-nio-8080-exec-7) 1503.220ms",
			severe: true, full: true, pause: 1503220 * time.Microsecond},
		{line: "2026-03-01T10:00:00.000+0000: 5123.456: [Full GC (Allocation Failure) [PSYoungGen: 0K->0K(699392K)] [ParOldGen: 2063000K->2061000K(2097152K)] 2063000K->2061000K(2796544K), [Metaspace: 98000K->98000K(1140736K)], 3.4567890 secs] [Times: user=6.1 sys=0.0, real=3.46 secs]",
			severe: true, full: true, pause: 3456789 * time.Microsecond, after: 2061000.0 / 1024, capMB: 2796544.0 / 1024},
		{line: "gc 812 @3600.102s 38%: 0.081+1900+0.12 ms clock, 0.32+0.5/900/0+0.48 ms cpu, 3890->3870->3850 MB, 3900 MB goal, 0 MB stacks, 0 MB globals, 4 P",
			severe: true, pause: 201 * time.Microsecond, after: 3850, capMB: 3900},
		{line: "[8:0x5581c0d0]   123456 ms: Mark-Compact 1980.5 (2050.3) -> 1975.2 (2051.1) MB, 2345.6 / 0.0 ms  (average mu = 0.102, current mu = 0.05) allocation failure; scavenge might not succeed",
			severe: true, full: true, pause: 2345600 * time.Microsecond, after: 1975.2, capMB: 2051.1},
		{line: "    % Time in GC since last GC (%)                                62", severe: true},
		{line: "2026-11-25T07:30:36.039Z  INFO 1 --- [ledger-service] [io-8080-exec-35] c.a.p.ledger.web.RequestTimingFilter     : POST /v1/ledger/entries 201 took 3080ms", notGC: true},
	}
	for _, c := range cases {
		p, ok := parseGCPause(c.line)
		if ok == c.notGC {
			t.Errorf("%q: read as GC %v", c.line, ok)
			continue
		}
		if c.notGC {
			continue
		}
		if p.severe() != c.severe || p.full != c.full {
			t.Errorf("%q: severe %v full %v, want %v %v", c.line, p.severe(), p.full, c.severe, c.full)
		}
		if c.pause != 0 && (p.pause-c.pause > time.Millisecond || c.pause-p.pause > time.Millisecond) {
			t.Errorf("%q: pause %v, want %v", c.line, p.pause, c.pause)
		}
		if c.capMB != 0 && (int(p.after) != int(c.after) || int(p.capacity) != int(c.capMB)) {
			t.Errorf("%q: heap %.1f of %.1f, want %.1f of %.1f", c.line, p.after, p.capacity, c.after, c.capMB)
		}
		if !strings.Contains(p.collector, c.collectorSays) {
			t.Errorf("%q: collector %q, want %q", c.line, p.collector, c.collectorSays)
		}
	}
}

// TestDetectGCPauses makes a gc_pressure finding of a workload's long
// pauses with its live heap, names the change that sized the heap (before
// the window), and leaves short young pauses alone.
func TestDetectGCPauses(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	full := tmpl("[2026-05-01T11:10:00.000+0000][info][gc] GC(81) Pause Full (G1 Compaction Pause) 1990M->1890M(2048M) 2870.112ms", 14, at, w.End.Add(-time.Minute))
	young := tmpl("[2026-05-01T11:10:00.000+0000][info][gc] GC(80) Pause Young (Normal) (G1 Evacuation Pause) 1500M->900M(2048M) 24.100ms", 300, w.Start, w.End)
	goTrace := tmpl("gc 812 @3600.102s 41%: 0.081+1900+0.12 ms clock, 0.32+0.5/900/0+0.48 ms cpu, 3890->3870->3850 MB, 3900 MB goal, 4 P", 40, at, w.End)
	heapCut := evidence.Change{Timestamp: w.Start.Add(-20 * time.Hour), Service: "billing", Kind: "config", Description: "JAVA_OPTS -Xmx4g -> -Xmx2g"}
	cases := []struct {
		name    string
		set     LogSet
		changes []evidence.Change
		want    bool
		says    []string
	}{
		{"JVM full pauses with the live heap and the change", LogSet{Source: "billing-7d9c-abcde", Subject: "billing", Templates: []analysis.LogTemplate{young, full}}, []evidence.Change{heapCut},
			true, []string{"2.87 s", "1890M of its 2048M heap is still live", "too small", "-Xmx4g -> -Xmx2g"}},
		{"Go gctrace: GC takes the CPU, the live heap at its goal", LogSet{Source: "router-5f-xyz", Subject: "router", Templates: []analysis.LogTemplate{goTrace}}, nil,
			true, []string{"41% of its CPU goes to GC", "3850M of its 3900M heap"}},
		{"young pauses only", LogSet{Source: "billing-7d9c-abcde", Subject: "billing", Templates: []analysis.LogTemplate{young}}, []evidence.Change{heapCut}, false, nil},
	}
	for _, c := range cases {
		fs := detectGCPauses(&Gathered{Logs: []LogSet{c.set}, Earlier: c.changes, Window: w}, nil)
		if (len(fs) == 1) != c.want {
			t.Errorf("%s: %d findings", c.name, len(fs))
			continue
		}
		if !c.want {
			continue
		}
		h := &Hypothesis{Kind: KindGCPressure, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		recs := explain(t, c.name, gcPressure, h, c.says)
		if len(recs) == 0 || !strings.Contains(recs[0].Action, "heap") {
			t.Errorf("%s: recommendations %v", c.name, recs)
		}
	}
}

// TestGCPausesOneReplica names the one pod of a workload whose GC log
// holds the long pauses when the GC logs of its other pods were read and
// show none (JVM unified logging, Node's --trace-gc); a severe template
// seen in several pods names none.
func TestGCPausesOneReplica(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	from := func(tp analysis.LogTemplate, pods ...string) analysis.LogTemplate {
		tp.Source, tp.Sources = pods[0], pods
		return tp
	}
	jvmFull := tmpl("[2026-05-01T11:10:00.000+0000][info][gc] GC(881) Pause Full (G1 Compaction Pause) 4090M->4060M(4096M) 6120.500ms", 9, at, w.End)
	jvmYoung := tmpl("[2026-05-01T11:10:02.000+0000][info][gc] GC(882) Pause Young (Normal) (G1 Evacuation Pause) 2100M->1400M(4096M) 12.300ms", 200, w.Start, w.End)
	nodeFull := tmpl("[8:0x5581c0d0]   123456 ms: Mark-Compact 1980.5 (2050.3) -> 1975.2 (2051.1) MB, 2345.6 / 0.0 ms  (average mu = 0.102, current mu = 0.05) allocation failure; scavenge might not succeed", 6, at, w.End)
	nodeScav := tmpl("[8:0x5581c0d0]   120001 ms: Mark-sweep 900.1 (1010.3) -> 410.2 (1011.1) MB, 35.6 / 0.0 ms  (average mu = 0.9, current mu = 0.9) task; GC in old space requested", 50, w.Start, w.End)
	pod := func(name, ip string) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Namespace, p.Status.PodIP = name, "shop", ip
		return p
	}
	cases := []struct {
		name  string
		set   LogSet
		pods  []corev1.Pod
		says  []string
		never string
	}{
		{"JVM: one of three pods in full GCs", LogSet{Source: "cart-7d9c-aaaaa", Subject: "cart", Templates: []analysis.LogTemplate{
			from(jvmYoung, "cart-7d9c-aaaaa", "cart-7d9c-bbbbb", "cart-7d9c-ccccc"), from(jvmFull, "cart-7d9c-ccccc")}},
			[]corev1.Pod{pod("cart-7d9c-ccccc", "10.1.2.3")},
			[]string{"one pod of cart, cart-7d9c-ccccc (10.1.2.3)", "its 2 other pods collect in milliseconds", "some calls time out"}, ""},
		{"Node: one of two pods in Mark-Compact", LogSet{Source: "web-5f-aaaaa", Subject: "web", Templates: []analysis.LogTemplate{
			from(nodeScav, "web-5f-aaaaa", "web-5f-bbbbb"), from(nodeFull, "web-5f-bbbbb")}},
			nil, []string{"one pod of web, web-5f-bbbbb, stops", "its other pod collects"}, ""},
		{"the long pauses in every pod", LogSet{Source: "cart-7d9c-aaaaa", Subject: "cart", Templates: []analysis.LogTemplate{
			from(jvmYoung, "cart-7d9c-aaaaa", "cart-7d9c-bbbbb"), from(jvmFull, "cart-7d9c-aaaaa", "cart-7d9c-bbbbb")}},
			nil, []string{"cart stops for garbage collection"}, "one pod"},
		{"only one pod's log read", LogSet{Source: "cart-7d9c-aaaaa", Subject: "cart", Templates: []analysis.LogTemplate{
			from(jvmYoung, "cart-7d9c-aaaaa"), from(jvmFull, "cart-7d9c-aaaaa")}},
			nil, []string{"cart stops for garbage collection"}, "one pod"},
	}
	for _, c := range cases {
		fs := detectGCPauses(&Gathered{Logs: []LogSet{c.set}, K8s: K8sEvidence{Pods: c.pods}, Window: w}, nil)
		if len(fs) != 1 {
			t.Errorf("%s: %d findings", c.name, len(fs))
			continue
		}
		h := &Hypothesis{Kind: KindGCPressure, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		explain(t, c.name, gcPressure, h, c.says)
		if d := gcPressure.describe(h, Scope{}); c.never != "" && strings.Contains(d, c.never) {
			t.Errorf("%s: description %q says %q", c.name, d, c.never)
		}
	}
}
