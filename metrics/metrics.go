// Package metrics holds rootcause's Prometheus metrics on a registry of its
// own (never the global one), so tests and several servers in one process
// do not collide.
//
// Every method is safe on a nil *Metrics and then does nothing: packages
// hold a *Metrics (or one of the small interfaces below) that may be unset.
// The package imports no other rootcause package, so server/, agent/ and
// notify/ can all use it without import cycles.
//
// Label values are bounded: HTTP routes are the registered route patterns
// (or "unmatched"), methods outside the standard set are "other", states
// and outcomes are fixed sets; tool and agent names come from the tool
// catalog and the organization's config.
package metrics

import (
	"maps"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every rootcause metric name.
const Namespace = "rootcause"

// Metric names, for docs and tests.
const (
	HTTPRequests           = "rootcause_http_requests_total"
	HTTPDuration           = "rootcause_http_request_duration_seconds"
	RateLimitRejections    = "rootcause_rate_limit_rejections_total"
	Investigations         = "rootcause_investigations_total"
	InvestigationDuration  = "rootcause_investigation_duration_seconds"
	QueueDepth             = "rootcause_investigation_queue_depth"
	ToolCalls              = "rootcause_tool_calls_total"
	ToolCallDuration       = "rootcause_tool_call_duration_seconds"
	WebhookDeliveries      = "rootcause_webhook_deliveries_total"
	WebhookRetries         = "rootcause_webhook_retries_total"
	DBSize                 = "rootcause_db_size_bytes"
	DBTransactionDuration  = "rootcause_db_transaction_duration_seconds"
	BuildInfo              = "rootcause_build_info"
	toolOutcomeOK          = "ok"
	toolOutcomeError       = "error"
	methodOther            = "other"
	routeUnmatched         = "unmatched"
	deliveryOutcomeSuccess = "success"
)

// Deliveries is what the delivery workers (webhooks, chat notifications)
// report; *Metrics implements it.
type Deliveries interface {
	// Delivery counts one handled delivery attempt of kind ("webhook",
	// "slack") by the state it reached (delivered, pending for a retry,
	// failed, disabled).
	Delivery(kind, outcome string)
	// Retry counts one delivery scheduled again after a failed attempt.
	Retry(kind string)
}

// Metrics is the set of rootcause metrics and their registry.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	httpMu       sync.Mutex                              // serialises addHTTPSeries
	httpSeries   atomic.Pointer[map[httpKey]*httpSeries] // never modified once stored
	rateLimited  *prometheus.CounterVec
	invs         *prometheus.CounterVec
	invDuration  *prometheus.HistogramVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	deliveries   *prometheus.CounterVec
	retries      *prometheus.CounterVec
	dbTx         *prometheus.HistogramVec
}

var _ Deliveries = (*Metrics)(nil)

// New returns the metrics on a fresh registry, with the Go runtime and
// process collectors and rootcause_build_info{version}.
func New(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: HTTPRequests, Help: "HTTP requests answered, by route pattern, method and status code.",
	}, []string{"route", "method", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: HTTPDuration, Help: "Latency of HTTP requests, by route pattern and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
	}, []string{"route", "method"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RateLimitRejections, Help: "Requests refused with 429, by rate-limit class (read, write, run, auth_failure).",
	}, []string{"class"})
	m.invs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Investigations, Help: "Investigation state transitions, by state entered and agent.",
	}, []string{"state", "agent"})
	m.invDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: InvestigationDuration, Help: "Run time of investigations that reached a final state after starting, by agent and final state.",
		Buckets: []float64{.1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
	}, []string{"agent", "state"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ToolCalls, Help: "Tool calls made by agents, by tool and outcome (ok, error).",
	}, []string{"tool", "outcome"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: ToolCallDuration, Help: "Latency of tool calls, by tool.",
		Buckets: []float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"tool"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: WebhookDeliveries, Help: "Outbound delivery attempts (webhook, slack), by kind and outcome.",
	}, []string{"kind", "outcome"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: WebhookRetries, Help: "Outbound deliveries scheduled for another attempt after a failure, by kind.",
	}, []string{"kind"})
	m.dbTx = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: DBTransactionDuration, Help: "Latency of database transactions, by kind (read, write).",
		Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	}, []string{"kind"})
	f(m.httpRequests)
	f(m.httpDuration)
	f(m.rateLimited)
	f(m.invs)
	f(m.invDuration)
	f(m.toolCalls)
	f(m.toolDuration)
	f(m.deliveries)
	f(m.retries)
	f(m.dbTx)
	bi := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: BuildInfo, Help: "Always 1; the version label names the running build.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	bi.Set(1)
	f(bi)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, to register more collectors.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the registry in the Prometheus text exposition format
// (or OpenMetrics when the scraper asks for it). It does no
// authentication: the API route wraps it with admin:read, and the
// separate metrics listener is meant for a private address.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorHandling:     promhttp.ContinueOnError,
	})
}

// ObserveHTTP records one answered request: the request counter
// {route, method, status} and the latency histogram {route, method}.
//
// The two series of each (route, method, status) are looked up by their
// label values once and kept (httpSeries), so a request costs a map lookup
// and the two updates, not client_golang's hashing and validation of the
// label values (and the status's formatting) twice. The exported series
// are the same (TestObserveHTTPSeriesUnchanged).
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = routeUnmatched
	}
	k := httpKey{route: route, method: normMethod(method), status: status}
	var s *httpSeries
	if known := m.httpSeries.Load(); known != nil {
		s = (*known)[k]
	}
	if s == nil {
		s = m.addHTTPSeries(k)
	}
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}

// httpKey names the series of one kind of answered request.
type httpKey struct {
	route, method string
	status        int
}

// httpSeries are the two series ObserveHTTP updates for an httpKey.
type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// maxHTTPSeries bounds the series kept. Routes are the registered patterns
// and methods a fixed set, so a server stays far below it; past it series
// are looked up by label on every request, as without the map.
const maxHTTPSeries = 4096

// addHTTPSeries looks up the series of k by their label values and keeps
// them. The map is copied on write: requests read it without a lock, and
// writes stop once every route, method and status seen has its entry.
func (m *Metrics) addHTTPSeries(k httpKey) *httpSeries {
	m.httpMu.Lock()
	defer m.httpMu.Unlock()
	var known map[httpKey]*httpSeries
	if p := m.httpSeries.Load(); p != nil {
		known = *p
		if s := known[k]; s != nil {
			return s
		}
	}
	s := &httpSeries{
		requests: m.httpRequests.WithLabelValues(k.route, k.method, strconv.Itoa(k.status)),
		duration: m.httpDuration.WithLabelValues(k.route, k.method),
	}
	if len(known) >= maxHTTPSeries {
		return s
	}
	next := make(map[httpKey]*httpSeries, len(known)+1)
	maps.Copy(next, known)
	next[k] = s
	m.httpSeries.Store(&next)
	return s
}

func normMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return methodOther
}

// RateLimited counts one request refused by the limiter of class.
func (m *Metrics) RateLimited(class string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(class).Inc()
}

// Transition counts an investigation entering state (pending, running,
// completed, failed, cancelled).
func (m *Metrics) Transition(agent, state string) {
	if m == nil {
		return
	}
	m.invs.WithLabelValues(state, agent).Inc()
}

// InvestigationDone observes the run time of an investigation that ended
// in state after running for d.
func (m *Metrics) InvestigationDone(agent, state string, d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.invDuration.WithLabelValues(agent, state).Observe(d.Seconds())
}

// ToolCall records one tool call; a nil err is outcome "ok".
func (m *Metrics) ToolCall(tool string, d time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := toolOutcomeOK
	if err != nil {
		outcome = toolOutcomeError
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// Delivery implements Deliveries.
func (m *Metrics) Delivery(kind, outcome string) {
	if m == nil {
		return
	}
	if outcome == "" {
		outcome = deliveryOutcomeSuccess
	}
	m.deliveries.WithLabelValues(kind, outcome).Inc()
}

// Retry implements Deliveries.
func (m *Metrics) Retry(kind string) {
	if m == nil {
		return
	}
	m.retries.WithLabelValues(kind).Inc()
}

// ObserveTx records the latency of one database transaction of kind
// ("read" or "write").
func (m *Metrics) ObserveTx(kind string, d time.Duration) {
	if m == nil {
		return
	}
	m.dbTx.WithLabelValues(kind).Observe(d.Seconds())
}

// QueueDepthFunc registers the gauge rootcause_investigation_queue_depth,
// read from depth at each scrape (the runtime's QueueDepth).
func (m *Metrics) QueueDepthFunc(depth func() int) {
	if m == nil || depth == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: QueueDepth, Help: "Investigations queued and waiting for a worker.",
	}, func() float64 { return float64(depth()) }))
}

// DBFile registers the gauge rootcause_db_size_bytes, the size of the
// database file at path at each scrape.
func (m *Metrics) DBFile(path string) {
	if m == nil || path == "" {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: DBSize, Help: "Size of the database file in bytes.",
	}, func() float64 {
		fi, err := os.Stat(path)
		if err != nil {
			return 0
		}
		return float64(fi.Size())
	}))
}
