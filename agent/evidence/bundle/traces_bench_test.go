package bundle

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// benchSpans is the size of the generated trace bundle: the performance
// target is localization over 1 million spans (docs/performance.md).
const benchSpans = 1_000_000

// traceBenchBundle writes a bundle of benchSpans spans into a temporary
// directory: 50 services in a call tree, traces of 10 spans over 40
// minutes, written as the Collector's file exporter does (lines of up to 300
// spans grouped by resource, traces spread over lines).
func traceBenchBundle(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	if err := writeBenchTraces(filepath.Join(dir, "traces"), benchSpans); err != nil {
		b.Fatal(err)
	}
	return dir
}

func writeBenchTraces(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "otlp.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const perTrace = 10
	traces := n / perTrace
	step := 40 * time.Minute / time.Duration(traces)
	var batch []evidence.Span
	for i := range traces {
		tid := fmt.Sprintf("%016x%016x", rng.Uint64(), uint64(i))
		start := t0.Add(time.Duration(i) * step)
		// A chain: entry service, then callers and callees among 50
		// services; each call is a CLIENT span and a SERVER span.
		svc := rng.IntN(5)
		parent := ""
		at := start
		dur := time.Duration(200+rng.IntN(800)) * time.Millisecond
		for j := 0; j < perTrace; j += 2 {
			id := fmt.Sprintf("%08x%08x", i, j)
			name := "svc-" + strconv.Itoa(svc)
			server := evidence.Span{TraceID: tid, SpanID: id, ParentSpanID: parent, Name: "GET /" + name, Service: name,
				Pod: name + "-5d4f8c9b7-abcde", Namespace: "shop", Kind: evidence.SpanKindServer, Start: at, End: at.Add(dur),
				Attributes: map[string]string{"http.request.method": "GET", "http.response.status_code": "200"}}
			if rng.IntN(100) == 0 {
				server.Error = true
			}
			next := (svc*7 + 1 + rng.IntN(3)) % 50
			cid := fmt.Sprintf("%08x%08x", i, j+1)
			client := evidence.Span{TraceID: tid, SpanID: cid, ParentSpanID: id, Name: "call svc-" + strconv.Itoa(next), Service: name,
				Pod: server.Pod, Namespace: "shop", Kind: evidence.SpanKindClient, Start: at.Add(dur / 10), End: at.Add(dur * 9 / 10)}
			batch = append(batch, server, client)
			parent, svc, at, dur = cid, next, client.Start.Add(time.Millisecond), dur*8/10-2*time.Millisecond
		}
		if len(batch) >= 3000 {
			if err := flushBench(w, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := flushBench(w, batch); err != nil {
		return err
	}
	return w.Flush()
}

// flushBench writes spans grouped by service in lines of up to 300, as an
// exporter batching per resource does.
func flushBench(w *bufio.Writer, spans []evidence.Span) error {
	by := map[string][]evidence.Span{}
	var order []string
	for _, s := range spans {
		if _, ok := by[s.Service]; !ok {
			order = append(order, s.Service)
		}
		by[s.Service] = append(by[s.Service], s)
	}
	for _, svc := range order {
		if err := otlpjson.WriteLines(w, by[svc], 300); err != nil {
			return err
		}
	}
	return nil
}

func openBench(b *testing.B, dir string) evidence.Traces {
	bd, err := OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "traces", "otlp.jsonl")); err == nil {
		b.SetBytes(st.Size())
	}
	return bd.Sources(time.Time{}).Traces
}

// BenchmarkTraceScan1M streams every span of 1M through ScanSpans.
func BenchmarkTraceScan1M(b *testing.B) {
	tr := openBench(b, traceBenchBundle(b))
	b.ResetTimer()
	cpu0 := cpuSeconds()
	defer func() { b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op") }()
	for b.Loop() {
		n := 0
		if err := tr.ScanSpans(context.Background(), time.Time{}, time.Time{}, func(*evidence.Span) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != benchSpans {
			b.Fatalf("%d spans", n)
		}
	}
	reportMem(b)
}

// BenchmarkTraceIndex1M builds the FindTraces/Trace index of 1M spans and
// answers one query.
func BenchmarkTraceIndex1M(b *testing.B) {
	dir := traceBenchBundle(b)
	b.ResetTimer()
	cpu0 := cpuSeconds()
	defer func() { b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op") }()
	for b.Loop() {
		tr := openBench(b, dir)
		got, err := tr.FindTraces(context.Background(), evidence.TraceQuery{Service: "svc-3", ErrorOnly: true, Limit: 10})
		if err != nil || len(got) != 10 {
			b.Fatalf("%d traces, %v", len(got), err)
		}
		if _, err := tr.Trace(context.Background(), got[0].TraceID); err != nil {
			b.Fatal(err)
		}
	}
	reportMem(b)
}

// BenchmarkServiceGraph1M builds the service graphs of a baseline and an
// incident window over 1M spans in one scan.
func BenchmarkServiceGraph1M(b *testing.B) {
	tr := openBench(b, traceBenchBundle(b))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b.ResetTimer()
	cpu0 := cpuSeconds()
	defer func() { b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op") }()
	for b.Loop() {
		gs, err := tracegraph.Build(context.Background(), tr,
			tracegraph.Window{Start: t0, End: t0.Add(30 * time.Minute)},
			tracegraph.Window{Start: t0.Add(30 * time.Minute), End: t0.Add(41 * time.Minute)})
		if err != nil || len(gs[0].Services) < 40 {
			b.Fatalf("%v %d services", err, len(gs[0].Services))
		}
	}
	reportMem(b)
}

func reportMem(b *testing.B) { b.ReportMetric(peakRSSMB(), "peak-RSS-MB") }

// cpuSeconds is the CPU time (user and system) the process has used: on a
// shared machine it says more than the wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSSMB is the process's peak resident set (VmHWM), in MB.
func peakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
