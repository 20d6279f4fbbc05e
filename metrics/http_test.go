package metrics

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

// ObserveHTTP keeps each (route, method, status)'s series instead of
// looking them up per request; what a scrape shows must be exactly what
// looking them up by label every time gives.
func TestObserveHTTPSeriesUnchanged(t *testing.T) {
	type obs struct {
		route, method string
		status        int
		d             time.Duration
	}
	var all []obs
	for i := range 300 {
		all = append(all, obs{
			route:  []string{"/api/v1/auth/me", "/api/v1/config/me/effective", "", "/api/v1/agents/run"}[i%4],
			method: []string{"GET", "POST", "BREW", "HEAD", "DELETE"}[i%5],
			status: []int{200, 304, 401, 429, 500, 201, 599}[i%7],
			d:      time.Duration(i*37) * time.Microsecond,
		})
	}
	got, want := New("v1"), New("v1")
	for _, o := range all {
		got.ObserveHTTP(o.route, o.method, o.status, o.d)
		// The series looked up by label on every request.
		route := o.route
		if route == "" {
			route = routeUnmatched
		}
		method := normMethod(o.method)
		want.httpRequests.WithLabelValues(route, method, strconv.Itoa(o.status)).Inc()
		want.httpDuration.WithLabelValues(route, method).Observe(o.d.Seconds())
	}
	fams, err := want.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	n := 0
	for _, f := range fams {
		if f.GetName() == HTTPRequests || f.GetName() == HTTPDuration {
			if err := enc.Encode(f); err != nil {
				t.Fatal(err)
			}
			n += len(f.GetMetric())
		}
	}
	if n < 20 {
		t.Fatalf("only %d series in the reference: the test would prove little", n)
	}
	if err := testutil.GatherAndCompare(got.reg, &text, HTTPRequests, HTTPDuration); err != nil {
		t.Fatal(err)
	}
}

// Concurrent first observations of the same series count every request.
func TestObserveHTTPConcurrent(t *testing.T) {
	m := New("v1")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				m.ObserveHTTP(fmt.Sprintf("/r%d", i%10), "GET", 200+g%2, time.Millisecond)
			}
		})
	}
	wg.Wait()
	for i := range 10 {
		for _, status := range []string{"200", "201"} {
			if got := testutil.ToFloat64(m.httpRequests.WithLabelValues(fmt.Sprintf("/r%d", i), "GET", status)); got != 400 {
				t.Errorf("/r%d %s: %v requests, want 400", i, status, got)
			}
		}
	}
	if got := testutil.CollectAndCount(m.httpDuration); got != 10 {
		t.Errorf("%d latency series, want 10", got)
	}
}

// Past maxHTTPSeries kinds of request, series are still counted (looked up
// by label each time).
func TestObserveHTTPBeyondKept(t *testing.T) {
	m := New("v1")
	const n = maxHTTPSeries + 50
	for range 2 {
		for i := range n {
			m.ObserveHTTP("/r"+strconv.Itoa(i), "GET", 200, time.Millisecond)
		}
	}
	if got := len(*m.httpSeries.Load()); got != maxHTTPSeries {
		t.Errorf("%d series kept, want %d", got, maxHTTPSeries)
	}
	if got := testutil.CollectAndCount(m.httpRequests); got != n {
		t.Fatalf("%d request series, want %d", got, n)
	}
	for _, i := range []int{0, maxHTTPSeries - 1, maxHTTPSeries, n - 1} {
		if got := testutil.ToFloat64(m.httpRequests.WithLabelValues("/r"+strconv.Itoa(i), "GET", "200")); got != 2 {
			t.Errorf("/r%d: %v requests, want 2", i, got)
		}
	}
}
