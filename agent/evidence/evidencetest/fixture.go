package evidencetest

import (
	"path/filepath"
	"runtime"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// ShopBundleDir is the test bundle agent/evidence/bundle/testdata/k8sprom: a
// namespace shop whose checkout pod was OOMKilled after the deploy of
// revision 3, a healthy cart pod, a payments service without pods, two
// nodes, and prometheus/metrics.om (2026-03-14 08:40 to 10:40, 60 s steps).
func ShopBundleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "bundle", "testdata", "k8sprom")
}

// ShopCapturedAt is the test bundle's captured_at.
var ShopCapturedAt = time.Date(2026, 3, 14, 10, 42, 0, 0, time.UTC)

// ShopKubeWant is what the test bundle's Kubernetes part holds.
func ShopKubeWant() KubeWant {
	const checkout, cart = "checkout-7d9f8b6c5-x2k4p", "cart-5c6d7f8b9-q8w7e"
	q := func(pod, container string, previous bool) evidence.PodLogQuery {
		return evidence.PodLogQuery{Namespace: "shop", Pod: pod, Container: container, Previous: previous}
	}
	windowed := q(cart, "", false)
	windowed.Since = time.Date(2026, 3, 14, 10, 35, 0, 0, time.UTC)
	windowed.Until = time.Date(2026, 3, 14, 10, 39, 59, 0, time.UTC)
	patterned := q(checkout, "checkout", true)
	patterned.Pattern = `OutOfMemory|GC`
	patterned.Limit = 2
	return KubeWant{
		Namespaces:   []string{"default", "shop"},
		Namespace:    "shop",
		Pods:         []string{cart, checkout},
		Selector:     "app=checkout,pod-template-hash",
		SelectorPods: []string{checkout},
		AllPods:      2,
		Deployments:  []string{"cart", "checkout"},
		ReplicaSets:  []string{"cart-5c6d7f8b9", "checkout-58c7b9d6f", "checkout-6f8d9c7b4", "checkout-7d9f8b6c5"},
		Services:     []string{"cart", "checkout", "payments"},
		Nodes:        []string{"node-a", "node-b"},
		Events: []string{
			"Normal/Pulled/" + cart + "/1",
			"Normal/ScalingReplicaSet/checkout/1",
			"Warning/OOMKilling/" + checkout + "/4",
			"Warning/Unhealthy/" + checkout + "/1",
			"Warning/BackOff/" + checkout + "/14",
		},
		Endpoints: map[string][2]int{"cart": {1, 0}, "checkout": {0, 1}, "payments": {0, 0}},
		Logs: []LogWant{
			{Query: q(checkout, "", false), Matched: 4, Texts: []string{
				"2026-03-14T10:38:53.120Z INFO  starting checkout service version=2.14.0 heap_max=240m",
				"2026-03-14T10:38:54.002Z INFO  connected to postgres host=orders-db.shop.svc:5432 pool=20",
				"2026-03-14T10:38:54.311Z INFO  warming price cache entries=250000",
				"2026-03-14T10:39:40.870Z WARN  price cache size 231MB exceeds soft limit 128MB",
			}},
			{Query: patterned, Matched: 3, Texts: []string{
				"java.lang.OutOfMemoryError: Java heap space",
				"2026-03-14T10:38:49.877Z WARN  GC overhead limit approaching: 97% of time in GC",
			}},
			{Query: windowed, Matched: 3, Texts: []string{
				"2026-03-14 10:35:02 INFO cart: GET /cart/9120 200 9ms",
				"2026-03-14 10:39:10 WARN cart: upstream checkout unavailable, retrying in 2s",
				"[2026-03-14 10:39:10.512][1][warning][upstream] [source/common/upstream/health_checker_impl.cc:332] health check failed for checkout.shop.svc:80",
			}, Sources: []string{cart + "/cart", cart + "/cart", cart + "/envoy"}},
			{Query: q(cart, "envoy", false), Matched: 2, Texts: []string{
				"[2026-03-14 10:39:10.512][1][warning][upstream] [source/common/upstream/health_checker_impl.cc:332] health check failed for checkout.shop.svc:80",
				"I0314 10:40:00.000000       1 main.go:42] envoy config reloaded",
			}},
			{Query: q(cart, "nginx", false), Code: evidence.CodeNotFound},
			{Query: q("no-such-pod", "", false), Code: evidence.CodeNotFound},
			{Query: q(cart, "cart", true), Code: evidence.CodeNotFound},
		},
	}
}

// ShopLogQueries are log queries both backends must answer identically.
func ShopLogQueries() []evidence.PodLogQuery {
	var out []evidence.PodLogQuery
	for _, l := range ShopKubeWant().Logs {
		if l.Code == "" {
			out = append(out, l.Query)
		}
	}
	return out
}
