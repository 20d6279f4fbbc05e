package analyst_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/demo"
	"github.com/rootcause/rootcause/agent/eval"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
	"github.com/rootcause/rootcause/internal/heapsample"
)

// BenchmarkLargeLog investigates a bundle whose host log is generated at
// benchmark time (ANALYST_BENCH_MB megabytes, default 200) with a
// connection-refused burst in the last quarter hour, and reports the
// time and the peak heap of one investigation.
func BenchmarkLargeLog(b *testing.B) {
	mb := 200
	if v, err := strconv.Atoi(os.Getenv("ANALYST_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	dir := b.TempDir()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at":"`+now.Format(time.RFC3339)+`"}`), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		b.Fatal(err)
	}
	writeLog(b, filepath.Join(dir, "logs", "checkout.log"), now, int64(mb)<<20)
	bun, err := bundle.OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	cat := tools.Builtin()
	toolkit := cat.DefaultToolkit(tools.AgentInvestigation)
	eng := analyst.New(analyst.Options{})
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		sess := &tools.Session{Catalog: cat, Env: &tools.Env{Sources: bun.Sources(now)}, Toolkit: toolkit}
		run := &benchRun{sess: sess}
		var res *finding.Result
		var elapsed time.Duration
		peak := heapsample.Peak(20*time.Millisecond, func() {
			start := time.Now()
			res, err = eng.Investigate(context.Background(), &agent.Request{Agent: agent.Agent{Name: tools.AgentInvestigation, Tools: toolkit},
				Context: map[string]string{"service": "checkout"}}, run)
			elapsed = time.Since(start)
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(elapsed.Seconds(), "s/investigation")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.Logf("%d MB log: %s, peak heap %d MB; root cause: %s", mb, elapsed, peak>>20, res.RootCause.Description)
	}
}

type benchRun struct{ sess *tools.Session }

func (r *benchRun) Call(ctx context.Context, name string, args any) (any, error) {
	return r.sess.Call(ctx, name, args)
}
func (r *benchRun) Has(name string) bool        { return r.sess.Has(name) }
func (r *benchRun) Step(string, int, int)       {}
func (r *benchRun) Sub(a agent.Agent) agent.Run { return r }
func (r *benchRun) Env() *tools.Env             { return r.sess.Env }

// writeLog writes about size bytes of a service log spanning the two hours
// before now: routine traffic throughout, and connection-refused errors to
// a dependency in the last 15 minutes.
func writeLog(b *testing.B, file string, now time.Time, size int64) {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	const lineLen = 120
	n := size / lineLen
	span := 2 * time.Hour
	onset := now.Add(-15 * time.Minute)
	for i := int64(0); i < n; i++ {
		t := now.Add(-span + time.Duration(float64(span)*float64(i)/float64(n)))
		ts := t.Format("2006-01-02T15:04:05.000Z07:00")
		switch {
		case t.After(onset) && i%7 == 0:
			fmt.Fprintf(w, "%s ERROR payment failed order=%d: dial tcp 10.0.%d.%d:8080: connect: connection refused\n", ts, i, i%4, i%200)
		case i%5 == 0:
			fmt.Fprintf(w, "%s INFO cache refresh of catalog segment %d done in %dms\n", ts, i%64, i%300)
		default:
			fmt.Fprintf(w, "%s INFO request GET /api/cart/%d served status=200 in %dms user=%x\n", ts, i%100000, i%90, i*7919)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEvalPublic investigates every public scenario under
// testdata/scenarios once per iteration, as `rootcause eval
// testdata/scenarios/*` does (target: under 1 s per pass).
func BenchmarkEvalPublic(b *testing.B) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*", "scenario.json"))
	if len(dirs) == 0 {
		b.Skip("no scenarios")
	}
	var scens []*eval.Scenario
	for _, f := range dirs {
		s, err := eval.LoadScenario(filepath.Dir(f))
		if err != nil {
			b.Fatal(err)
		}
		scens = append(scens, s)
	}
	eng := analyst.New(analyst.Options{})
	b.ResetTimer()
	for b.Loop() {
		for _, s := range scens {
			out, err := eval.Run(context.Background(), s, eng, eval.Options{})
			if err != nil || out.Error != "" {
				b.Fatalf("%s: %v %s", s.Name, err, out.Error)
			}
		}
	}
}

// BenchmarkDemo investigates the sample incident built into the binary, as
// `rootcause demo` does (target: under 300 ms).
func BenchmarkDemo(b *testing.B) {
	bun, err := bundle.Open(demo.Bundle(), demo.Name)
	if err != nil {
		b.Fatal(err)
	}
	ask := demo.Request()
	s := &eval.Scenario{Name: demo.Name, Dir: demo.Name, Bundle: bun, Now: demo.Now(), Title: ask.Message,
		Request: eval.Request{AgentName: ask.AgentName, Message: ask.Message, Context: ask.Context}}
	eng := analyst.New(analyst.Options{})
	b.ResetTimer()
	for b.Loop() {
		out, err := eval.Run(context.Background(), s, eng, eval.Options{})
		if err != nil || out.Error != "" {
			b.Fatalf("%v %s", err, out.Error)
		}
	}
}
