package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// A NAT gateway out of source ports. A managed NAT (AWS NAT gateway, GCP
// Cloud NAT, Azure NAT gateway or load balancer SNAT) gives each
// connection from the private network to one destination address and
// port a source port of its own, about 55,000 of them per destination
// and public address, and holds a closed connection's port a while. A
// client that opens a new connection per request (keep-alive off, a new
// HTTP client per call) to the same partner endpoint uses them up; the
// gateway then drops new connections (AWS: ErrorPortAllocation; GCP:
// nat_allocation_failed, packets dropped OUT_OF_RESOURCES; Azure: failed
// SNAT connections) and the callers see connects time out to a partner
// that is healthy. The gateway's exhaustion is the root; what churns
// connections through it is the trigger.

// KindNATPorts is a NAT gateway out of source ports.
const KindNATPorts Kind = "nat_ports"

var natPorts = &mechanism{
	kind:   KindNATPorts,
	class:  classCause,
	label:  "NAT gateway source ports exhausted",
	detect: detectNATPorts,
	related: func(h *Hypothesis, f *Finding) bool {
		return fromCaller(h, f) || natVictim(f) && slices.Contains(strings.Split(h.fact("destinations"), ", "), f.Subject)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return matchLine(keepAliveChangeRE, t) || matchLine(connChurnChangeRE, t)
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the NAT gateway %s is out of source ports: %s. A NAT gateway gives each connection to one destination address and port a source port of its own (about 55,000) and holds a closed one's port a while, so clients that open a new connection per request exhaust them and the gateway drops new connections (port allocation errors)",
			h.Subject, h.fact("metric_word"))
		if c := h.fact("callers"); c != "" {
			d += fmt.Sprintf("; its callers' connects time out: %s", c)
			d += h.wrapped(" (to ", "destinations", ", which are not at fault)")
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if t := h.Trigger; t != nil {
			r.high("Reuse connections again: revert or fix %s (%s) — keep-alive on, one shared HTTP client with a bounded pool per destination", orWord(t.fact("revision"), t.Subject), truncate(t.fact("description"), 120))
		} else {
			r.high("Make the clients behind %s reuse connections (keep-alive on, one shared HTTP client with a bounded pool) instead of opening one per request", h.Subject)
		}
		r.med("Spread the load over more source ports: add secondary public addresses to %s (or more NAT gateways, Cloud NAT minimum ports per VM, Azure NAT outbound IPs), and bound the clients' concurrency", h.Subject)
		r.low("Alert on the NAT gateway's port allocation errors (ErrorPortAllocation, nat_allocation_failed, failed SNAT connections) above zero")
	},
}

var (
	// natPortMetricRE is a NAT gateway's port allocation failures.
	natPortMetricRE = regexp.MustCompile(`(?i)ErrorPortAllocation|nat_allocation_failed|snat.*fail|fail.*snat|dropped_sent_packets|snat_?connection_?count`)
	// snatCountRE is Azure's SNAT connection count (NAT gateway and load
	// balancer), by connection state.
	snatCountRE = regexp.MustCompile(`(?i)snat_?connection_?count`)
	// natConnectFailRE is a client's connect that timed out or was
	// refused, in the words of common HTTP clients.
	natConnectFailRE = regexp.MustCompile(`(?i)i/o timeout|connect(?:ion)? timed out|ConnectTimeout|connect timeout|timed out connecting|connection refused|ECONNREFUSED|ETIMEDOUT`)
	// natIDLabels are the labels that name the gateway of a series.
	natIDLabels = []string{"NatGatewayId", "nat_gateway_name", "gateway_name", "router_id", "resource_name", "resourceName", "nat_gateway", "LoadBalancerName"}
)

// natVictim reports whether a finding shows a connection to outside that
// failed: a timeout or refusal to a host outside the cluster.
func natVictim(f *Finding) bool {
	switch f.Kind {
	case KindTimeout, KindConnRefused, KindConnReset:
	default:
		return false
	}
	return f.fact("caller") != "" && f.Subject != f.fact("caller") && externalHost("https://"+f.Subject) != ""
}

// detectNATPorts finds NAT gateways whose port allocation failures rose
// from none, with the callers whose outgoing connects fail from then on.
func detectNATPorts(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, ms := range ev.Metrics {
		if !matchLine(natPortMetricRE, ms.Name) {
			continue
		}
		name := ms.Name[strings.LastIndex(ms.Name, "/")+1:]
		for _, s := range ms.Series {
			if strings.Contains(strings.ToLower(name), "dropped") && s.Labels["reason"] != "OUT_OF_RESOURCES" {
				continue
			}
			// Azure's SNAT connection count is split by its state: only
			// the failed ones are the gateway out of ports.
			if matchLine(snatCountRE, name) && !strings.EqualFold(orWord(s.Labels["ConnectionState"], orWord(s.Labels["connectionstate"], s.Labels["connection_state"])), "failed") {
				continue
			}
			id := ""
			for _, k := range natIDLabels {
				if id = s.Labels[k]; id != "" {
					break
				}
			}
			if id == "" || seen[id] || len(s.Points) == 0 {
				continue
			}
			pts := slices.Clone(s.Points)
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			onset, peak, zeros := -1, 0.0, 0
			for i, p := range pts {
				if p.V <= 0 && onset < 0 {
					zeros++
				}
				if p.V > 0 && onset < 0 {
					onset = i
				}
				peak = max(peak, p.V)
			}
			// Failures that were there all along are the gateway's normal;
			// failures from none are an exhaustion that began.
			// (A failure flag, GCP's nat_allocation_failed, is 0 or 1.)
			least := 10.0
			if strings.Contains(strings.ToLower(name), "allocation_failed") {
				least = 1
			}
			if onset < 0 || zeros < 3 || peak < least {
				continue
			}
			seen[id] = true
			f := Finding{Kind: KindNATPorts, Subject: id, Object: "NAT gateway " + id, Source: ms.Origin, Time: pts[onset].T, Severity: SevCritical, Weight: 0.95}
			f.setFact("metric_word", fmt.Sprintf("%s rose from 0 to %s per interval from %s", name, compactCount(peak), hm(pts[onset].T)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s of NAT gateway %s: 0 until %s, then up to %s per interval (port allocation failures)", ms.Name, id, ts(pts[onset].T), compactCount(peak)))
			var callers, dests []string
			for i := range found {
				v := &found[i]
				if !natVictim(v) || v.Time.Before(pts[onset].T.Add(-5*time.Minute)) {
					continue
				}
				if c := v.fact("caller"); !slices.Contains(callers, c) {
					callers = append(callers, c)
				}
				if !slices.Contains(dests, v.Subject) {
					dests = append(dests, v.Subject)
				}
				if len(f.Evidence) < 4 {
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", v.Summary, quote(ReadableLine(v.fact("line")), 180)))
				}
			}
			// A caller whose own failed connects to the same partner were
			// merged into another caller's finding (one finding per
			// destination) is a caller too: the batch job bursting through
			// the gateway times out as well as the service that reports.
			for i := range ev.Logs {
				set := &ev.Logs[i]
				if set.Subject == "" || slices.Contains(callers, set.Subject) || slices.Contains(dests, set.Subject) {
					continue
				}
				if callsAndFailsConnects(set, dests, pts[onset].T.Add(-5*time.Minute)) {
					callers = append(callers, set.Subject)
				}
			}
			f.setFact("callers", strings.Join(callers, ", "))
			f.setFact("destinations", strings.Join(dests, ", "))
			f.setFact("not_at_fault", strings.Join(dests, ", "))
			f.setFact("affected", strings.Join(callers, ","))
			f.Related = append(f.Related, callers...)
			f.Summary = fmt.Sprintf("NAT gateway %s out of source ports: %s", id, f.fact("metric_word"))
			out = append(out, f)
		}
	}
	return out
}

// callsAndFailsConnects reports whether a log names one of the partner
// hosts and fails connects from since on: in one line ("connect timed
// out to api.partner.example") or, as a batch job logs, the endpoint in
// its start-up line and its connect failures counted in progress lines
// that do not repeat it. Host names are compared without case, as DNS
// compares them.
func callsAndFailsConnects(set *LogSet, dests []string, since time.Time) bool {
	names := func(line string) bool {
		l := strings.ToLower(line)
		return slices.ContainsFunc(dests, func(d string) bool { return strings.Contains(l, strings.ToLower(d)) })
	}
	named, failed := false, false
	for _, t := range set.Templates {
		fails := t.Incident > 0 && t.LastSeen.After(since) && matchLine(natConnectFailRE, t.Example)
		if fails && names(t.Example) {
			return true
		}
		named = named || names(t.Example)
		failed = failed || fails
	}
	return named && failed
}
