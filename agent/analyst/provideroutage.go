package analyst

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A third-party provider failing: the calls of a service to an outside
// host (a payment provider's API, an SMS or mail API) begin to fail with
// the provider's own server errors (503 INTERNAL_SERVICE_ERROR, 502) and
// time out, while the same service's calls to its other outside providers
// keep succeeding. The provider answered with an error, so the network
// path and the caller's credentials work; the caller's other providers
// answering shows its pods, egress and code path are fine. A deploy of a
// caller upstream that went out just before is a coincidence: it did not
// make the provider answer 503. Nothing on our side triggers it; the
// provider's status page is where its incident is. Read from a client
// request counter labelled by the outside host and status
// (http_client_requests_total{host, status}, OpenTelemetry's
// http.client.request.duration_count{server.address,
// http.response.status_code}), with a line of the caller's log that
// quotes the provider's answer.

// KindProviderOutage is an outside provider answering a service's calls
// with server errors and timeouts while its other providers answer.
const KindProviderOutage Kind = "provider_outage"

var providerOutage = &mechanism{
	kind:   KindProviderOutage,
	class:  classCause,
	label:  "third-party provider failing",
	detect: detectProviderOutage,
	// The caller's errors, its callers' errors and the provider's own
	// timeouts are what the failing provider produces.
	related: func(h *Hypothesis, f *Finding) bool {
		p := h.fact("provider")
		return strings.EqualFold(f.Subject, h.Subject) || strings.EqualFold(f.Subject, p) || strings.EqualFold(f.fact("callee"), p) ||
			strings.EqualFold(f.fact("callee"), h.Subject) || slices.ContainsFunc(f.Related, func(r string) bool { return p != "" && strings.EqualFold(r, p) })
	},
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the third-party provider %s is failing (a provider outage): %s of %s's calls to it fail since %s (%s), where %s failed before; its own answers are server errors (%s)",
			h.fact("provider"), h.fact("share"), h.Subject, h.fact("onset"), h.fact("statuses"), h.fact("baseline"), h.fact("answers"))
		d += h.quoteClause(" — ", "line", 220)
		d += fmt.Sprintf(". %s's calls to %s keep succeeding (%s), so %s's pods, network path and code are working: the errors are the provider's, not a deploy of ours", h.Subject, h.fact("healthy"), h.fact("healthy_share"), h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Check %s's status page and open a ticket with the provider with the failing request ids; do not roll back our services for this", h.fact("provider"))
		r.high("Route the affected payments or messages to the alternative (%s) where the product allows it, or show the method as temporarily unavailable", h.fact("healthy"))
		r.med("Keep %s's retries of %s bounded and idempotent (no duplicate captures or sends when the provider recovers)", h.Subject, h.fact("provider"))
		r.low("Alert on each provider's error share separately, and subscribe to the providers' status feeds")
	},
}

// outsideHostLabels are the labels by which a client metric names the host
// its calls went to.
var outsideHostLabels = append([]string{"host", "server", "target", "destination", "destination_service", "destination_service_name", "destination_host", "peer", "upstream", "domain"}, calleeLabels...)

// outsideHost names the outside host a client series measures ("" when it
// names none, or a host of the cluster or the private network).
func outsideHost(name string, l evidence.Labels) string {
	n := strings.ToLower(name)
	client := strings.Contains(n, "client") || strings.Contains(n, "outbound") || strings.Contains(n, "upstream") || strings.Contains(n, "egress")
	for _, k := range outsideHostLabels {
		v := strings.ToLower(DependencyName(l[k]))
		if v == "" || k == "host" && !client {
			continue
		}
		if publicDomain(v) {
			return v
		}
	}
	return ""
}

// publicDomain reports whether a host name is a domain of the internet: a
// dotted name whose last label is a top-level domain, outside the
// cluster's and the private network's suffixes.
func publicDomain(h string) bool {
	if net.ParseIP(h) != nil || !strings.Contains(h, ".") {
		return false
	}
	for _, suf := range []string{".svc", ".svc.cluster.local", ".cluster.local", ".internal", ".local", ".lan", ".corp", ".consul", ".localdomain"} {
		if strings.HasSuffix(h, suf) || strings.Contains(h, ".svc.") {
			return false
		}
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	return len(last) >= 2 && strings.Trim(last, "abcdefghijklmnopqrstuvwxyz") == ""
}

// providerFailure says whether a status label value is a failed call: a
// server error or a timeout, connection error or the like.
func providerFailure(code string) (failed, answered bool) {
	c := strings.ToLower(code)
	if len(c) == 3 && c[0] == '5' {
		return true, true
	}
	switch c {
	case "5xx":
		return true, true
	case "timeout", "timedout", "timed_out", "deadline_exceeded", "deadlineexceeded", "connect_error", "connection_error", "error", "unavailable", "reset":
		return true, false
	}
	return false, false
}

type providerCalls struct {
	caller, host, ns       string
	total, failed, answers map[time.Time]float64
	statuses               map[string]bool
}

// detectProviderOutage reads, from client request counters labelled by
// outside host and status, a host whose share of failed calls rose from
// nothing to a fifth or more, with some of them the provider's own server
// errors, while another outside host of the same caller kept answering.
func detectProviderOutage(ev *Gathered, found []Finding) []Finding {
	calls := map[[2]string]*providerCalls{}
	var order [][2]string
	for _, ms := range ev.Metrics {
		// Request counters split by status, and the counts behind a
		// client's latency histogram (OpenTelemetry's
		// http.client.request.duration).
		series := ms.Requests
		if ms.Class == MetricRequests {
			series = append(slices.Clone(ms.Series), ms.Requests...)
		}
		for _, s := range series {
			name := orWord(s.Labels["__name__"], ms.Name)
			host := outsideHost(name, s.Labels)
			code, ok := statusLabel(s.Labels)
			if !ok {
				code, ok = s.Labels["http_response_status_code"], s.Labels["http_response_status_code"] != ""
			}
			if host == "" || !ok {
				continue
			}
			// A mesh's series name the calling workload apart
			// (istio_requests_total's source_workload).
			caller := orWord(s.Labels["source_workload"], SubjectOfLabels(s.Labels))
			if caller == "" || strings.EqualFold(caller, host) {
				continue
			}
			k := [2]string{caller, host}
			pc := calls[k]
			if pc == nil {
				pc = &providerCalls{caller: caller, host: host, ns: s.Labels["namespace"], total: map[time.Time]float64{}, failed: map[time.Time]float64{}, answers: map[time.Time]float64{}, statuses: map[string]bool{}}
				calls[k] = pc
				order = append(order, k)
			}
			failed, answered := providerFailure(code)
			for _, p := range s.Points {
				t := p.T.Truncate(time.Minute)
				pc.total[t] += p.V
				if failed {
					pc.failed[t] += p.V
					if answered {
						pc.answers[t] += p.V
					}
					if p.V > 0 {
						pc.statuses[code] = true
					}
				}
			}
		}
	}
	var out []Finding
	for _, k := range order {
		pc := calls[k]
		onset, base, share, answered, ok := providerShift(pc)
		if !ok {
			continue
		}
		// Another outside provider of the caller keeps answering.
		healthy, healthyShare := "", 0.0
		for _, k2 := range order {
			o := calls[k2]
			if k2[0] != k[0] || k2[1] == k[1] {
				continue
			}
			var tot, bad float64
			for t, v := range o.total {
				if !t.Before(onset) {
					tot += v
					bad += o.failed[t]
				}
			}
			if tot > 0 && bad/tot < 0.05 {
				healthy, healthyShare = o.host, bad/tot
				break
			}
		}
		if healthy == "" {
			continue
		}
		var sts []string
		for s := range pc.statuses {
			sts = append(sts, s)
		}
		sort.Strings(sts)
		f := Finding{Kind: KindProviderOutage, Subject: pc.caller, Namespace: pc.ns, Source: SrcMetrics, Time: onset, Severity: SevCritical,
			Weight: 0.9, Object: "provider " + pc.host, Related: []string{pc.host, ShortHost(pc.host)},
			Summary: fmt.Sprintf("%s answers %.0f%% of %s's calls with server errors or timeouts since %s; %s keeps answering", pc.host, 100*share, pc.caller, onset.UTC().Format("15:04 UTC"), healthy)}
		f.setFact("provider", pc.host)
		f.setFact("callee", pc.host)
		f.setFact("share", fmt.Sprintf("%.0f%%", 100*share))
		f.setFact("baseline", fmt.Sprintf("%.1f%%", 100*base))
		f.setFact("onset", onset.UTC().Format("15:04 UTC"))
		f.setFact("statuses", "status "+strings.Join(sts, ", "))
		f.setFact("answers", fmt.Sprintf("%.0f%% of its calls answered 5xx", 100*answered))
		f.setFact("healthy", healthy)
		f.setFact("healthy_share", fmt.Sprintf("%.1f%% failed", 100*healthyShare))
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("calls of %s to %s: %.0f%% failed since %s (%s), against %.1f%% before; %.0f%% of the calls were answered by the provider with a server error", pc.caller, pc.host, 100*share, onset.UTC().Format(time.RFC3339), strings.Join(sts, ", "), 100*base, 100*answered),
			fmt.Sprintf("calls of %s to %s over the same time: %.1f%% failed", pc.caller, healthy, 100*healthyShare))
		if l := providerLine(ev, pc.caller, pc.host); l != "" {
			f.setFact("line", l)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs the provider's answer: %s", pc.caller, quote(ReadableLine(l), 220)))
		}
		out = append(out, f)
	}
	return out
}

// providerShift finds when a host's share of failed calls rose: the first
// minute from which a fifth or more of the calls fail in most minutes,
// with a share below 5% before it (over three minutes or more); the share
// since then and the part of it the provider answered with 5xx (at least
// a twentieth of the calls).
func providerShift(pc *providerCalls) (onset time.Time, base, share, answered float64, ok bool) {
	var ts []time.Time
	for t, v := range pc.total {
		if v > 0 {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	for i, t := range ts {
		if pc.failed[t]/pc.total[t] < 0.2 || i < 3 {
			continue
		}
		high := 0
		for _, u := range ts[i:] {
			if pc.failed[u]/pc.total[u] >= 0.1 {
				high++
			}
		}
		if float64(high) < 0.6*float64(len(ts)-i) || len(ts)-i < 3 {
			return time.Time{}, 0, 0, 0, false
		}
		var bt, bf, it, ifl, ia float64
		for _, u := range ts[:i] {
			bt += pc.total[u]
			bf += pc.failed[u]
		}
		for _, u := range ts[i:] {
			it += pc.total[u]
			ifl += pc.failed[u]
			ia += pc.answers[u]
		}
		base, share, answered = bf/bt, ifl/it, ia/it
		return t, base, share, answered, base < 0.05 && share >= 0.2 && answered >= 0.05
	}
	return time.Time{}, 0, 0, 0, false
}

// providerStatusRE is a provider's server error in a line: a status field
// or code of 5xx.
var providerStatusRE = regexp.MustCompile(`(?i)(?:status(?:[ _-]?code)?|http_status|code)["']?\s*[:=]\s*["']?5\d\d\b|\b5\d\d (?:service unavailable|bad gateway|internal server error|gateway timeout)`)

// providerLine is a line of the caller's log that quotes the provider's
// server error: one naming the provider (its host, or its name, the
// domain's main label) with a 5xx status.
func providerLine(ev *Gathered, caller, host string) string {
	parts := strings.Split(host, ".")
	name := host
	if len(parts) >= 2 {
		name = strings.TrimSuffix(parts[len(parts)-2], "-status")
	}
	for _, set := range ev.Logs {
		if !strings.EqualFold(set.Subject, caller) {
			continue
		}
		for _, t := range set.Templates {
			l := strings.ToLower(t.Example)
			if t.Incident > 0 && (strings.Contains(l, host) || len(name) >= 4 && strings.Contains(l, name)) && matchLine(providerStatusRE, t.Example) {
				return t.Example
			}
		}
	}
	return ""
}
