package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KindDNSSlow: name resolution that answers, but late. When the first
// nameserver of a host's resolv.conf does not answer, every lookup waits
// for the resolver's timeout (5 s by default) before it asks the next one:
// requests that open a new connection take seconds longer and nothing
// fails, so p99 jumps while p50 and the error rate stay as they were. The
// request logs that time each call's phases show it as the DNS phase
// taking about the resolver timeout; a blackbox DNS probe of the dead
// resolver, the hosts' DHCP renewals and a change to the DHCP options or
// resolver list say why.
const KindDNSSlow Kind = "dns_slow"

var dnsSlow = &mechanism{
	kind:   KindDNSSlow,
	class:  classCause,
	label:  "slow name resolution (a resolver that does not answer)",
	detect: detectDNSSlow,
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindLatency && strings.EqualFold(f.Subject, h.Subject)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool { return matchLine(resolverChangeRE, changeText(c)) },
	describe:   describeDNSSlow,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		dead := orWord(h.fact("dead_resolver"), "the first nameserver")
		r.high("Take %s out of the resolver list the hosts of %s get (DHCP options / resolv.conf), then renew the hosts' leases or fix resolv.conf so the first nameserver answers", dead, h.Subject)
		r.med("Lower the resolver timeout (options timeout:1 attempts:2, rotate) and cache lookups on the hosts (systemd-resolved, nscd) so one dead resolver costs milliseconds")
		r.low("Alert on each resolver's DNS probe and on the DNS phase of outgoing calls, not only on request latency")
	},
}

var (
	// A call's DNS phase in a request log: "promo-engine.dns_ms=5011",
	// "dns_ms=5011", "time_namelookup=5.004", "lookup_ms=5000",
	// "dnsLookupMs": 5003; a bare "s" after a separator only
	// ("lookup_s=5"): "lookups=6817" counts lookups, it times none.
	dnsPhaseRE = regexp.MustCompile(`(?i)\b([\w.-]*?)(?:[._-])?(dns|lookup|namelookup|resolve|resolution)(?:[._-]?(ms|millis|sec|seconds|time|duration)|[._-](s))?"?\s*[=:]\s*"?(\d+(?:\.\d+)?)\s*(ms|s)?\b`)
	// A change to what resolves names: DHCP options, resolv.conf, the
	// resolver list.
	resolverChangeRE = regexp.MustCompile(`(?i)dhcp|resolv\.conf|nameserver|name_servers|domain_name_servers|resolver|\bdns\b`)
	dhcpLineRE       = regexp.MustCompile(`(?i)\b(dhclient|dhcpcd|systemd-networkd|NetworkManager)\b.*\b(DHCPACK|bound to|lease|renew)|\bresolv\.conf\b.*\b(updated|changed|written)`)
	dnsProbeMetricRE = regexp.MustCompile(`(?i)^probe_(success|dns_lookup_time_seconds)$`)
)

// detectDNSSlow reads the DNS phase of calls in request logs: lookups that
// take about the resolver's timeout, in the window and not before.
func detectDNSSlow(ev *Gathered, _ []Finding) []Finding {
	w := ev.Window
	type stat struct {
		slow, total, slowBefore, totalBefore int
		first                                time.Time
		values                               []float64
		example                              string
		targets                              map[string]int
		hosts                                map[string]bool
	}
	by := map[string]*stat{}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		subject := set.Subject
		if set.Host {
			subject = subjectOfSource(set.Source)
		}
		for _, l := range set.Lines {
			ms := findAllSubmatch(dnsPhaseRE, l.Text, -1)
			if len(ms) == 0 {
				continue
			}
			st := by[subject]
			if st == nil {
				st = &stat{targets: map[string]int{}, hosts: map[string]bool{}}
				by[subject] = st
			}
			worst, target := 0.0, ""
			for _, m := range ms {
				v, err := strconv.ParseFloat(m[5], 64)
				if err != nil {
					continue
				}
				unit := strings.ToLower(orWord(m[6], orWord(m[3], m[4])))
				if unit == "s" || unit == "sec" || unit == "seconds" || unit == "" && strings.Contains(strings.ToLower(m[2]), "namelookup") {
					v *= 1000
				}
				if v > worst {
					worst, target = v, strings.Trim(m[1], "._-")
				}
			}
			before := l.Time.Before(w.Start)
			if before {
				st.totalBefore++
			} else {
				st.total++
			}
			if worst < 1000 {
				continue
			}
			if before {
				st.slowBefore++
				continue
			}
			st.slow++
			st.values = append(st.values, worst)
			if target != "" {
				st.targets[target]++
			}
			st.hosts[set.Source] = true
			if st.first.IsZero() || l.Time.Before(st.first) {
				st.first, st.example = l.Time, l.Text
			}
		}
	}
	var out []Finding
	for _, n := range slices.Sorted(maps.Keys(by)) {
		st := by[n]
		// Several slow lookups, not a steady habit of the baseline.
		if st.slow < 5 || st.total == 0 || st.totalBefore > 0 && float64(st.slowBefore)/float64(st.totalBefore) >= 0.5*float64(st.slow)/float64(st.total) {
			continue
		}
		typical := medianOf(st.values)
		f := Finding{Kind: KindDNSSlow, Subject: n, Object: "service " + n, Time: st.first, Severity: SevWarning, Weight: 0.8, Source: SrcLogs}
		f.setFact("slow", strconv.Itoa(st.slow))
		f.setFact("total", strconv.Itoa(st.total))
		f.setFact("share", fmt.Sprintf("%.1f%%", 100*float64(st.slow)/float64(st.total)))
		f.setFact("typical", formatValue(typical/1000, "s"))
		f.setFact("line", st.example)
		var targets []string
		for t := range st.targets {
			targets = append(targets, t)
		}
		sort.Strings(targets)
		f.setFact("targets", strings.Join(targets, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s requests of %s in the window (%s) waited about %s in DNS lookups (%d of %d before): %s",
			f.fact("slow"), f.fact("total"), n, f.fact("share"), f.fact("typical"), st.slowBefore, st.totalBefore, quote(ReadableLine(st.example), 240)))
		if typical >= 900 && near(typical, 5000, 600) || near(typical, 1000, 150) || near(typical, 2000, 250) || near(typical, 3000, 350) {
			f.setFact("timeout", "true")
		}
		// A resolver that does not answer its probe.
		if dead, detail := deadResolver(ev.Metrics, w); dead != "" {
			f.setFact("dead_resolver", dead)
			f.Evidence = append(f.Evidence, detail)
			f.Weight = 0.9
		}
		// The hosts renewing their lease (and resolv.conf) just before.
		if l := dhcpRenewal(ev.Logs, st.first); l != "" {
			f.setFact("dhcp_line", l)
			f.Evidence = append(f.Evidence, "the host renewed its DHCP lease (which rewrites resolv.conf) just before: "+quote(ReadableLine(l), 160))
		}
		f.Summary = fmt.Sprintf("%s of %s's requests wait about %s for DNS lookups", f.fact("share"), n, f.fact("typical"))
		out = append(out, f)
	}
	return out
}

func near(v, target, tol float64) bool { return v >= target-tol && v <= target+tol }

// deadResolver names a DNS server whose blackbox probe fails (or times
// out) in the window while others answer.
func deadResolver(sets []MetricSet, w Window) (string, string) {
	fail := map[string]float64{}
	ok := map[string]bool{}
	for _, ms := range sets {
		if !matchLine(dnsProbeMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			inst := s.Labels["instance"]
			if inst == "" || !(strings.Contains(strings.ToLower(s.Labels["job"]+s.Labels["module"]), "dns") || strings.HasSuffix(inst, ":53")) {
				continue
			}
			var in []float64
			for _, p := range s.Points {
				if !p.T.Before(w.Start) && !p.T.After(w.End) {
					in = append(in, p.V)
				}
			}
			if len(in) == 0 {
				continue
			}
			m := medianOf(in)
			switch {
			case strings.HasSuffix(ms.Name, "success") && m < 0.5, strings.HasSuffix(ms.Name, "seconds") && m >= 1:
				// A failed probe, or one that waits for its timeout.
				fail[inst] = m
			default:
				ok[inst] = true
			}
		}
	}
	var dead []string
	for inst := range fail {
		delete(ok, inst)
		dead = append(dead, inst)
	}
	if len(dead) == 0 || len(ok) == 0 {
		return "", ""
	}
	sort.Strings(dead)
	host := DependencyName(dead[0])
	return host, fmt.Sprintf("resolver %s does not answer: its blackbox DNS probe fails or waits for its timeout while %d other resolvers answer", strings.Join(dead, ", "), len(ok))
}

// dhcpRenewal is a DHCP client's renewal line logged on a host shortly
// before the first slow lookup.
func dhcpRenewal(sets []LogSet, first time.Time) string {
	best, bestAt := "", time.Time{}
	for _, set := range sets {
		for _, t := range set.Templates {
			if !matchLine(dhcpLineRE, t.Example) {
				continue
			}
			for _, at := range []time.Time{t.LastSeen, t.FirstSeen} {
				if d := first.Sub(at); d >= 0 && d <= 15*time.Minute && at.After(bestAt) {
					best, bestAt = t.Example, at
				}
			}
		}
	}
	return best
}

func describeDNSSlow(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("slow name resolution on %s: %s of its requests (%s of %s) wait about %s in DNS lookups", h.Subject, h.fact("share"), h.fact("slow"), h.fact("total"), orWord(h.fact("typical"), "seconds"))
	d += h.clause(" of ", "targets")
	if h.fact("timeout") != "" {
		d += " — the resolver's timeout: the first nameserver in resolv.conf does not answer, so each new connection's lookup waits for it before asking the next"
	}
	d += ", so the tail latency jumps while nothing fails: " + quote(ReadableLine(h.fact("line")), 200)
	if r := h.fact("dead_resolver"); r != "" {
		d += fmt.Sprintf("; resolver %s does not answer (its DNS probe fails)", r)
	}
	d += h.quoteClause("; the hosts renewed their DHCP lease just before (which rewrites resolv.conf): ", "dhcp_line", 140)
	return d
}
