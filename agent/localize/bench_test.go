package localize

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/internal/heapsample"
)

// BenchmarkLocalize measures localization end to end on generated input:
// 50 services × 40 minutes of metrics (12 series each, one point a
// minute), LOCALIZE_BENCH_LOG_MB megabytes of logs (default 64; the target
// is stated for 1024) written to 50 files in a temporary directory and
// mined per service with the product's template miner (one worker per
// core), and LOCALIZE_BENCH_SPANS spans (default 100,000; the target is
// stated for 1,000,000) built into the service graph of every minute
// (agent/analysis/tracegraph) and turned into per-service self-time
// series, then ranked. It reports the time and the peak heap in use.
//
//	go test ./agent/localize -run '^$' -bench Localize -benchtime 1x
//	LOCALIZE_BENCH_LOG_MB=1024 LOCALIZE_BENCH_SPANS=1000000 go test ./agent/localize -run '^$' -bench Localize -benchtime 1x -timeout 30m
func BenchmarkLocalize(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("LOCALIZE_BENCH_LOG_MB")); err == nil && v > 0 {
		mb = v
	}
	spans := 100000
	if v, err := strconv.Atoi(os.Getenv("LOCALIZE_BENCH_SPANS")); err == nil && v > 0 {
		spans = v
	}
	const services = 50
	w := Window{BaselineStart: t0, Start: t0.Add(30 * time.Minute), End: t0.Add(40 * time.Minute), Step: time.Minute}
	dir := b.TempDir()
	files := make([]string, services)
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("svc-%02d.log", i))
		writeBenchLog(b, files[i], i, w, int64(mb)<<20/services)
	}
	metrics := benchMetrics(services)
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		var res Result
		var traceSeries []Series
		var elapsed, cpu time.Duration
		peak := heapsample.Peak(20*time.Millisecond, func() {
			start, cpu0 := time.Now(), cpuTime()
			var edges []Edge
			var inner sync.WaitGroup
			inner.Go(func() { traceSeries, edges = benchTraces(w, services, spans) })
			logs := mineBench(b, files, w)
			inner.Wait()
			res = Rank(Input{Window: w, Entry: "svc-00", Metrics: append(slices.Clip(metrics), traceSeries...), Logs: logs, Edges: edges})
			elapsed, cpu = time.Since(start), cpuTime()-cpu0
		})
		if len(res.Candidates) == 0 || res.Candidates[0].Subject != "svc-37" {
			b.Fatalf("wrong ranking: %+v", res.Candidates)
		}
		b.ReportMetric(elapsed.Seconds(), "s/localization")
		b.ReportMetric(cpu.Seconds(), "cpu-s/localization")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.Logf("%d services, %d MB of logs, %d spans, %d series: %s (%s of CPU), peak heap %d MB; first: %s", services, mb, spans, len(metrics)+len(traceSeries), elapsed, cpu.Round(time.Millisecond), peak>>20, res.Candidates[0].Explanation)
	}
}

// benchMetrics: every service has 12 quiet series; svc-37's CPU and
// latency rise with the symptom, svc-00 (the entry) slows down with it.
func benchMetrics(services int) []Series {
	var out []Series
	for i := 0; i < services; i++ {
		svc := fmt.Sprintf("svc-%02d", i)
		for j := 0; j < 12; j++ {
			var f func(int) (float64, bool)
			sig, unit := SignalOther, ""
			switch {
			case j == 0:
				sig, unit = SignalLatency, "s"
				if i == 0 || i == 37 {
					f = from(37, 40, 2)
				}
			case j == 1:
				sig, unit = SignalCPU, "cores"
				if i == 37 {
					f = from(37, 40, 1.8)
				}
			}
			out = append(out, Series{Service: svc, Pod: svc + "-0", Metric: fmt.Sprintf("m%d", j), Signal: sig, Unit: unit, Bad: Up,
				Points: wave(0.1+float64(j)/10, 0.003, f)})
		}
	}
	return out
}

// writeBenchLog writes size bytes of timestamped lines spread over the
// window: a dozen routine templates with varying values.
func writeBenchLog(b *testing.B, path string, svc int, w Window, size int64) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	span := w.End.Sub(w.BaselineStart)
	var written int64
	for i := 0; written < size; i++ {
		t := w.BaselineStart.Add(time.Duration(float64(span) * float64(written) / float64(size)))
		var line string
		switch i % 6 {
		case 0:
			line = fmt.Sprintf("%s INFO handled request GET /api/v1/items/%d status=200 duration=%dms user=%x\n", t.Format(time.RFC3339Nano), i%9973, i%250, i*7919)
		case 1:
			line = fmt.Sprintf("%s INFO cache hit key=item:%d ratio=0.%02d\n", t.Format(time.RFC3339Nano), i%5003, i%100)
		case 2:
			line = fmt.Sprintf("%s DEBUG db query took %d ms rows=%d table=items_%d\n", t.Format(time.RFC3339Nano), i%40, i%17, svc)
		case 3:
			line = fmt.Sprintf("%s INFO published event order-%d to topic orders partition %d offset %d\n", t.Format(time.RFC3339Nano), i, i%12, i*3)
		case 4:
			line = fmt.Sprintf("%s WARN slow call to downstream svc-%02d took %d ms (budget 200 ms)\n", t.Format(time.RFC3339Nano), (svc+i)%50, 200+i%300)
		default:
			line = fmt.Sprintf("%s INFO session %x refreshed for client 10.0.%d.%d:%d\n", t.Format(time.RFC3339Nano), i*31337, i%250, i%200, 1024+i%5000)
		}
		n, _ := bw.WriteString(line)
		written += int64(n)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// mineBench mines each file with a Miner, one worker per core, and turns
// the templates into localization input.
func mineBench(b *testing.B, files []string, w Window) []LogTemplate {
	var mu sync.Mutex
	var out []LogTemplate
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range jobs {
				m := analysis.NewMiner(w.BaselineStart, w.Start, w.End)
				f, err := os.Open(files[i])
				if err != nil {
					b.Error(err)
					continue
				}
				sc := bufio.NewScanner(f)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					line := sc.Text()
					ts, text, ok := cutTime(line)
					if ok {
						m.Add(ts, "", text)
					}
				}
				f.Close()
				svc := fmt.Sprintf("svc-%02d", i)
				var part []LogTemplate
				for _, t := range m.Templates() {
					part = append(part, LogTemplate{Service: svc, Template: t.Template, Error: analysis.ErrorLike(t.Template), Counts: t.PerMinute})
				}
				mu.Lock()
				out = append(out, part...)
				mu.Unlock()
			}
		})
	}
	for i := range files {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return out
}

// benchTraces generates n spans over the window's last 13 minutes
// (traces of ten spans: svc-00 calling a chain of services) and builds
// the graph of every minute, as the analyst does, into self-time series.
func benchTraces(w Window, services, n int) ([]Series, []Edge) {
	var wins []tracegraph.Window
	for t := w.BaselineStart; t.Before(w.End); t = t.Add(w.Step) {
		wins = append(wins, tracegraph.Window{Start: t, End: t.Add(w.Step)})
	}
	bld := tracegraph.NewBuilder(wins...)
	from := w.End.Add(-13 * time.Minute)
	span := w.End.Sub(from)
	var sp evidence.Span
	for i := 0; i < n; i++ {
		tr, k := i/10, i%10
		start := from.Add(time.Duration(float64(span) * float64(tr*10) / float64(n)))
		svc := 0
		if k > 0 {
			svc = 1 + (tr*7+k*13)%(services-1)
		}
		sp = evidence.Span{TraceID: strconv.Itoa(tr), SpanID: strconv.Itoa(k + 1), Name: "op", Service: fmt.Sprintf("svc-%02d", svc),
			Kind: evidence.SpanKindServer, Start: start.Add(time.Duration(k) * time.Millisecond), End: start.Add(time.Duration(20-k) * time.Millisecond)}
		if k > 0 {
			sp.ParentSpanID = strconv.Itoa(k)
		}
		bld.Add(&sp)
	}
	series := map[string]*Series{}
	var edges []Edge
	seen := map[Edge]bool{}
	for _, g := range bld.Graphs() {
		for _, st := range g.Services {
			s := series[st.Service]
			if s == nil {
				s = &Series{Service: st.Service, Metric: "span self time p90", Signal: SignalTraceLat, Unit: "s", Bad: Up}
				series[st.Service] = s
			}
			s.Points = append(s.Points, evidence.Point{T: g.Window.Start, V: st.SelfTime.P90.Seconds()})
		}
		for _, e := range g.Edges {
			if ed := (Edge{e.Caller, e.Callee}); !seen[ed] {
				seen[ed] = true
				edges = append(edges, ed)
			}
		}
	}
	out := make([]Series, 0, len(series))
	for _, k := range sortedKeys(series) {
		out = append(out, *series[k])
	}
	return out, edges
}

// cpuTime is the process's user and system CPU time so far: on a shared
// machine it says more than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cutTime(line string) (time.Time, string, bool) {
	for i := 0; i < len(line); i++ {
		if line[i] == ' ' {
			t, err := time.Parse(time.RFC3339Nano, line[:i])
			return t, line[i+1:], err == nil
		}
	}
	return time.Time{}, "", false
}
