package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A mesh proxy's protection of a callee that fails the calls itself. Envoy
// (Istio's sidecars, Consul Connect, a standalone Envoy) keeps two guards
// per upstream cluster, set in Istio by the trafficPolicy of the callee's
// DestinationRule: connection-pool limits (circuit breakers: maxRequests,
// maxPendingRequests, maxConnections) and outlier detection (ejecting an
// endpoint after consecutive 5xx for baseEjectionTime, up to
// maxEjectionPercent of them). When a limit is below the callers' real
// concurrency the caller's own proxy refuses the overflow at once — 503
// with response flag UO, "upstream_reset_before_response_started{overflow}",
// "reset reason: overflow", the cluster's upstream_rq_pending_overflow
// growing — and the callee, idle, logs nothing. When outlier detection is
// set so tight that ordinary errors eject every endpoint (consecutive5xx 1,
// maxEjectionPercent 100, a ten-minute ejection), the proxy has no host
// left — 503 UH no_healthy_upstream, istioctl proxy-config endpoint showing
// OUTLIER CHECK FAILED on every endpoint, ejections_active above 0 — while
// the callee's pods run and answer. Either way the fault is the policy, not
// the callee nor the caller, and a deploy of either in the same hour is a
// coincidence.

// KindMeshCircuitBreak is a mesh proxy's circuit breaker or outlier
// detection failing calls to a callee that is itself healthy.
const KindMeshCircuitBreak Kind = "mesh_circuit_break"

var (
	// meshOverflowRE is a call a proxy failed because a connection-pool
	// limit overflowed, in its access log or as the caller's client saw it.
	meshOverflowRE = regexp.MustCompile(`(?i)\b50[23] UO\b|\{overflow\}|reset reason: overflow\b|\bupstream_reset_before_response_started\{overflow\}`)
	// meshNoHostRE is a call a proxy failed for want of a healthy host.
	meshNoHostRE = regexp.MustCompile(`(?i)\b503 UH\b|\bno_healthy_upstream\b`)
	// meshStatRE is a counter or gauge of Envoy's admin stats
	// ("cluster.outbound|8080||svc.ns.svc.cluster.local.upstream_rq_pending_overflow: 14422").
	meshStatRE = regexp.MustCompile(`^\s*cluster\.(\S+?)\.((?:circuit_breakers\.\w+\.)?\w*(?:overflow|ejections_active|ejections_enforced_total|ejections_enforced_consecutive_5xx|remaining_rq|rq_open|rq_pending_open)):\s*(\d+)`)
	// meshSettingRE is a connection-pool or outlier-detection setting as a
	// DestinationRule (YAML or JSON) or Envoy's cluster config prints it.
	meshSettingRE = regexp.MustCompile(`^\s*"?(http1MaxPendingRequests|http2MaxRequests|maxRequestsPerConnection|maxConnections|maxPendingRequests|maxRequests|maxRetries|consecutive5xxErrors|consecutiveGatewayErrors|consecutive_5xx|baseEjectionTime|base_ejection_time|maxEjectionPercent|max_ejection_percent|interval)"?\s*:\s*"?([\w.]+)"?`)
	// meshPolicyChangeRE is a change to a callee's traffic policy.
	meshPolicyChangeRE = regexp.MustCompile(`(?i)destination ?rule|outlier|eject|connection ?pool|circuit ?break|traffic ?policy|max(?:Pending)?Requests|consecutive ?5xx`)
)

var meshCircuitBreak = &mechanism{
	kind:   KindMeshCircuitBreak,
	class:  classCause,
	label:  "mesh proxies fail calls to a healthy callee (circuit breaker overflow or outlier ejection)",
	detect: detectMeshCircuitBreak,
	// Only a change to the callee's traffic policy makes its callers'
	// proxies refuse it; a deploy of the caller or the callee is a
	// coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && matchLine(meshPolicyChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		callers := orWord(h.fact("callers"), "its callers")
		policy := "the proxy's cluster settings"
		if h.fact("istio") != "" {
			policy = fmt.Sprintf("the trafficPolicy of %s's DestinationRule", h.Subject)
		}
		var d string
		if h.fact("mode") == "eject" {
			d = fmt.Sprintf("outlier detection in the sidecars of %s has ejected the endpoints of %s from load balancing (%s), so %s's proxies fail the calls themselves with 503 UH no_healthy_upstream though %s's pods run and answer",
				callers, h.Subject, policy, callers, h.Subject)
		} else {
			d = fmt.Sprintf("the connection-pool limits (circuit breaker) for %s overflow in the sidecars of %s (%s): the proxies refuse the calls beyond the limit at once with 503 UO (reset reason: overflow) and they never reach %s, which is not overloaded",
				h.Subject, callers, policy, h.Subject)
		}
		if s := h.fact("settings"); s != "" {
			d += fmt.Sprintf("; the policy sets %s", s)
		}
		if s := h.fact("proof"); s != "" {
			d += "; " + s
		}
		d += h.changeClause("it was set by", 180)
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		policy := "the callee's traffic policy"
		if h.fact("istio") != "" {
			policy = fmt.Sprintf("the DestinationRule of %s", h.Subject)
		}
		if h.fact("mode") == "eject" {
			r.high("Relax the outlier detection in %s (consecutive5xxErrors well above the service's normal error rate, a short baseEjectionTime, maxEjectionPercent below 100) or remove it; the endpoints come back when the ejections expire", policy)
			r.med("Check with istioctl proxy-config endpoint that %s's endpoints are HEALTHY with OUTLIER CHECK OK in the callers' sidecars", h.Subject)
		} else {
			r.high("Raise the connection-pool limits in %s (http2MaxRequests, http1MaxPendingRequests, maxConnections) above the callers' peak concurrency, or remove them", policy)
			r.med("Size such limits from the callers' peak concurrency (upstream_rq_active) and watch upstream_rq_pending_overflow in their sidecars")
		}
		r.low("Alert on 503 responses with response flags UO or UH reported by the source (istio_requests_total{reporter=\"source\"})")
	},
}

// meshBreak is what the evidence says of one callee.
type meshBreak struct {
	callee, namespace string
	mode              string // "overflow" or "eject"
	callers           []string
	first             time.Time
	line              string
	count             int
	istio             bool
	evidence          []string
	proofs            []string
	settings          []string
}

func detectMeshCircuitBreak(ev *Gathered, _ []Finding) []Finding {
	byCallee := map[string]*meshBreak{}
	var order []string
	for set, t := range incidentTemplates(ev) {
		mode, line := "overflow", templateLine(t, meshOverflowRE)
		if line == "" {
			mode, line = "eject", templateLine(t, meshNoHostRE)
		}
		if line == "" {
			continue
		}
		// The cluster, else the authority asked for (a standalone
		// Envoy logs no upstream host for a call it refused).
		r, ok := parseRequestLine(line)
		callee := orWord(r.Upstream, upstreamName(r.Host))
		if h, p, cut := strings.Cut(callee, ":"); cut && isDigits(p) {
			callee = h
		}
		if !ok || callee == "" {
			continue
		}
		if callee == set.Subject {
			continue
		}
		b := byCallee[callee+"/"+mode]
		if b == nil {
			b = &meshBreak{callee: callee, mode: mode}
			byCallee[callee+"/"+mode] = b
			order = append(order, callee+"/"+mode)
		}
		if !slices.Contains(b.callers, set.Subject) {
			b.callers = append(b.callers, set.Subject)
		}
		if b.namespace == "" {
			b.namespace = hostNamespace(line, callee)
		}
		at := t.FirstIncident
		if b.first.IsZero() || at.Before(b.first) {
			b.first = at
		}
		if b.line == "" {
			b.line = line
		}
		b.count += t.Incident
		b.istio = b.istio || strings.Contains(line, "outbound|") || strings.Contains(set.Source, "istio-proxy")
		b.evidence = append(b.evidence, fmt.Sprintf("%s's proxy failed %d calls to %s itself (%s): %s", set.Subject, t.Incident, callee, flagsMeaning(orWord(r.Flags, "UO")), quote(ReadableLine(line), 240)))
	}
	var out []Finding
	for _, key := range order {
		b := byCallee[key]
		meshBreakCommands(ev.Commands, b)
		meshBreakMetrics(ev.Metrics, b)
		change := meshBreakChange(ev, b.callee)
		// No host to send to is also a Service without endpoints: only
		// an ejection shown (endpoints failing the outlier check,
		// ejections active, a change setting outlier detection) makes it
		// this mechanism's.
		if b.mode == "eject" && len(b.proofs) == 0 && !strings.Contains(strings.ToLower(change), "outlier") {
			continue
		}
		f := Finding{Kind: KindMeshCircuitBreak, Subject: b.callee, Namespace: b.namespace, Object: "traffic policy of " + b.callee,
			Time: b.first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs, Evidence: append(b.evidence, b.proofs...)}
		f.Related = append(f.Related, b.callers...)
		f.setFact("mode", b.mode)
		f.setFact("callers", strings.Join(b.callers, ", "))
		f.setFact("line", b.line)
		if b.istio || slices.ContainsFunc(ev.Commands, func(c evidence.CommandOutput) bool { return strings.HasPrefix(c.Command, "istioctl") }) {
			f.setFact("istio", "yes")
		}
		if len(b.settings) > 0 {
			f.setFact("settings", strings.Join(b.settings, ", "))
		}
		if len(b.proofs) > 0 {
			f.setFact("proof", b.proofs[0])
		}
		if change != "" {
			f.setFact("change", change)
		}
		if b.mode == "eject" {
			f.Summary = fmt.Sprintf("outlier detection ejected every endpoint of %s in its callers' proxies (503 UH no_healthy_upstream)", b.callee)
		} else {
			f.Summary = fmt.Sprintf("connection-pool limits for %s overflow in its callers' proxies (503 UO)", b.callee)
		}
		out = append(out, f)
	}
	return out
}

// hostNamespace reads the namespace of a callee from the cluster name a
// proxy line gives ("pricing-service.shop.svc.cluster.local").
func hostNamespace(line, callee string) string {
	i := strings.Index(line, callee+".")
	if i < 0 {
		return ""
	}
	rest := line[i+len(callee)+1:]
	ns, _, _ := strings.Cut(rest, ".")
	if strings.HasPrefix(rest, ns+".svc") {
		return ns
	}
	return ""
}

// meshBreakCommands reads, from the commands handed over, what the
// callers' proxies and the callee's policy say of the callee: endpoints
// failing the outlier check (istioctl proxy-config endpoint), Envoy's
// stats of its cluster, and the limits a DestinationRule or the proxy's
// cluster config sets.
func meshBreakCommands(cmds []evidence.CommandOutput, b *meshBreak) {
	for _, c := range cmds {
		about := strings.Contains(c.Command, b.callee) || strings.Contains(strings.ToLower(c.Command), "destinationrule") || strings.Contains(strings.ToLower(c.Command), "proxy-config")
		outlierCol, failed, total := -1, 0, 0
		for _, l := range c.Lines {
			fs := strings.Fields(l)
			if i := strings.Index(l, "OUTLIER CHECK"); i >= 0 {
				outlierCol = len(strings.Fields(l[:i]))
				continue
			}
			if outlierCol >= 0 && len(fs) > outlierCol && strings.Contains(l, b.callee) {
				total++
				if fs[outlierCol] == "FAILED" {
					failed++
				}
				continue
			}
			if m := findSubmatch(meshStatRE, l); m != nil && strings.Contains(m[1], b.callee) {
				n, _ := strconv.Atoi(m[3])
				stat := m[2]
				if n > 0 && (b.mode == "overflow" && strings.HasSuffix(stat, "overflow") || b.mode == "eject" && strings.Contains(stat, "ejections")) {
					b.proofs = append(b.proofs, fmt.Sprintf("the caller's proxy counts %s %d for %s", stat, n, b.callee))
				}
				continue
			}
			if about {
				if m := findSubmatch(meshSettingRE, l); m != nil && meshSettingFits(m[1], b.mode) {
					s := m[1] + " " + m[2]
					if !slices.Contains(b.settings, s) {
						b.settings = append(b.settings, s)
					}
				}
			}
		}
		if failed > 0 && b.mode == "eject" {
			b.proofs = append([]string{fmt.Sprintf("istioctl proxy-config endpoint shows %d of %d endpoints of %s with OUTLIER CHECK FAILED", failed, total, b.callee)}, b.proofs...)
		}
	}
}

// meshSettingFits reports whether a setting bears on the mode of failure.
func meshSettingFits(name, mode string) bool {
	n := strings.ToLower(name)
	eject := strings.Contains(n, "consecutive") || strings.Contains(n, "eject") || n == "interval"
	if mode == "eject" {
		return eject
	}
	return !eject && n != "maxretries"
}

// meshBreakMetrics reads Envoy's cluster counters as metrics (the
// sidecars' envoy_cluster_* series): ejections active, overflows.
func meshBreakMetrics(sets []MetricSet, b *meshBreak) {
	for _, ms := range sets {
		name := strings.ToLower(ms.Name)
		if b.mode == "eject" && !strings.Contains(name, "ejections_active") || b.mode == "overflow" && !strings.Contains(name, "overflow") {
			continue
		}
		for _, s := range ms.Series {
			if !strings.Contains(s.Labels["cluster_name"], b.callee+".") || len(s.Points) == 0 {
				continue
			}
			if v := s.Points[len(s.Points)-1].V; v > 0 {
				b.proofs = append(b.proofs, fmt.Sprintf("%s for %s reads %.3g", ms.Name, b.callee, v))
				break
			}
		}
	}
}

// meshBreakChange is a change, in the window or the month before, that set
// the callee's traffic policy.
func meshBreakChange(ev *Gathered, callee string) string {
	for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
		for i := len(cs) - 1; i >= 0; i-- {
			c := cs[i]
			if c.Kind == "deploy" || !matchLine(meshPolicyChangeRE, c.Description) {
				continue
			}
			if c.Service == callee || strings.Contains(c.Description, callee) {
				return fmt.Sprintf("the change of %s at %s: %s", c.Service, ts(c.Timestamp), quote(c.Description, 180))
			}
		}
	}
	return ""
}
