// Package localizebench measures cross-service localization at the size of
// its performance target: 50 services × 40 minutes of metrics, 1 GB of
// logs and 1 million spans, read from a bundle on disk with the product's
// readers (OpenMetrics through the PromQL engine, logs/*.log through the
// log scanner, traces/*.jsonl through the OTLP/JSON decoder), mined with
// the template miner, built into per-minute service graphs and ranked.
// Target: under 10 s and 500 MB on the 2-core machine (docs/performance.md).
//
//	go test ./bench/localize -run '^$' -bench . -benchtime 1x -timeout 30m
//
// LOCALIZE_BENCH_LOG_MB and LOCALIZE_BENCH_SPANS shrink the input (default
// 1024 and 1,000,000). The bundle is generated into a temporary directory,
// or kept in $ROOTCAUSE_BENCH_LOCALIZE when set (generated there if absent,
// reused as is otherwise).
package localizebench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
	"github.com/rootcause/rootcause/agent/localize"
	"github.com/rootcause/rootcause/internal/heapsample"
)

const (
	services = 50
	culprit  = "svc-37" // its CPU, latency and own span time rise at minute 37
	entry    = "svc-00" // the asked service: slower from minute 37
	metrics  = 12       // series per service
)

// The window: 30 minutes of baseline, 10 of incident, one-minute bins.
var (
	t0  = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	win = localize.Window{BaselineStart: t0, Start: t0.Add(30 * time.Minute), End: t0.Add(40 * time.Minute), Step: time.Minute}
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkLocalize runs localization end to end on the generated bundle
// and reports the wall time, the process's CPU time, the peak heap in use,
// the peak resident set and the memory allocated (bytes and objects) of
// the run, in two orders: spans-first, the
// analyst's (every span indexed before the logs are read), and
// overlapped (the logs read and mined alongside the spans, the lines
// carrying a span id kept until the spans are in: localize.SpanJoin's
// Defer).
func BenchmarkLocalize(b *testing.B) {
	logMB, spans := envInt("LOCALIZE_BENCH_LOG_MB", 1024), envInt("LOCALIZE_BENCH_SPANS", 1_000_000)
	dir := os.Getenv("ROOTCAUSE_BENCH_LOCALIZE")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "bundle")
	}
	if _, err := os.Stat(filepath.Join(dir, "bundle.json")); err != nil {
		if err := generate(dir, logMB, spans); err != nil {
			b.Fatal(err)
		}
	}
	var logBytes, traceBytes int64
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				switch {
				case strings.HasSuffix(p, ".log"):
					logBytes += fi.Size()
				case strings.HasSuffix(p, ".jsonl"):
					traceBytes += fi.Size()
				}
			}
		}
		return nil
	})
	for _, overlap := range []bool{false, true} {
		name := "spans-first"
		if overlap {
			name = "overlapped"
		}
		b.Run(name, func(b *testing.B) { benchRun(b, dir, overlap, logBytes, traceBytes) })
	}
}

func benchRun(b *testing.B, dir string, overlap bool, logBytes, traceBytes int64) {
	for b.Loop() {
		runtime.GC()
		resetPeakRSS()
		var ms0, ms1 runtime.MemStats
		var res localize.Result
		var n counts
		var err error
		var elapsed, cpu time.Duration
		peak := heapsample.Peak(100*time.Millisecond, func() {
			runtime.ReadMemStats(&ms0)
			start, cpu0 := time.Now(), cpuTime()
			res, n, err = run(context.Background(), dir, overlap)
			elapsed, cpu = time.Since(start), cpuTime()-cpu0
			runtime.ReadMemStats(&ms1)
		})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Candidates) == 0 || res.Candidates[0].Subject != culprit {
			b.Fatalf("wrong ranking: %+v", res.Candidates)
		}
		rss := peakRSS()
		b.ReportMetric(elapsed.Seconds(), "s/localization")
		b.ReportMetric(cpu.Seconds(), "cpu-s/localization")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
		b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/(1<<20), "alloc-MB")
		b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/1e6, "M-allocs")
		b.Logf("%d services, %d MB of logs (%d lines), %d MB of traces (%d spans), %d series, %d log templates, %d operation events: %s wall (spans and metrics %s, logs %s), %s CPU, peak heap %d MB, peak RSS %d MB; first: %s",
			services, logBytes>>20, n.lines, traceBytes>>20, n.spans, n.series, n.templates, n.ops, elapsed.Round(time.Millisecond),
			n.spanPhase.Round(time.Millisecond), n.logPhase.Round(time.Millisecond), cpu.Round(time.Millisecond),
			peak>>20, rss>>20, res.Candidates[0].Explanation)
	}
}

type counts struct {
	lines, spans, series, templates, ops int
	spanPhase, logPhase                  time.Duration // wall time of the spans (with the metrics) and of the logs
}

// run is localization over the bundle in dir. In the analyst's order
// (overlap false): the spans first (one scan into per-minute service
// graphs and the span index, alongside the metrics), then the logs of
// every service (one miner per service, one worker per core), each line
// carrying a span id joined to its span's operation as it is read. With
// overlap, the logs are read alongside the spans and the metrics, the
// join keeping the lines that carry a span id until the spans are in.
func run(ctx context.Context, dir string, overlap bool) (localize.Result, counts, error) {
	var n counts
	bd, err := bundle.OpenDir(dir)
	if err != nil {
		return localize.Result{}, n, err
	}
	src := bd.Sources(win.End)
	in := localize.Input{Window: win, Entry: entry}
	join := localize.NewSpanJoin()
	var (
		metricErr, traceErr error
		traceSeries         []localize.Series
		edges               []localize.Edge
		inner               sync.WaitGroup
	)
	start := time.Now()
	inner.Go(func() { in.Metrics, metricErr = metricInput(ctx, src.Metrics) })
	traces := func() {
		traceSeries, edges, n.spans, traceErr = traceInput(ctx, src.Traces, join)
		n.spanPhase = time.Since(start)
	}
	if overlap {
		join.Defer()
		inner.Go(func() {
			traces()
			join.SpansDone()
		})
	} else {
		traces()
		inner.Wait()
	}
	logStart := time.Now()
	in.Logs, n.lines, err = logInput(ctx, src.Logs, join)
	n.logPhase = time.Since(logStart)
	inner.Wait()
	for _, e := range []error{traceErr, metricErr, err} {
		if e != nil {
			return localize.Result{}, n, e
		}
	}
	in.Ops = join.OpEvents()
	in.Metrics = append(in.Metrics, traceSeries...)
	in.Edges = edges
	n.series, n.templates, n.ops = len(in.Metrics), len(in.Logs), len(in.Ops)
	return localize.Rank(in), n, nil
}

// metricInput reads every service's series of the window, one range query
// per metric name.
func metricInput(ctx context.Context, m evidence.Metrics) ([]localize.Series, error) {
	var out []localize.Series
	for j := range metrics {
		name := metricName(j)
		ss, err := m.QueryRange(ctx, name, win.BaselineStart, win.End, win.Step)
		if err != nil {
			return nil, err
		}
		sig, unit := metricSignal(j)
		for _, s := range ss {
			out = append(out, localize.Series{Service: s.Labels["service"], Pod: s.Labels["pod"], Metric: name,
				Signal: sig, Unit: unit, Bad: localize.Up, Points: s.Points})
		}
	}
	return out, nil
}

// logInput mines each log source's lines of the window (baseline and
// incident) with its own Miner, one worker per core, and joins each line
// that carries a span id to its span.
func logInput(ctx context.Context, logs evidence.Logs, join *localize.SpanJoin) ([]localize.LogTemplate, int, error) {
	sources, err := logs.Sources(ctx)
	if err != nil {
		return nil, 0, err
	}
	var (
		mu    sync.Mutex
		out   []localize.LogTemplate
		lines int
		first error
		wg    sync.WaitGroup
	)
	jobs := make(chan string)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for s := range jobs {
				m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
				err := logs.Scan(ctx, evidence.LogQuery{Source: s, Since: win.BaselineStart, Until: win.End}, func(l evidence.LogLine) error {
					if m.Add(l.Time, l.Source, l.Text) {
						join.AddLineTokens(l.Text, m.Tokens())
					} else {
						join.AddLine(l.Text)
					}
					return nil
				})
				var part []localize.LogTemplate
				for _, t := range m.Templates() {
					part = append(part, localize.LogTemplate{Service: s, Template: t.Template, Example: t.Example,
						Error: analysis.ErrorLike(t.Template) || analysis.ErrorLike(t.Example), Counts: t.PerMinute})
				}
				base, inc := m.Lines()
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				out = append(out, part...)
				lines += base + inc
				mu.Unlock()
			}
		})
	}
	for _, s := range sources {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	return out, lines, first
}

// traceInput scans the spans of the window once into the service graph of
// every minute and returns, per service, its exclusive time p90 and error
// share per minute, the entry's request duration p90, per call edge the
// calls per trace, and the edges (as the analyst does); every span is
// indexed for the log join.
func traceInput(ctx context.Context, tr evidence.Traces, join *localize.SpanJoin) ([]localize.Series, []localize.Edge, int, error) {
	var wins []tracegraph.Window
	for t := win.BaselineStart; t.Before(win.End); t = t.Add(win.Step) {
		wins = append(wins, tracegraph.Window{Start: t, End: t.Add(win.Step)})
	}
	bld := tracegraph.NewBuilder(wins...)
	n := 0
	errName := map[string]bool{} // the analyst's check, once per distinct name
	err := tr.ScanSpans(ctx, win.BaselineStart, win.End, func(s *evidence.Span) error {
		n++
		join.Add(s)
		isErr, ok := errName[s.Name]
		if !ok {
			isErr = localize.ErrorHandlerSpan(s.Name)
			if len(errName) < 10000 {
				errName[strings.Clone(s.Name)] = isErr
			}
		}
		if !s.Error && isErr {
			c := *s
			c.Error = true
			bld.Add(&c)
			return nil
		}
		bld.Add(s)
		return nil
	})
	if err != nil {
		return nil, nil, n, err
	}
	series, edges := localize.TraceSeries(bld.Graphs(), entry)
	return series, edges, n, nil
}

func svcName(i int) string { return fmt.Sprintf("svc-%02d", i) }

func metricName(j int) string {
	switch j {
	case 0:
		return "http_request_duration_seconds_p90"
	case 1:
		return "container_cpu_usage_cores"
	}
	return fmt.Sprintf("app_gauge_%d", j)
}

func metricSignal(j int) (localize.Signal, string) {
	switch j {
	case 0:
		return localize.SignalLatency, "s"
	case 1:
		return localize.SignalCPU, "cores"
	}
	return localize.SignalOther, ""
}

// generate writes the bundle: bundle.json, prometheus/metrics.om, one
// logs/svc-NN.log per service (logMB in all) and traces/otlp.jsonl.
func generate(dir string, logMB, spans int) error {
	for _, d := range []string{"prometheus", "logs", "traces"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := writeMetrics(filepath.Join(dir, "prometheus", "metrics.om")); err != nil {
		return err
	}
	errs := make(chan error, services+1)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range services {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- writeLog(filepath.Join(dir, "logs", svcName(i)+".log"), i, int64(logMB)<<20/services, spans)
		})
	}
	wg.Go(func() { errs <- writeTraces(filepath.Join(dir, "traces", "otlp.jsonl"), spans) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	// bundle.json last: its presence says the bundle is complete.
	return os.WriteFile(filepath.Join(dir, "bundle.json"),
		[]byte(`{"captured_at": "`+win.End.Format(time.RFC3339)+`", "description": "generated by bench/localize"}`+"\n"), 0o644)
}

// level is a quiet series around base (a slow wave with small noise) that
// rises to base×factor from minute 37 when factor is not 1.
func level(base, factor float64, minute int, rng *rand.Rand) float64 {
	v := base * (1 + 0.03*math.Sin(float64(minute)/3) + 0.01*rng.Float64())
	if factor != 1 && minute >= 37 {
		v *= factor
	}
	return v
}

func writeMetrics(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for j := range metrics {
		name := metricName(j)
		fmt.Fprintf(w, "# TYPE %s gauge\n", name)
		for i := range services {
			svc := svcName(i)
			factor := 1.0
			switch {
			case j == 0 && (svc == culprit || svc == entry):
				factor = 20
			case j == 1 && svc == culprit:
				factor = 18
			}
			for minute := range 40 {
				at := t0.Add(time.Duration(minute) * time.Minute).Unix()
				fmt.Fprintf(w, "%s{service=%q,pod=%q} %g %d\n", name, svc, svc+"-0", level(0.1+float64(j)/10, factor, minute, rng), at)
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeLog writes size bytes of timestamped lines spread over the window:
// a dozen routine templates with varying values; the request, query and
// downstream-call lines (half of them) carry the trace and span ids of a
// span of the service, as instrumented loggers write them.
func writeLog(path string, svc int, size int64, spans int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	span := win.End.Sub(win.BaselineStart)
	var written int64
	var line []byte
	traces, step := traceGrid(spans)
	sid := ""
	for i := 0; written < size; i++ {
		t := win.BaselineStart.Add(time.Duration(float64(span) * float64(written) / float64(size)))
		line = t.AppendFormat(line[:0], "2006-01-02T15:04:05.000000Z07:00")
		if i%6 == 0 {
			// The span a line of this minute can name (traces of the
			// service pass every few seconds).
			sid = spanAt(svc, t, traces, step)
		}
		ids := ""
		if sid != "" {
			ids = " trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=" + sid
		}
		switch i % 6 {
		case 0:
			line = fmt.Appendf(line, " INFO handled request GET /api/v1/items/%d status=200 duration=%dms user=%x%s\n", i%9973, i%250, i*7919, ids)
		case 1:
			line = fmt.Appendf(line, " INFO cache hit key=item:%d ratio=0.%02d\n", i%5003, i%100)
		case 2:
			line = fmt.Appendf(line, " DEBUG db query took %d ms rows=%d table=items_%d%s\n", i%40, i%17, svc, ids)
		case 3:
			line = fmt.Appendf(line, " INFO published event order-%d to topic orders partition %d offset %d\n", i, i%12, i*3)
		case 4:
			line = fmt.Appendf(line, " WARN slow call to downstream svc-%02d took %d ms (budget 200 ms)%s\n", (svc+i)%services, 200+i%300, ids)
		default:
			line = fmt.Appendf(line, " INFO session %x refreshed for client 10.0.%d.%d:%d\n", i*31337, i%250, i%200, 1024+i%5000)
		}
		n, _ := w.Write(line)
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeTraces writes n spans over the 40 minutes: traces of ten spans,
// svc-00 calling a chain of services (a SERVER span per service, its
// CLIENT span to the next), written as the Collector's file exporter does
// (lines of up to 300 spans grouped by resource). From minute 37 the
// culprit's own time is ten times longer.
func writeTraces(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	traces, step := traceGrid(n)
	var batch []evidence.Span
	written := 0
	for i := range traces {
		tid := fmt.Sprintf("%016x%016x", rng.Uint64(), uint64(i))
		start := win.BaselineStart.Add(time.Duration(i) * step)
		late := start.Sub(t0) >= 37*time.Minute
		// The chain's services, then the spans from the innermost out
		// so that every caller's span encloses its callee's.
		chain := chainOf(i)
		self := make([]time.Duration, len(chain))
		for k, s := range chain {
			self[k] = time.Duration(2+rng.IntN(3)) * time.Millisecond
			if late && svcName(s) == culprit {
				self[k] *= 10
			}
		}
		// Durations: a service's span lasts its own time plus its callee's.
		dur := make([]time.Duration, len(chain))
		for k := len(chain) - 1; k >= 0; k-- {
			dur[k] = self[k]
			if k+1 < len(chain) {
				dur[k] += dur[k+1] + 2*time.Millisecond // the client span's network time
			}
		}
		at, parent := start, ""
		for k, s := range chain {
			name := svcName(s)
			id := fmt.Sprintf("%08x%08x", i, 2*k)
			server := evidence.Span{TraceID: tid, SpanID: id, ParentSpanID: parent, Name: operation(s), Service: name,
				Pod: name + "-0", Namespace: "shop", Kind: evidence.SpanKindServer, Start: at, End: at.Add(dur[k]),
				Attributes: map[string]string{"http.request.method": "GET", "http.response.status_code": "200"}}
			batch = append(batch, server)
			if k+1 < len(chain) {
				cid := fmt.Sprintf("%08x%08x", i, 2*k+1)
				cs := at.Add(self[k] / 2)
				batch = append(batch, evidence.Span{TraceID: tid, SpanID: cid, ParentSpanID: id, Name: operation(chain[k+1]),
					Service: name, Pod: server.Pod, Namespace: "shop", Kind: evidence.SpanKindClient, Start: cs, End: cs.Add(dur[k+1] + 2*time.Millisecond)})
				parent, at = cid, cs.Add(time.Millisecond)
			}
		}
		if over := written + len(batch) - n; over > 0 && i == traces-1 {
			batch = batch[:len(batch)-over] // the last trace is cut to make n
		}
		if len(batch) >= 3000 || i == traces-1 {
			written += len(batch)
			if err := flush(w, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// chainLen is the services a trace passes through: 5 SERVER and 4 CLIENT
// spans a trace.
const chainLen = 5

// traceGrid is how many traces n spans make and the time between their
// starts.
func traceGrid(n int) (int, time.Duration) {
	traces := (n + 2*chainLen - 2) / (2*chainLen - 1)
	return traces, win.End.Sub(win.BaselineStart) / time.Duration(max(traces, 1))
}

// chainOf is the services trace i calls, svc-00 first.
func chainOf(i int) []int {
	chain := make([]int, chainLen)
	for k := 1; k < len(chain); k++ {
		chain[k] = 1 + (i*7+k*13)%(services-1)
	}
	if i%3 == 0 {
		chain[len(chain)-1] = 37 // the culprit is on a third of the traces
	}
	return chain
}

// spanAt returns the id of a SERVER span of service svc in a trace that
// starts at or after t (within a few hundred traces), or "".
func spanAt(svc int, t time.Time, traces int, step time.Duration) string {
	i0 := int(t.Sub(win.BaselineStart) / max(step, 1))
	for i := i0; i < min(i0+300, traces); i++ {
		for k, c := range chainOf(i) {
			if c == svc {
				return fmt.Sprintf("%08x%08x", i, 2*k)
			}
		}
	}
	return ""
}

// operation names a service's RPC as gRPC instrumentation names its
// SERVER span and the caller's CLIENT span.
func operation(svc int) string {
	return fmt.Sprintf("shop.%s.v1.CatalogService/GetItem", svcName(svc))
}

// flush writes spans grouped by service in lines of up to 300.
func flush(w *bufio.Writer, spans []evidence.Span) error {
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

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's peak resident set (VmHWM) of the
// process, so that peakRSS covers what follows.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
