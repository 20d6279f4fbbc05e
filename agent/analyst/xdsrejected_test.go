package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Mesh proxies rejecting their pushed configuration, as Envoy logs it
// (Istio's sidecars, a standalone Envoy under Contour or Gloo), as istiod
// logs it (the current and the older proxy names) and as istioctl
// proxy-status shows it; accepted pushes are not rejections.
func TestDetectXDSRejected(t *testing.T) {
	envoy := `2026-11-25T11:20:31.601964Z	warning	envoy config external/envoy/source/extensions/config_subscription/grpc/grpc_subscription_impl.cc:138	gRPC config for type.googleapis.com/envoy.config.route.v3.RouteConfiguration rejected: Didn't find a registered implementation for 'envoy.filters.http.lua' with type URL: 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua' (via route 'payments-api.payments.svc.cluster.local:80')`
	istiod := `2026-11-25T11:21:39.638893Z	warn	ads	ADS:RDS: ACK ERROR checkout-7b9d6c5f8-4kq2z.shop-71 Internal:Error adding/updating route config(s): Didn't find a registered implementation for 'envoy.filters.http.lua' with type URL: 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua' (via route 'payments-api.payments.svc.cluster.local:80')`
	istiodOld := `2021-03-02T10:00:00.000000Z	warn	ads	ADS:LDS: ACK ERROR sidecar~10.8.1.12~ratings-v1-6c7f9d8b5-x2k9p.bookinfo~bookinfo.svc.cluster.local-12 Internal:Error adding/updating listener(s) virtualInbound: Invalid path: /ratings[`
	contour := `[2026-11-25 11:20:31.601][1][warning][config] [source/common/config/grpc_subscription_impl.cc:107] gRPC config for type.googleapis.com/envoy.config.listener.v3.Listener rejected: Error adding/updating listener(s) ingress_https: Invalid regex '^/api/(v1'`
	amqpNack := `2026-11-25T11:21:39Z WARN consumer: basic.nack received for delivery tag 42 from cluster node rabbit@mq-1, requeue route orders`
	consulNack := `2026-11-25T11:21:39.100Z [ERROR] agent.envoy: xDS NACK received from proxy: proxy=web-sidecar-proxy type=RDS error="Invalid route config: duplicate virtual host"`
	accepted := `2026-11-25T11:21:39.638893Z	info	ads	RDS: PUSH request for node:checkout-7b9d6c5f8-4kq2z.shop resources:42 size:31.2kB`
	ps := evidence.CommandOutput{Command: "istioctl proxy-status", Lines: []string{
		"NAME                                  CLUSTER      CDS      LDS      EDS      RDS      ECDS       ISTIOD                VERSION",
		"checkout-7b9d6c5f8-4kq2z.shop         Kubernetes   SYNCED   SYNCED   SYNCED   STALE    NOT SENT   istiod-6d8b9f7c4-q2   1.20.3",
		"payments-api-v2-7f9b8d6c4-h2txn.payments   Kubernetes   SYNCED   SYNCED   SYNCED   SYNCED   NOT SENT   istiod-6d8b9f7c4-q2   1.20.3",
	}}
	cases := []struct {
		name     string
		sets     []LogSet
		cmds     []evidence.CommandOutput
		subject  string // "" for none
		typ, why string
		stale    string
		related  string
	}{
		{"Istio: sidecar and istiod, proxy-status STALE", []LogSet{minedSet("checkout", false, 0, envoy, envoy), minedSet("istiod", false, time.Minute, istiod, istiod)}, []evidence.CommandOutput{ps},
			"checkout", "route", "envoy.filters.http.lua", "checkout-7b9d6c5f8-4kq2z", "payments-api-v2"},
		{"istiod only, older proxy names", []LogSet{minedSet("istiod", false, 0, istiodOld, istiodOld)}, nil,
			"ratings-v1", "listener", "Invalid path", "", ""},
		{"a standalone Envoy's listener", []LogSet{minedSet("contour-envoy", false, 0, contour, contour)}, nil,
			"contour-envoy", "listener", "Invalid regex", "", ""},
		{"Consul's agent reports a proxy's NACK", []LogSet{minedSet("web", false, 0, consulNack, consulNack)}, nil,
			"web", "", "", "", ""},
		{"a message nacked on a queue is no configuration", []LogSet{minedSet("orders-consumer", false, 0, amqpNack, amqpNack)}, nil, "", "", "", "", ""},
		{"pushes accepted", []LogSet{minedSet("istiod", false, 0, accepted, accepted)}, nil, "", "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Window: win, Scope: Scope{Service: "payments-api-v2"}}
			f := onlyFinding(t, detectXDSRejected(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("xds_type") != c.typ || !strings.Contains(f.fact("why"), c.why) || !strings.Contains(f.fact("stale"), c.stale) {
				t.Errorf("type %q why %q stale %q", f.fact("xds_type"), f.fact("why"), f.fact("stale"))
			}
			if c.related != "" && !slices.Contains(f.Related, c.related) {
				t.Errorf("related %v, want %s", f.Related, c.related)
			}
			h := &Hypothesis{Kind: KindXDSRejected, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "reject (NACK)", "keep serving the last configuration", c.why)
		})
	}
	// Only a change to the mesh's configuration triggers it.
	h := &Hypothesis{Kind: KindXDSRejected, Subject: "checkout", Onset: win.Start}
	filter := &Finding{Kind: KindConfigChange, Time: win.Start.Add(-time.Minute)}
	filter.setFact("description", "EnvoyFilter checkout-lua-headers: add x-checkout-region header")
	deploy := &Finding{Kind: KindDeploy, Time: win.Start.Add(-time.Minute)}
	deploy.setFact("description", "payments-api 9.0.0 as v2 Deployment (canary)")
	if !xdsRejected.fitsChange(h, filter) || xdsRejected.fitsChange(h, deploy) {
		t.Error("an EnvoyFilter must fit, a deploy must not")
	}
}
