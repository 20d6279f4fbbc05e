package main

import (
	"fmt"
	"math"
	"time"
)

// scenDemo is the sample incident of `rootcause demo`: checkout v2.4.0
// keeps every rendered receipt in memory; the pods reach their 512Mi limit,
// are OOMKilled and crash-loop; the gateway answers 502/503.
func scenDemo() (*World, string, *Scenario) {
	w := newWorld("incident", mustTime("2026-03-14T10:42:00Z"), 4242)
	nodes := w.baseCluster("eu-west-1", "4")
	deployAt := w.ago(52 * time.Minute)
	a := w.addApp(AppSpec{NS: "shop", Name: "checkout", Replicas: 3, MemReq: "384Mi", MemLim: "512Mi", CPUReq: "500m", ProbePath: "/ready", Liveness: true, Team: "payments-experience",
		Nodes: nodes, Revs: []Rev{
			{Image: "ghcr.io/acme-shop/checkout:v2.3.4", At: w.ago(15 * 24 * time.Hour)},
			{Image: "ghcr.io/acme-shop/checkout:v2.3.5", At: w.ago(6*24*time.Hour + 4*time.Hour), Cause: "deploy v2.3.5"},
			{Image: "ghcr.io/acme-shop/checkout:v2.4.0", At: deployAt, Cause: "deploy v2.4.0"},
		}})
	gw := w.addApp(AppSpec{NS: "shop", Name: "gateway", Replicas: 2, Port: 8000, Nodes: nodes, ProbePath: "/ready", Team: "platform",
		Revs: []Rev{{Image: "envoyproxy/envoy:v1.32.3", At: w.ago(21 * 24 * time.Hour)}}})
	cart := w.addApp(AppSpec{NS: "shop", Name: "cart", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "payments-experience",
		Revs: []Rev{{Image: "ghcr.io/acme-shop/cart:v1.18.2", At: w.ago(9 * 24 * time.Hour)}}})
	pay := w.addApp(AppSpec{NS: "shop", Name: "payments", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "payments",
		Revs: []Rev{{Image: "ghcr.io/acme-shop/payments:v5.0.2", At: w.ago(12 * 24 * time.Hour)}}})
	w.completedJob("shop", "order-export-29556000", nodes[2], w.ago(49*time.Minute))
	w.resolvedScheduling(cart, w.ago(58*time.Minute))
	oldRS, newRS := a.RSs[1], a.RSs[2]
	restarts, starts := w.oomPods(a, deployAt.Add(25*time.Second), 8*time.Minute)
	for _, p := range a.Pods {
		w.startupEvents(p)
		w.rsCreateEvent(newRS, p)
	}
	for i := range 3 {
		at := deployAt.Add(time.Duration(i*36) * time.Second)
		w.scalingEvent(a, newRS, at, fmt.Sprintf("Scaled up replica set %s from %d to %d", newRS.Name, i, i+1))
		w.scalingEvent(a, oldRS, at.Add(34*time.Second), fmt.Sprintf("Scaled down replica set %s from %d to %d", oldRS.Name, 3-i, 2-i))
	}
	first := a.Pods[0]
	w.event(evSpec{NS: "default", Kind: "Node", Name: first.Spec.NodeName, Type: "Warning", Reason: "OOMKilling",
		Msg:   "Memory cgroup out of memory: Killed process 30117 (checkout) total-vm:1712044kB, anon-rss:523112kB, file-rss:16004kB, shmem-rss:0kB, UID:10001 pgtables:1320kB oom_score_adj:986",
		First: restarts[first.Name][0], Last: restarts[first.Name][len(restarts[first.Name])-1], Count: int32(len(restarts[first.Name])), Component: "kernel-monitor", Host: first.Spec.NodeName})
	w.hpaNoise("shop", "cart", w.ago(35*time.Minute))
	for _, p := range a.Pods {
		rs := restarts[p.Name]
		mk := func(from, to time.Time) string {
			l := w.lines()
			w.startup(l, styleJSON, "checkout", "v2.4.0", from, "receipt renderer: caching rendered receipts for re-download (RECEIPT_CACHE_TTL=24h)", "connected to payments at http://payments.shop.svc.cluster.local")
			n := 0
			l.Every(from.Add(3*time.Second), to, 8*time.Second, func(t time.Time, i int) string {
				n += 40 + w.R.IntN(30)
				if i%7 == 6 {
					return msgLine(styleJSON, t, "INFO", "checkout", fmt.Sprintf("receipt cache size entries=%d bytes=%d", n, n*5200))
				}
				return reqLine(styleJSON, t, "checkout", "POST", w.pick("/v1/checkout", "/v1/checkout/confirm", "/v1/receipts"), 200, 60+w.R.ExpFloat64()*70, w.reqID())
			})
			if to.Before(w.Now) {
				tt := to.Add(-3 * time.Second)
				l.Add(tt, msgLine(styleJSON, tt, "WARN", "checkout", "runtime: heap 489MiB close to the container memory limit (512MiB); GC running continuously"))
			}
			return l.String()
		}
		st := starts[p.Name]
		last := len(rs) - 1
		if run := p.Status.ContainerStatuses[0].State.Running; run != nil {
			w.podLog(p, "", mk(st[last+1], w.Now))
			w.prevLog(p, mk(st[last], rs[last]))
		} else {
			w.podLog(p, "", mk(st[last], rs[last]))
			if last > 0 {
				w.prevLog(p, mk(st[last-1], rs[last-1]))
			}
		}
	}
	onset := deployAt.Add(9 * time.Minute)
	for _, p := range gw.Pods {
		l := w.lines()
		l.Every(w.ago(60*time.Minute), w.Now, 12*time.Second, func(t time.Time, i int) string {
			path, up := w.pick("/api/checkout", "/api/cart", "/api/cart", "/api/payments/methods"), "cart"
			code, flags := 200, "-"
			switch path {
			case "/api/checkout":
				up = "checkout"
				if t.After(onset) && w.R.Float64() < 0.45 {
					code, flags = w.pick2(502, 503), "UF,URX"
				}
			case "/api/payments/methods":
				up = "payments"
			}
			return fmt.Sprintf("[%s] \"POST %s HTTP/1.1\" %d %s 812 %d %d \"-\" \"Mozilla/5.0\" \"%s\" \"%s.shop.svc.cluster.local:80\"", t.UTC().Format("2006-01-02T15:04:05.000Z"),
				path, code, flags, 100+w.R.IntN(900), 20+w.R.IntN(120), w.reqID(), up)
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(cart, styleLogfmt, "v1.18.2", 50*time.Second, []string{"/v1/cart/{id}", "POST /v1/cart/{id}/items"})
	w.healthyLogs(pay, styleJSON, "v5.0.2", 60*time.Second, []string{"POST /v1/authorizations", "/v1/methods"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes.")
	for i := range 3 {
		o.Gauge(fmt.Sprintf(`namespace="shop",pod="%s-%s",container="checkout"`, oldRS.Name, w.suffix(5)), 0.03,
			between(w.ago(3*time.Hour), deployAt.Add(time.Duration(34*(i+1))*time.Second), constant(205*mi+float64(i)*7*mi)))
	}
	for _, p := range a.Pods {
		o.Gauge(fmt.Sprintf(`namespace="shop",pod=%q,container="checkout"`, p.Name), 0.02, func(t time.Time) float64 {
			return math.Min(sawtooth(restarts[p.Name], deployAt.Add(25*time.Second), 130*mi, 508*mi, 8*time.Minute)(t), 510*mi)
		})
	}
	o.Family("kube_pod_container_resource_limits", "gauge", "The number of requested limit resource by a container.")
	for _, p := range a.Pods {
		o.GaugeExact(fmt.Sprintf(`namespace="shop",pod=%q,container="checkout",resource="memory",unit="byte"`, p.Name), between(deployAt.Add(25*time.Second), w.Now.Add(time.Minute), constant(536870912)))
	}
	o.Family("kube_pod_container_status_restarts", "counter", "The number of container restarts per container.")
	for _, p := range a.Pods {
		o.CounterSteps(fmt.Sprintf(`namespace="shop",pod=%q,container="checkout"`, p.Name), 0, restarts[p.Name])
	}
	o.Family("envoy_cluster_upstream_rq", "counter", "Upstream requests by cluster and response code.")
	o.Counter(`namespace="shop",envoy_cluster_name="checkout",envoy_response_code="200"`, 4_022_871, step(onset, 9.5, 5.2, time.Minute))
	o.Counter(`namespace="shop",envoy_cluster_name="checkout",envoy_response_code="503"`, 310, step(onset, 0.01, 3.1, time.Minute))
	o.Counter(`namespace="shop",envoy_cluster_name="checkout",envoy_response_code="502"`, 122, step(onset, 0.005, 1.2, time.Minute))
	o.Counter(`namespace="shop",envoy_cluster_name="cart",envoy_response_code="200"`, 19_220_410, diurnal(31, 0.1))
	o.Counter(`namespace="shop",envoy_cluster_name="payments",envoy_response_code="200"`, 3_880_120, constant(6))
	o.Family("http_request_duration_seconds", "histogram", "Request latency.")
	o.Histogram(`namespace="shop",service="checkout"`, step(onset, 9.5, 5.2, time.Minute), step(onset, 0.11, 0.34, 3*time.Minute))
	w.goroutines(o, "cart", "payments")
	w.nodeCPU(o, 0.32)
	o.Save("shop")

	w.changes(
		chg(w.ago(6*24*time.Hour+4*time.Hour), "checkout", "deploy", "checkout v2.3.5: fix currency rounding on receipts", "v2.3.5", "ci"),
		chg(w.ago(2*24*time.Hour), "cart", "config", "cart: session TTL 30m -> 45m", "", "r.iyer"),
		chg(w.ago(20*time.Hour), "payments", "feature_flag", "payments: enable_3ds2_frictionless on for 20%", "", "h.meyer"),
		chg(deployAt, "checkout", "deploy", "checkout v2.4.0: downloadable receipts, cached in memory for 24h (PR #2291)", "v2.4.0", "ci"),
	)
	w.Files["runbooks/checkout.md"] = []byte(`# checkout service

Owner: payments-experience (#pe-oncall). Tier 1: checkout failures block revenue.

## Architecture

gateway (Envoy) -> checkout -> payments, cart. checkout runs 3 replicas in namespace shop,
512Mi memory limit, 384Mi request.

## Rolling back

` + "```" + `
kubectl -n shop rollout undo deployment/checkout
kubectl -n shop rollout status deployment/checkout
` + "```" + `

Roll back first when a deploy in the last hour lines up with the symptoms; investigate after.

## OOMKilled / CrashLoopBackOff

Symptoms: restarts climbing, lastState.terminated.reason OOMKilled (exit code 137), gateway
503 "no healthy upstream".

1. Check whether memory grows steadily after start (a leak or unbounded cache) or jumps at
   start (a bigger working set): ` + "`container_memory_working_set_bytes{namespace=\"shop\",container=\"checkout\"}`" + `.
2. If a recent deploy introduced it, roll back (above).
3. Raising the limit only buys time for a leak; an unbounded cache needs a size bound.
`)
	w.Files["runbooks/gateway-5xx.md"] = []byte(`# Gateway 5xx

The gateway returns 503 with flags UF/URX when an upstream has no healthy endpoints, 502 when
an upstream resets connections. Find the upstream in the access log (last quoted field) and
investigate that service; the gateway itself is rarely the cause.
`)
	w.Files["repos/checkout/README.md"] = []byte("# checkout\n\nCheckout API of the shop: carts to orders, payment authorization, receipts.\n")
	w.Files["repos/checkout/internal/receipts/cache.go"] = []byte(`package receipts

import (
	"sync"
	"time"
)

// Cache keeps rendered receipts so customers can download them again
// without re-rendering (added in v2.4.0).
//
// Entries expire after TTL but are only removed when read again: nothing
// bounds the number of entries, so memory grows with traffic until the
// next restart.
type Cache struct {
	mu      sync.Mutex
	TTL     time.Duration
	entries map[string]entry
}

type entry struct {
	pdf     []byte
	expires time.Time
}

// Put stores a rendered receipt.
func (c *Cache) Put(orderID string, pdf []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]entry{}
	}
	c.entries[orderID] = entry{pdf: pdf, expires: time.Now().Add(c.TTL)}
}

// Get returns a cached receipt that has not expired.
func (c *Cache) Get(orderID string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[orderID]
	if !ok {
		return nil, false
	}
	if time.Now().After(e.expires) {
		delete(c.entries, orderID)
		return nil, false
	}
	return e.pdf, true
}
`)
	w.Files["repos/checkout/cmd/checkout/main.go"] = []byte(`package main

import (
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/acme-shop/checkout/internal/receipts"
)

func main() {
	ttl, err := time.ParseDuration(os.Getenv("RECEIPT_CACHE_TTL"))
	if err != nil {
		ttl = 24 * time.Hour
	}
	cache := &receipts.Cache{TTL: ttl}
	mux := http.NewServeMux()
	registerRoutes(mux, cache)
	slog.Info("http server listening on :8080")
	if err := http.ListenAndServe(":8080", mux); err != nil {
		slog.Error("server stopped", "err", err)
		os.Exit(1)
	}
}
`)
	sc := &Scenario{Title: "checkout v2.4.0 memory regression: OOMKilled, CrashLoopBackOff, gateway 5xx", Request: ScenarioRequest{AgentName: "planner",
		Message: "Why is checkout failing?", Context: map[string]string{"service": "checkout", "namespace": "shop"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"oomkilled", "oom", "out of memory", "memory limit"}}, AffectedSystemsAll: []string{"checkout"},
			MinEvidence: 2, MinTimeline: 2, ToolsUsedAny: []string{"describe_pod", "list_pods", "get_events", "get_pod_logs"}}}
	return w, "Sample incident: checkout v2.4.0 caches receipts without bound; pods OOMKilled, gateway 5xx", sc
}

func (w *World) pick2(a, b int) int {
	if w.R.IntN(2) == 0 {
		return a
	}
	return b
}
