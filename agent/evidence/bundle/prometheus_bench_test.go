package bundle_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// benchStart is the first sample of the generated bundle.
var benchStart = time.Date(2026, 3, 14, 6, 0, 0, 0, time.UTC)

// writeBenchBundle writes a bundle whose prometheus/metrics.om holds about
// size bytes of OpenMetrics: 50 services, each with request counters per
// status code, a 10-bucket latency histogram, CPU and memory, scraped every
// 15 s (with a counter reset every few hours), and returns the directory and
// the time of the last sample.
func writeBenchBundle(tb testing.TB, size int64) (string, time.Time) {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "prometheus"), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "prometheus", "metrics.om"))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	type series struct {
		name, labels string
		counter      bool
		v, rate      float64
	}
	rng := rand.New(rand.NewPCG(1, 2))
	les := []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"}
	var all []*series
	for s := range 50 {
		svc := fmt.Sprintf("svc-%02d", s)
		base := 5 + rng.Float64()*100
		for _, code := range []string{"200", "404", "500"} {
			r := base
			if code != "200" {
				r = base * 0.01
			}
			all = append(all, &series{name: "http_requests_total", labels: fmt.Sprintf(`service="%s",code="%s",namespace="shop"`, svc, code), counter: true, rate: r})
		}
		for i, le := range les {
			all = append(all, &series{name: "http_request_duration_seconds_bucket", labels: fmt.Sprintf(`service="%s",le="%s",namespace="shop"`, svc, le), counter: true, rate: base * float64(i+1) / float64(len(les))})
		}
		all = append(all, &series{name: "process_cpu_seconds_total", labels: fmt.Sprintf(`service="%s",namespace="shop"`, svc), counter: true, rate: 0.1 + rng.Float64()})
		all = append(all, &series{name: "container_memory_working_set_bytes", labels: fmt.Sprintf(`service="%s",namespace="shop"`, svc), v: 1e8 + rng.Float64()*4e8})
	}
	fmt.Fprintf(w, "# TYPE http_requests counter\n# TYPE http_request_duration_seconds histogram\n# TYPE process_cpu_seconds counter\n# TYPE container_memory_working_set_bytes gauge\n")
	var written int64
	t := benchStart
	for step := 0; written < size; step++ {
		t = benchStart.Add(time.Duration(step) * 15 * time.Second)
		for i, s := range all {
			if s.counter {
				s.v += s.rate * 15 * (0.8 + 0.4*rng.Float64())
				if (step+i*37)%2000 == 0 && step > 0 { // a restart
					s.v = 0
				}
			} else {
				s.v += (rng.Float64() - 0.5) * 1e6
			}
			n, _ := fmt.Fprintf(w, "%s{%s} %.6g %d\n", s.name, s.labels, s.v, t.Unix())
			written += int64(n)
		}
	}
	fmt.Fprintf(w, "# EOF\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir, t
}

// benchQueries are the queries an investigation runs over the metrics.
var benchQueries = []string{
	`sum by (service) (rate(http_requests_total[5m]))`,
	`sum by (service) (rate(http_requests_total{code="500"}[5m])) / sum by (service) (rate(http_requests_total[5m]))`,
	`histogram_quantile(0.99, sum by (le, service) (rate(http_request_duration_seconds_bucket[5m])))`,
	`max_over_time(container_memory_working_set_bytes[10m])`,
	`topk(5, rate(process_cpu_seconds_total[5m]))`,
}

// BenchmarkPromBundle50MB loads a generated 50 MB OpenMetrics bundle and
// queries it as an investigation does: instant queries at the end and range
// queries over the last 3 hours at a 1-minute step (181 points per series).
//
//	go test ./agent/evidence/bundle -run '^$' -bench PromBundle50MB -benchtime 3x
func BenchmarkPromBundle50MB(b *testing.B) {
	dir, end := writeBenchBundle(b, 50<<20)
	st, err := os.Stat(filepath.Join(dir, "prometheus", "metrics.om"))
	if err != nil {
		b.Fatal(err)
	}
	open := func(tb testing.TB) evidence.Metrics {
		bd, err := bundle.OpenDir(dir)
		if err != nil {
			tb.Fatal(err)
		}
		return bd.Sources(end).Metrics
	}
	ctx := context.Background()
	b.Run("load", func(b *testing.B) {
		b.SetBytes(st.Size())
		b.ReportAllocs()
		var peak uint64
		for b.Loop() {
			m := open(b)
			got, err := m.Query(ctx, `count(http_requests_total)`, end)
			if err != nil || len(got) != 1 || got[0].Points[0].V != 150 {
				b.Fatalf("count: %v %v", got, err)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			runtime.KeepAlive(m)
		}
		b.ReportMetric(float64(peak)/(1<<20), "heap-after-load-MB")
	})
	m := open(b)
	if _, err := m.Query(ctx, `up`, end); err != nil {
		b.Fatal(err)
	}
	b.Run("query", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, q := range benchQueries {
				got, err := m.Query(ctx, q, end)
				if err != nil || len(got) == 0 {
					b.Fatalf("%s: %d series, %v", q, len(got), err)
				}
			}
		}
	})
	b.Run("query_range", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, q := range benchQueries {
				got, err := m.QueryRange(ctx, q, end.Add(-3*time.Hour), end, time.Minute)
				points := 0
				for _, s := range got {
					points += len(s.Points)
				}
				if err != nil || points < 170 {
					b.Fatalf("%s: %d series, %d points, %v", q, len(got), points, err)
				}
			}
		}
	})
}
