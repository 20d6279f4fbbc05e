package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A service-mesh proxy that rejects the configuration its control plane
// pushes. Envoy (Istio's sidecars and gateways, Consul Connect, Gloo,
// Contour, Envoy Gateway) receives its listeners, routes and clusters
// over xDS; when an update does not load (a filter its build does not
// have, a bad regex, an invalid field an EnvoyFilter patched in), it
// answers with a NACK and keeps the last configuration it accepted. From
// then on every later change for that proxy, by anyone (a canary's
// traffic weights, a new route, a retry policy), is silently not applied:
// the objects say one thing, the proxies do another. Envoy logs "gRPC
// config for type.googleapis.com/envoy.config.route.v3.RouteConfiguration
// rejected: ...", istiod logs "ADS:RDS: ACK ERROR <proxy> ...", istioctl
// proxy-status shows the proxy STALE on that type, and the control
// plane's counter pilot_total_xds_rejects grows. The culprit is the
// change the first rejection followed (an EnvoyFilter, a Lua or Wasm
// patch), not the change whose effect is missing.

// KindXDSRejected is a mesh proxy rejecting the configuration pushed to
// it.
const KindXDSRejected Kind = "xds_rejected"

var (
	// xdsRejectedRE is a rejection in the proxy's own log (Envoy's gRPC
	// or delta subscription) or in its control plane's (istiod's ACK
	// ERROR, a NACK).
	// (A queue's basic.nack of a message is no rejection of
	// configuration: NACK counts only in capitals, next to xDS words.)
	xdsRejectedRE = regexp.MustCompile(`(?i:(?:gRPC|delta) config for \S+ rejected|ADS:\w+:? ACK ERROR)|\b(?:xDS|XDS)\b.*\bNACK(?:ED|ed)?\b|\bNACK(?:ED|ed)?\b.*\b(?:LDS|RDS|CDS|EDS|SDS|ECDS)\b`)
	// envoyRejectRE reads Envoy's line: the resource type and the reason.
	envoyRejectRE = regexp.MustCompile(`(?i)config for (?:type\.googleapis\.com/)?([\w.]+) rejected: (.+)`)
	// istiodAckErrorRE reads istiod's line: the xDS type, the proxy
	// ("checkout-7b9d6c5f8-4kq2z.shop-71", or the older
	// "sidecar~10.1.2.3~pod.ns~ns.svc.cluster.local-12") and the reason.
	istiodAckErrorRE = regexp.MustCompile(`ADS:(\w+):? ACK ERROR (\S+) (?:\w+:)?(.+)`)
	// xdsRouteRE is the route a rejection names ("via route
	// 'payments-api.payments.svc.cluster.local:80'").
	xdsRouteRE = regexp.MustCompile(`via route '([a-z0-9][a-z0-9.-]*?)(?:\.svc\.cluster\.local)?(?::\d+)?'`)
	// xdsChangeRE is a change to the mesh's configuration of a proxy.
	xdsChangeRE = regexp.MustCompile(`(?i)envoyfilter|envoy filter|\blua\b|\bwasm\b|sidecar|virtualservice|destinationrule|\bmesh\b|\bistio\b|\bxds\b|listener|http filter|route`)
)

var xdsRejected = &mechanism{
	kind:       KindXDSRejected,
	class:      classCause,
	label:      "mesh proxies reject their pushed configuration (xDS NACK), old routes still served",
	lines:      xdsRejectedRE,
	lineWeight: 0.85,
	detect:     detectXDSRejected,
	// Only a change to the mesh's configuration makes a proxy reject
	// it; the deploy whose traffic never arrives is a victim.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && c.Time.Before(h.Onset.Add(2*time.Minute)) && matchLine(xdsChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		typ := orWord(h.fact("xds_type"), "route")
		d := fmt.Sprintf("the Envoy proxies of %s reject (NACK) every %s configuration their control plane pushes since %s (%s), so they keep serving the last configuration they accepted",
			h.Subject, typ, hm(h.Onset), quote(orWord(h.fact("why"), "rejected"), 200))
		if s := h.fact("stale"); s != "" {
			d += fmt.Sprintf(": %s STALE in istioctl proxy-status for %s", strings.ToUpper(orWord(h.fact("stale_type"), "RDS")), s)
		}
		d += "; every change made since for the traffic they send (traffic weights, new routes, a canary's share) is not applied"
		if r := h.fact("route"); r != "" {
			d += fmt.Sprintf(" — the rejected update carries the route to %s", r)
		}
		d += h.triggerClause("the rejections began with", 160)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if t := h.Trigger; t != nil {
			r.high("Fix or remove what the change of %s added (%s) so that %s's proxies accept the configuration again; the pending route changes then arrive", t.Subject, truncate(t.fact("description"), 100), h.Subject)
		} else {
			r.high("Find the patch the proxies of %s reject (the reason in their log: a filter their build lacks, an invalid field) and fix or remove it", h.Subject)
		}
		r.med("Check with istioctl proxy-status that %s's proxies are SYNCED again, and run istioctl analyze on EnvoyFilters before they ship", h.Subject)
		r.low("Alert on pilot_total_xds_rejects (envoy_*_update_rejected) growing and on proxies STALE for more than a few minutes")
	},
}

// xdsProxy is what the evidence says of one rejecting proxy workload.
type xdsProxy struct {
	subject, namespace, typ, why, route string
	first                               time.Time
	evidence                            []string
	stale, staleType                    string
}

func detectXDSRejected(ev *Gathered, _ []Finding) []Finding {
	byWL := map[string]*xdsProxy{}
	var order []string
	get := func(wl, ns string) *xdsProxy {
		if p := byWL[wl]; p != nil {
			return p
		}
		p := &xdsProxy{subject: wl, namespace: ns}
		byWL[wl] = p
		order = append(order, wl)
		return p
	}
	for set, t := range incidentTemplates(ev) {
		line := templateLine(t, xdsRejectedRE)
		if line == "" {
			continue
		}
		// Since the first rejection seen, baseline included: a proxy
		// that rejects keeps rejecting every push.
		at := earliest(t.FirstSeen, t.FirstIncident)
		var p *xdsProxy
		var typ, why string
		if m := findSubmatch(istiodAckErrorRE, line); m != nil {
			// The control plane names the proxy that refused.
			pod, ns := xdsProxyName(m[2])
			if pod == "" {
				continue
			}
			p = get(workloadOfName(pod), ns)
			typ, why = xdsTypeWord(m[1]), strings.TrimSpace(m[3])
			p.evidence = append(p.evidence, fmt.Sprintf("%s logs %d %s rejections by %s's proxies from %s: %s", set.Subject, t.Incident, strings.ToUpper(m[1]), p.subject, hm(at), quote(ReadableLine(line), 240)))
		} else {
			p = get(set.Subject, set.Namespace)
			if m := findSubmatch(envoyRejectRE, line); m != nil {
				typ, why = xdsTypeWord(m[1]), strings.TrimSpace(m[2])
			}
			p.evidence = append(p.evidence, fmt.Sprintf("%s's proxy logs %d configuration rejections from %s: %s", set.Subject, t.Incident, hm(at), quote(ReadableLine(line), 240)))
		}
		if p.typ == "" {
			p.typ = typ
		}
		if p.why == "" {
			p.why = why
		}
		if m := findSubmatch(xdsRouteRE, line); m != nil && p.route == "" {
			p.route = m[1]
		}
		if p.first.IsZero() || at.Before(p.first) {
			p.first = at
		}
	}
	if len(order) == 0 {
		return nil
	}
	xdsStale(ev, byWL)
	var out []Finding
	for _, wl := range order {
		p := byWL[wl]
		f := Finding{Kind: KindXDSRejected, Subject: p.subject, Namespace: p.namespace, Object: "proxies of " + p.subject,
			Time: p.first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs, Evidence: p.evidence}
		f.setFact("xds_type", p.typ)
		if p.why != "" {
			f.setFact("why", truncate(p.why, 240))
		}
		if p.route != "" {
			f.setFact("route", p.route)
			// The routed Service, and the service asked about when it is
			// a version of it (payments-api-v2 behind payments-api).
			svc, _, _ := strings.Cut(p.route, ".")
			f.Related = append(f.Related, svc)
			if s := ev.Scope.Service; s != "" && s != svc && strings.HasPrefix(s, svc+"-") {
				f.Related = append(f.Related, s)
			}
		}
		if p.stale != "" {
			f.setFact("stale", p.stale)
			f.setFact("stale_type", p.staleType)
		}
		f.Summary = fmt.Sprintf("proxies of %s reject their %s configuration (NACK): %s", p.subject, orWord(p.typ, "pushed"), truncate(p.why, 120))
		out = append(out, f)
	}
	return out
}

// xdsProxyName reads a proxy's pod and namespace from the control plane's
// name for it.
func xdsProxyName(s string) (pod, ns string) {
	if parts := strings.Split(s, "~"); len(parts) == 4 {
		s = parts[2] // sidecar~IP~pod.ns~ns.svc.cluster.local-N
	}
	pod, rest, ok := strings.Cut(s, ".")
	if !ok {
		return "", ""
	}
	ns = rest
	if i := strings.LastIndexByte(ns, '-'); i > 0 && isDigits(ns[i+1:]) {
		ns = ns[:i]
	}
	return pod, ns
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// xdsTypeWord names an xDS type in words.
func xdsTypeWord(t string) string {
	t = strings.ToLower(t)
	switch {
	case strings.HasSuffix(t, "routeconfiguration"), t == "rds", strings.HasSuffix(t, "virtualhost"), t == "vhds":
		return "route"
	case strings.HasSuffix(t, "listener"), t == "lds":
		return "listener"
	case strings.HasSuffix(t, "clusterloadassignment"), t == "eds":
		return "endpoint"
	case strings.HasSuffix(t, "cluster"), t == "cds":
		return "cluster"
	case strings.HasSuffix(t, "secret"), t == "sds":
		return "secret"
	case strings.HasSuffix(t, "typedextensionconfig"), t == "ecds":
		return "extension"
	}
	return ""
}

// xdsStale reads istioctl proxy-status tables in the transcripts: the
// proxies of each workload that are STALE on a type.
func xdsStale(ev *Gathered, byWL map[string]*xdsProxy) {
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "proxy-status") && !strings.Contains(c.Command, "istioctl ps") {
			continue
		}
		var header []string
		for _, l := range c.Lines {
			fs := strings.Fields(l)
			if len(fs) > 2 && fs[0] == "NAME" {
				header = fs
				continue
			}
			if header == nil || len(fs) < 2 {
				continue
			}
			pod, _ := xdsProxyName(fs[0])
			p := byWL[workloadOfName(pod)]
			if p == nil {
				continue
			}
			for i := 1; i < len(fs) && i < len(header); i++ {
				if fs[i] == "STALE" {
					if !strings.Contains(p.stale, pod) {
						p.stale = strings.TrimPrefix(p.stale+", "+pod, ", ")
						p.evidence = append(p.evidence, fmt.Sprintf("istioctl proxy-status: %s %s STALE", fs[0], header[i]))
					}
					p.staleType = header[i]
				}
			}
		}
	}
}
