package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// One client driving a service's load: a partner's sync job paging
// through every result, a crawler, a customer's script in a loop, a
// mobile release that polls. The service's autoscaler runs to its maximum,
// its pods saturate and its latency rises, and none of that says why; the
// access log in front of it does: most of the requests of the window come
// from one client (one User-Agent, one client id, one address) that sent
// few or none before. The autoscaler at its maximum, the load surge and
// the latency are its consequences; the client is the cause, and what to
// do is about it (rate-limit or block it, talk to its owner).
//
// It is read from the raw request lines the gatherer keeps for a question
// about load or capacity (loadLinePattern): nginx's and ingress-nginx's
// combined format, Envoy's and Istio's access logs, an ALB's, and a
// service's own request log in logfmt or JSON (user_agent=, client_id=,
// client_ip=).

// KindClientSurge is one client whose requests drive a service's load.
const KindClientSurge Kind = "client_surge"

var clientSurge = &mechanism{
	kind:   KindClientSurge,
	class:  classCause,
	label:  "one client driving the load",
	detect: detectClientSurge,
	// The load it drives shows on the service: the autoscaler at its
	// maximum, the load surge, latency, saturation, throttling, errors.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindHPAMax, KindLoadSurge, KindLatency, KindSaturation, KindCPUThrottling, KindErrorRate, KindLogErrors, KindTimeout:
			return slices.Contains(h.top().Related, f.Subject)
		}
		return false
	},
	// A client's traffic is not made by a deploy or a flag of ours: a
	// change near it is a coincidence unless it names the client.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		a := strings.ToLower(h.fact("client"))
		return a != "" && strings.Contains(strings.ToLower(changeText(c)), a)
	},
	describe: describeClientSurge,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		who := orWord(h.fact("client"), "the client")
		r.high("Rate-limit or block %s in front of %s now (a per-client limit at the ingress or gateway: limit-rps by its User-Agent, address or key), so that the other clients' requests are served", who, h.Subject)
		r.high("Contact the owner of %s: have it slow down, page less deep or use a bulk export or feed instead of the search API", who)
		if hpaOf(h) != nil {
			r.med("Raise maxReplicas of %s only if the traffic is legitimate and must be served", h.Subject)
		}
		r.low("Give %s per-client quotas and alert on one client's share of its requests, not only on the total", h.Subject)
	},
}

var (
	// A question or alert about load or capacity: the raw request lines
	// are read to say who sends the load.
	loadAskRE = regexp.MustCompile(`(?i)\b(load|traffic|requests? (?:rate|volume)|rps|qps|hpa\w*|\w*hpamax\w*|max ?replicas|autoscal\w*|scal(?:ed|ing) (?:out|up)|maxed|max(?:imum)? replicas|capacity|overload\w*|surge|spike|flood\w*|hammer\w*|crawl\w*|bots?|who is calling|which client|driving)\b`)
	// Request lines, whatever their format.
	requestLinePattern = `"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+ HTTP/|\b(?:method|http_method|request_method)"?\s*[=:]`
	// Clients that are the platform's own, never an outside load.
	platformAgentRE = regexp.MustCompile(`(?i)^(kube-probe|ELB-HealthChecker|GoogleHC|Prometheus|Blackbox|Consul Health|Envoy/HC)`)
)

// loadLinePattern is the pattern of the raw lines a load or capacity
// question needs (request lines), "" for other questions.
func loadLinePattern(sc Scope) string {
	if !matchLine(loadAskRE, sc.Message+" "+sc.Hint+" "+sc.Alert) {
		return ""
	}
	return requestLinePattern
}

// clientCount is one client's requests in the baseline and the window.
type clientCount struct {
	key, field  string // the client, and what names it (user agent, client id, address)
	base, inc   int
	first       time.Time
	addrs       map[string]int
	routes      map[string]int
	upstreams   map[string]int
	durations   []float64
	errors      int
	sampleAgent string
}

// detectClientSurge finds the one client whose requests make most of a
// service's load in the window while it sent few before.
func detectClientSurge(ev *Gathered, found []Finding) []Finding {
	w := ev.Window
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if len(set.Lines) == 0 {
			continue
		}
		groups := map[string]map[string]*clientCount{"client id": {}, "user agent": {}, "address": {}}
		var baseN, incN int
		var baseFirst, baseLast, incFirst, incLast time.Time
		for _, l := range set.Lines {
			if l.Time.IsZero() || l.Time.Before(w.BaselineStart) || l.Time.After(w.End) {
				continue
			}
			r, ok := parseRequestLine(l.Text)
			if !ok || matchLine(platformAgentRE, r.Agent) {
				continue
			}
			inc := !l.Time.Before(w.Start)
			if inc {
				incN++
				incFirst, incLast = earliest(incFirst, l.Time), later(incLast, l.Time)
			} else {
				baseN++
				baseFirst, baseLast = earliest(baseFirst, l.Time), later(baseLast, l.Time)
			}
			for field, key := range map[string]string{"client id": r.ClientID, "user agent": r.Agent, "address": r.Client} {
				if key == "" {
					continue
				}
				c := groups[field][key]
				if c == nil {
					c = &clientCount{key: key, field: field, addrs: map[string]int{}, routes: map[string]int{}, upstreams: map[string]int{}}
					groups[field][key] = c
				}
				if !inc {
					c.base++
					continue
				}
				c.inc++
				c.first = earliest(c.first, l.Time)
				if r.Client != "" {
					c.addrs[r.Client]++
				}
				c.routes[strings.TrimSpace(r.Method+" "+r.Route)]++
				if r.Upstream != "" {
					c.upstreams[r.Upstream]++
				}
				if r.Duration >= 0 {
					c.durations = append(c.durations, r.Duration)
				}
				if r.Status >= 500 || r.Status == 429 {
					c.errors++
				}
			}
		}
		if incN < 50 || baseN < 10 {
			continue
		}
		// The load rose: requests per minute in the window against the
		// baseline, each over the span its lines cover.
		rate := func(n int, a, b time.Time) float64 { return float64(n) / max(b.Sub(a).Minutes(), 1) }
		baseRate, incRate := rate(baseN, baseFirst, baseLast), rate(incN, incFirst, incLast)
		// A search may return a sample of a busy window: the rise then
		// shows in the service's own findings (its autoscaler at its
		// maximum, its load, latency or saturation up).
		rose := incRate >= 1.5*baseRate
		symptom := loadSymptomOf(found, set, ev.Scope)
		if !rose && symptom == nil {
			continue
		}
		// The requests fell in the window: the load, if any, was in the
		// baseline, and the clients left are the usual ones (their share
		// grows when a surge before the window ends).
		if incRate < 0.8*baseRate {
			continue
		}
		// The client with the largest share of the window, a named client
		// (its id, then its agent) before an address when shares are close.
		var top *clientCount
		topShare := 0.0
		for _, field := range []string{"client id", "user agent", "address"} {
			for _, c := range groups[field] {
				share := float64(c.inc) / float64(incN)
				if float64(c.base)/float64(baseN)*3 > share {
					continue // it was as large a part of the traffic before
				}
				if top == nil || share > topShare+0.1 || share > topShare && top.field == field {
					top, topShare = c, share
				}
			}
		}
		if top == nil || topShare < 0.4 {
			continue
		}
		// Its requests are most of what the load grew by.
		clientRate := rate(top.inc, incFirst, incLast) - rate(top.base, baseFirst, baseLast)
		if rose && clientRate < 0.5*(incRate-baseRate) {
			continue
		}
		f := Finding{Kind: KindClientSurge, Subject: set.Subject, Object: set.Origin + " " + set.Source, Namespace: set.Namespace,
			Time: top.first, Severity: SevCritical, Weight: 0.8, Source: set.Origin}
		if topShare >= 0.6 && top.base*10 <= top.inc {
			f.Weight = 0.9
		}
		// The service it loads: the upstream its requests went to, as
		// the findings on the service name it.
		up, _ := topOf(top.upstreams)
		if g := loadSymptomOf(found, set, ev.Scope); g != nil {
			// A sampled window may miss the client's first requests: a
			// client new in the window began no later than the load it
			// drives.
			if !g.Time.IsZero() && !g.Time.Before(w.Start) && g.Time.Before(f.Time) && top.base == 0 {
				f.Time = g.Time
			}
			f.Subject = g.Subject
			f.Namespace = orWord(g.Namespace, f.Namespace)
		} else if ev.Scope.Service != "" && strings.Contains(up, ev.Scope.Service) {
			f.Subject = ev.Scope.Service
		}
		f.Related = appendNew(appendNew(f.Related, f.Subject), set.Subject)
		f.setFact("client", top.key)
		f.setFact("client_field", top.field)
		f.setFact("client_requests", strconv.Itoa(top.inc))
		f.setFact("requests", strconv.Itoa(incN))
		f.setFact("share", fmt.Sprintf("%.0f%%", 100*topShare))
		f.setFact("client_before", strconv.Itoa(top.base))
		f.setFact("baseline_requests", strconv.Itoa(baseN))
		if rose {
			f.setFact("rate_before", fmt.Sprintf("%.0f/min", baseRate))
			f.setFact("rate", fmt.Sprintf("%.0f/min", incRate))
		}
		f.setFact("source", set.Source)
		if top.field != "address" {
			f.setFact("addresses", topKeys(top.addrs, 4))
		}
		route, n := topOf(top.routes)
		f.setFact("route", route)
		f.setFact("route_share", fmt.Sprintf("%.0f%%", 100*float64(n)/float64(top.inc)))
		e := fmt.Sprintf("%s (%s): %s %q sent %d of the %d requests read in the window (%s; first read at %s), against %d of %d in the baseline",
			orWord(set.Source, set.Subject), set.Origin, top.field, top.key, top.inc, incN, f.fact("share"), ts(top.first), top.base, baseN)
		if rose {
			e += fmt.Sprintf("; the window's rate %s against %s before", f.fact("rate"), f.fact("rate_before"))
		}
		if a := f.fact("addresses"); a != "" {
			e += "; from " + a
		}
		if route != "" {
			e += fmt.Sprintf("; %s of them to %s", f.fact("route_share"), route)
		}
		f.Evidence = append(f.Evidence, e)
		f.Summary = fmt.Sprintf("one client drives the load on %s: %s %s sent %s of the requests since %s", f.Subject, top.field, quote(top.key, 80), f.fact("share"), hm(top.first))
		out = append(out, f)
	}
	if len(out) == 0 {
		// No request lines enough to count: a count someone took of them.
		out = detectClientCounts(ev, found)
	}
	return out
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// topOf is the most frequent key of a count.
func topOf(m map[string]int) (string, int) {
	best, n := "", 0
	for k, v := range m {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return best, n
}

// topKeys lists up to n keys of a count, most frequent first.
func topKeys(m map[string]int, n int) string {
	keys := byCount(m)
	if len(keys) > n {
		return strings.Join(keys[:n], ", ") + fmt.Sprintf(" and %d more", len(keys)-n)
	}
	return strings.Join(keys, ", ")
}

// byCount lists the keys of a count, most frequent first, then by name.
func byCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// loadSymptomOf is a finding that shows the load of the service behind a
// log's requests rising: its autoscaler at its maximum, its load surging,
// its latency or saturation up (nil when none does).
func loadSymptomOf(found []Finding, set *LogSet, sc Scope) *Finding {
	var best *Finding
	for i := range found {
		g := &found[i]
		switch g.Kind {
		case KindHPAMax, KindLoadSurge, KindLatency, KindSaturation, KindCPUThrottling:
		default:
			continue
		}
		if g.Subject == "" || !strings.Contains(set.Source+" "+set.Subject, g.Subject) && !strings.EqualFold(g.Subject, sc.Service) && !setUpstreams(set, g.Subject) {
			continue
		}
		if best == nil || g.Kind == KindHPAMax && best.Kind != KindHPAMax {
			best = g
		}
	}
	return best
}

// setUpstreams reports whether a log's requests went to a service.
func setUpstreams(set *LogSet, svc string) bool {
	for i, l := range set.Lines {
		if i > 200 {
			break
		}
		if r, ok := parseRequestLine(l.Text); ok && r.Upstream != "" && strings.Contains(r.Upstream, svc) {
			return true
		}
	}
	return false
}

// supportOf is the first finding of kind k among a hypothesis's support.
func supportOf(h *Hypothesis, k Kind) *Finding {
	for _, f := range h.Support {
		if f.Kind == k {
			return f
		}
	}
	return nil
}

// hpaOf is the autoscaler finding among a hypothesis's support.
func hpaOf(h *Hypothesis) *Finding { return supportOf(h, KindHPAMax) }

func describeClientSurge(h *Hypothesis, sc Scope) string {
	if h.fact("counted") != "" {
		return describeCountedClient(h)
	}
	d := fmt.Sprintf("one client drives the load on %s: %s %s sent %s of its requests in the window (%s of %s), since about %s",
		h.Subject, h.fact("client_field"), quote(h.fact("client"), 120), h.fact("share"), h.fact("client_requests"), h.fact("requests"), orWord(tsOf(h.Onset), "the onset"))
	if b := h.fact("client_before"); b == "0" {
		d += ", and none in the baseline"
	} else if b != "" {
		d += fmt.Sprintf(", against %s of %s requests in the baseline", b, h.fact("baseline_requests"))
	}
	d += h.wrapped(" (from ", "addresses", ")")
	if r := h.fact("route"); r != "" {
		d += fmt.Sprintf("; %s of its requests go to %s", h.fact("route_share"), r)
	}
	if r := h.fact("rate"); r != "" {
		d += fmt.Sprintf(". The service's requests rose from %s to %s (%s)", h.fact("rate_before"), r, h.fact("source"))
	} else if f := supportOf(h, KindLoadSurge); f != nil {
		d += ". " + strings.TrimSuffix(f.Summary, ".")
	}
	if f := hpaOf(h); f != nil {
		d += fmt.Sprintf("; its autoscaler ran to its maximum of %s replicas and cannot add more", orWord(f.fact("max_replicas"), "its"))
	}
	if hasKind(h.Support, KindLatency) {
		d += ", so requests queue and latency rises"
	}
	return d
}

func tsOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return ts(t)
}
