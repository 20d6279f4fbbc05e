package analyst

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The resolvers a DNS server forwards a zone to do not answer. A cluster
// DNS forwards some zones (a corporate domain, a peered VPC's private
// zone, an on-premises Active Directory) to resolvers outside the cluster
// (a Corefile server block "corp.internal:53 { forward . 10.40.0.10 }",
// kube-dns stubDomains, NodeLocal DNSCache, an unbound or BIND forwarder).
// When the network path to those resolvers breaks (a route withdrawn from
// a transit gateway or a route table, a VPN torn down, a firewall rule)
// every name under that zone fails (SERVFAIL: "Temporary failure in name
// resolution", "no such host", EAI_AGAIN, UnknownHostException) while
// cluster and public names resolve: the callers fail, the DNS server is
// up, and its own log says where its forwards go unanswered:
//
//	[ERROR] plugin/errors: 2 ldap.corp.internal. A: read udp 10.0.3.17:48211->10.40.0.10:53: i/o timeout
//	[ERROR] plugin/errors: 2 db.corp.example. AAAA: dial udp 10.40.0.11:53: connect: no route to host
//	error: SERVFAIL <ldap.corp.internal. A IN>: all the configured stub or forward servers failed, at zone corp.internal.
//	timed out resolving 'ldap.corp.internal/A/IN': 10.40.0.10#53
//
// The chain is: the callers' failed lookups, the DNS server's forwards to
// the upstream timing out (or refused), a direct query to the upstream
// from inside getting no answer (dig @10.40.0.10: no servers could be
// reached), and why it is unreachable: a route table that no longer covers
// its address, or the network change that withdrew the route. The failing
// job or service is the consequence; the DNS server is not at fault.

// KindDNSUpstream is a zone whose upstream resolvers do not answer the DNS
// server that forwards to them.
const KindDNSUpstream Kind = "dns_upstream"

var (
	// upstreamErrRE is a DNS server's log line of a forward to an
	// upstream that failed: CoreDNS's (and NodeLocal DNSCache's) errors
	// plugin with the Go network error naming the upstream, and BIND's
	// "timed out resolving 'NAME/TYPE/IN': IP#53".
	upstreamErrRE = regexp.MustCompile(`(?i)plugin/errors: \d+ ([\w.-]+?)\.? [A-Z]+: (?:read|write|dial) (?:udp|tcp)[46]? (?:[\w.:\[\]%-]+->)?\[?([0-9a-f.:]+?)\]?:53: (?:connect: )?(i/o timeout|no route to host|network is unreachable|connection refused)|timed out resolving '([\w.-]+?)\.?/\w+/IN': ([0-9a-f.:]+)#53`)
	// zoneFailedRE is unbound's "all the configured stub or forward
	// servers failed, at zone corp.internal." (its upstream not named).
	zoneFailedRE = regexp.MustCompile(`(?i)SERVFAIL <([\w.-]+?)\.? \w+ IN>: all the configured stub or forward servers failed, at zone ([\w.-]+?)\.?(?:\s|$)`)
	// digServerRE names the server a dig or nslookup in a transcript
	// asked: "; <<>> DiG 9.18 <<>> @10.40.0.10 name", "nslookup name
	// 10.40.0.10", "dig @10.40.0.10 name".
	digServerRE = regexp.MustCompile(`(?:<<>>|\bdig)\s+(?:\S+\s+)*?@([0-9a-f.:]+)|\bnslookup\s+(?:-\S+\s+)*[\w.-]+\s+([0-9a-f.:]+)\s*$`)
	// noAnswerRE is dig's or nslookup's "no answer from the server".
	noAnswerRE = regexp.MustCompile(`(?i)no servers could be reached|communications error to [0-9a-f.:]+#53: (?:timed out|host unreachable|connection refused)|couldn't get address for|;; connection timed out`)
	// routeCommandRE is a command that lists routes: a cloud route
	// table, a transit gateway's, the host's.
	routeCommandRE = regexp.MustCompile(`(?i)transit-gateway-routes|describe-route-tables|route-table|routes list|\bip (?:-\d )?route\b|\broute -n\b|netstat -rn`)
	clusterZoneRE  = regexp.MustCompile(`(?i)(?:^|\.)(?:cluster\.local|svc|in-addr\.arpa|ip6\.arpa)$`)
	routeTableIDRE = regexp.MustCompile(`\b((?:tgw-)?rtb-[0-9a-f]+)\b`)
	cidrRE         = regexp.MustCompile(`\b(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/\d{1,2})\b`)
	// upstreamChangeRE is a change of the path to resolvers outside the
	// cluster: routes, gateways, VPNs, peering, firewalls, the forwarders.
	upstreamChangeRE = regexp.MustCompile(`(?i)\broute|\btgw\b|transit gateway|\bvpn\b|direct connect|peering|propagation|attachment|firewall|security group|\bnacl\b|\bacl\b|\bcidr\b|stub ?domain|forward(?:er|ing)? |corefile|resolver|interconnect|express ?route`)
)

var dnsUpstream = &mechanism{
	kind:   KindDNSUpstream,
	class:  classCause,
	label:  "upstream resolvers of a forwarded zone unreachable",
	detect: detectDNSUpstream,
	// A change of a caller (its schedule, its code) makes the failing
	// lookups more or less frequent; only a change of the path to the
	// resolvers explains them.
	strictTriggers: true,
	// The callers' failed lookups and what they failed (a Job, a crash),
	// and the DNS server's own timeouts, are what the unreachable
	// upstream produces.
	related: func(h *Hypothesis, f *Finding) bool {
		callers := strings.Split(h.fact("callers"), ", ")
		if f.Kind == KindTimeout && slices.Contains(strings.Split(h.fact("upstreams"), ", "), f.fact("dependency")) {
			return true
		}
		if !slices.Contains(callers, f.Subject) && !slices.Contains(callers, f.fact("caller")) {
			return false
		}
		switch f.Kind {
		case KindDNS, KindAppCrash, KindLogErrors, KindTimeout, KindCrashLoop:
			return true
		case KindJobFailed:
			return Kind(f.fact("line_kind")) == KindDNS || strings.Contains(f.fact("line"), h.fact("zone"))
		}
		return false
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		if c.Kind == KindDeploy || c.Kind == KindFeatureFlag {
			return false
		}
		if id := h.fact("route_table"); id != "" && strings.Contains(t, id) {
			return true
		}
		return matchLine(upstreamChangeRE, t) || networkChangeFits(c)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		zone := orWord(h.fact("zone"), "a forwarded zone")
		if ns := h.fact("authoritative"); ns != "" {
			d := fmt.Sprintf("the name servers of %s (%s) do not answer: a query sent straight to them from inside the cluster times out (%q), so the upstream resolvers %s cannot resolve %s and the cluster DNS (%s) answers SERVFAIL for them (its log: %s)",
				zone, ns, h.fact("authoritative_line"), orWord(h.fact("upstreams"), "it forwards to"), orWord(h.fact("names"), zone), h.Subject, quote(ReadableLine(h.fact("line")), 200))
			if c := h.fact("callers"); c != "" {
				d += fmt.Sprintf("; only %s, which looks up names under %s, fails (\"name resolution\" errors), while cluster and other public names resolve", c, zone)
			}
			return d + fmt.Sprintf(". %s and the path to its resolvers are up: the failure is the zone's own DNS, outside the cluster", h.Subject)
		}
		d := fmt.Sprintf("the upstream resolvers %s, to which the cluster DNS (%s) forwards %s, do not answer: %s's own log shows its forwards for %s timing out (%s)",
			orWord(h.fact("upstreams"), "of the zone"), h.Subject, zone, h.Subject, orWord(h.fact("names"), zone), quote(ReadableLine(h.fact("line")), 200))
		if c := h.fact("callers"); c != "" {
			d += fmt.Sprintf(", so every lookup of a name under %s fails (SERVFAIL, \"name resolution\" errors) for %s while cluster and public names resolve", zone, c)
		}
		d += h.clause("; ", "probe")
		if rf := h.fact("reload_failed"); rf != "" {
			d += fmt.Sprintf("; they are the old resolvers: the configuration now forwards %s to %s, but that edit never loaded — %s's reload of it failed (%s), so it keeps running its previous configuration and forwarding to the old resolvers", zone, h.fact("configured"), h.Subject, quote(ReadableLine(rf), 200))
			if c := h.Trigger; c != nil {
				d += fmt.Sprintf("; they stopped answering with the change at %s: %s", hm(c.Time), truncate(c.fact("description"), 200))
			}
			return d + fmt.Sprintf(". The failure is the rejected reload of %s's configuration; the failed lookups are its consequence", h.Subject)
		}
		if r := h.fact("route"); r != "" {
			d += "; the resolvers are unreachable: " + r
		} else {
			d += "; the network path from the cluster to them is broken (unreachable)"
		}
		if c := h.Trigger; c != nil {
			d += fmt.Sprintf("; the change at %s withdrew that path: %s", hm(c.Time), truncate(c.fact("description"), 200))
		}
		d += fmt.Sprintf(". %s itself is up: the failure is the route to the zone's resolvers, and the failed runs are its consequence", h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		zone := orWord(h.fact("zone"), "the zone")
		ups := orWord(h.fact("upstreams"), "its upstream resolvers")
		if ns := h.fact("authoritative"); ns != "" {
			r.high("Tell the owner of %s that its name servers (%s) do not answer; until they do, pause or slow the callers that retry lookups under it (%s)", zone, ns, orWord(h.fact("callers"), "its callers"))
			r.med("Scope the DNS errors alert by name or zone, so one unreachable outside zone does not read as the cluster DNS failing")
			r.low("Alert on the SERVFAIL rate per zone rather than on the cluster DNS as a whole")
			return
		}
		if rf := h.fact("reload_failed"); rf != "" {
			r.high("Fix the error the reload of %s's configuration reports (%s) so the configuration that forwards %s to %s loads; watch the log for the reload's new configuration line", h.Subject, truncate(ReadableLine(rf), 160), zone, h.fact("configured"))
			r.med("Validate DNS configuration edits before applying them (coredns -conf <file> -validate, named-checkconf) and check the server's log after each edit")
			r.low("Alert on failed configuration reloads (coredns_reload_failed_total increasing) and on the forward health checks (coredns_forward_healthcheck_failures_total)")
			return
		}
		if c := h.Trigger; c != nil {
			r.high("Restore the route from the cluster to %s (revert or complete the network change: %s), or point the %s forward at resolvers reachable now", ups, truncate(c.fact("description"), 140), zone)
		} else {
			r.high("Restore the network path from the cluster's nodes to %s (route tables, transit gateway or VPN attachment, firewall), or point the %s forward at resolvers reachable now", ups, zone)
		}
		r.med("Check from a pod that the resolvers answer (dig @%s <name under %s>) and re-run the failed jobs", firstWord(strings.ReplaceAll(ups, ",", " ")), zone)
		r.low("Alert on the DNS server's forward errors and health checks (coredns_forward_healthcheck_failures_total, SERVFAIL rate per zone)")
	},
}

// upstreamStat gathers one upstream's failed forwards.
type upstreamStat struct {
	names   []string
	count   int
	first   time.Time
	line    string
	source  string
	subject string
	ns      string
	zone    string
}

// detectDNSUpstream reads a DNS server's failed forwards, groups them by
// the zone they fall under, and follows the chain: who failed to resolve
// names there, a direct query of the upstream, a route table that does not
// cover it, a change of the path.
func detectDNSUpstream(ev *Gathered, found []Finding) []Finding {
	var ups []string
	byUp := map[string]*upstreamStat{}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				name, up := upstreamFailure(l)
				// A cluster name the DNS server answers itself timing
				// out is the server's own trouble (resolvertimeout.go),
				// not a forwarded zone's.
				if name == "" || matchLine(clusterZoneRE, name) {
					continue
				}
				s := byUp[up]
				if s == nil {
					s = &upstreamStat{subject: set.Subject, ns: set.Namespace, source: set.Source, line: l}
					byUp[up] = s
					ups = append(ups, up)
				}
				s.names = appendNew(s.names, name)
				s.count += max(1, t.Count)
				s.first = earliest(s.first, orTime(t.FirstIncident, t.FirstSeen))
				if m := findSubmatch(zoneFailedRE, l); m != nil {
					s.zone = strings.ToLower(m[2])
				}
			}
		}
	}
	if len(ups) == 0 {
		return nil
	}
	// One finding per DNS server: its upstreams and the zone they serve.
	var all []string
	var first *upstreamStat
	for _, up := range ups {
		s := byUp[up]
		if first == nil {
			first = s
		}
		all = append(all, s.names...)
		if s.zone != "" && first.zone == "" {
			first.zone = s.zone
		}
	}
	zone := first.zone
	if zone == "" {
		zone = commonZone(withoutSearchExpansions(all))
	}
	var addrs []string
	for _, up := range ups {
		if st := byUp[up]; st.zone == "" || st.zone == zone {
			if _, err := netip.ParseAddr(up); err == nil {
				addrs = append(addrs, up)
			}
		}
	}
	server := first.subject
	if m := findSubmatch(dnsServerNameRE, server); m != nil {
		server = strings.ToLower(m[1])
	}
	f := Finding{Kind: KindDNSUpstream, Subject: server, Source: SrcLogs, Severity: SevCritical, Weight: 0.92, Time: first.first}
	f.Object = "zone " + orWord(zone, "forwarded") + " upstream " + strings.Join(addrs, ", ")
	total := 0
	for _, up := range ups {
		total += byUp[up].count
	}
	names := uniqueNames(withoutSearchExpansions(all))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s (%s) logs %d forwards of %s to %s failing: %s", server, first.source, total, strings.Join(names, ", "), orWord(strings.Join(addrs, ", "), "its upstream"), quote(ReadableLine(first.line), 220)))
	f.setFact("upstreams", strings.Join(addrs, ", "))
	f.setFact("zone", zone)
	f.setFact("names", strings.Join(names, ", "))
	f.setFact("line", first.line)
	f.setFact("server_namespace", first.ns)

	// Who failed to resolve names of the zone: their failures are the
	// consequence, and their first one is the onset.
	callers, onset, ns := zoneCallers(ev, found, zone, names, server)
	f.Related = callers
	f.setFact("callers", strings.Join(callers, ", "))
	f.setFact("affected", strings.Join(callers, ", "))
	f.Time = earliest(onset, f.Time)
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	f.Namespace = orWord(ns, first.ns)
	if len(callers) > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s fail to resolve names under %s from %s", strings.Join(callers, ", "), orWord(zone, "the zone"), hm(f.Time)))
	}

	// A direct query of the upstream from inside that got no answer.
	if p, ev2 := upstreamProbe(ev.Commands, addrs); p != "" {
		f.setFact("probe", p)
		f.Evidence = append(f.Evidence, ev2)
	}
	// The configuration names other resolvers for the zone, and its
	// reload was rejected: the server forwards by the old one.
	if reason, configured, e := dnsReloadFailed(ev, zone, addrs); configured != "" {
		f.setFact("reload_failed", reason)
		f.setFact("configured", configured)
		f.setFact("why", "reload failed")
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's reload of its configuration failed: %s", server, quote(ReadableLine(reason), 220)), e)
	}
	// The zone's own name servers, asked straight from inside, not
	// answering: the resolvers answer SERVFAIL because the names'
	// authoritative servers are unreachable, not because the path to the
	// resolvers is broken.
	if ns, line := authoritativeProbe(ev.Commands, zone, names); ns != "" {
		f.setFact("authoritative", ns)
		f.setFact("authoritative_line", line)
		f.Evidence = append(f.Evidence, fmt.Sprintf("query of %s's name server %s from a pod: %q", orWord(zone, "the zone"), ns, line))
	}
	// Why: a route table listed that covers none of the upstreams.
	if r, id := missingRoute(ev.Commands, addrs); r != "" {
		f.setFact("route", r)
		f.setFact("route_table", id)
		f.setFact("why", r)
		f.Evidence = append(f.Evidence, r)
	}
	if f.fact("probe") != "" || f.fact("why") != "" || f.fact("authoritative") != "" {
		f.Weight = 0.95
	}
	// Without a route read, a change of the path near the onset says why;
	// with neither, the upstream is known unreachable, not why.
	if f.fact("why") == "" && !pathChangeBefore(ev.Changes, f.Time, f.fact("route_table")) {
		f.setFact("state_only", "true")
	}
	f.Summary = fmt.Sprintf("%s's forwards of %s to %s fail (upstream resolvers unreachable)", server, orWord(zone, "a zone"), orWord(strings.Join(addrs, ", "), "its upstream"))
	return []Finding{f}
}

// upstreamFailure reads a DNS server's failed forward: the name asked and
// the upstream that did not answer ("" when the line is not one).
func upstreamFailure(l string) (name, upstream string) {
	if m := findSubmatch(upstreamErrRE, l); m != nil {
		if m[1] != "" {
			return strings.ToLower(m[1]), m[2]
		}
		return strings.ToLower(m[4]), m[5]
	}
	if m := findSubmatch(zoneFailedRE, l); m != nil {
		return strings.ToLower(m[1]), "zone " + strings.ToLower(m[2])
	}
	return "", ""
}

// commonZone is the longest domain suffix (at least two labels) that all
// names share; for one name, the name without its first label.
func commonZone(names []string) string {
	if len(names) == 0 {
		return ""
	}
	split := func(n string) []string { return strings.Split(strings.TrimSuffix(n, "."), ".") }
	suffix := split(names[0])
	if len(names) == 1 {
		if len(suffix) <= 2 {
			return strings.Join(suffix, ".")
		}
		return strings.Join(suffix[1:], ".")
	}
	for _, n := range names[1:] {
		l := split(n)
		k := 0
		for k < len(suffix) && k < len(l) && suffix[len(suffix)-1-k] == l[len(l)-1-k] {
			k++
		}
		suffix = suffix[len(suffix)-k:]
	}
	if len(suffix) < 2 {
		return ""
	}
	return strings.Join(suffix, ".")
}

// withoutSearchExpansions drops the names a resolver's search list made of
// another name ("sftp.example.net.ec2.internal",
// "api.example.com.svc.cluster.local" beside "api.example.com"): they are
// the same lookup, not another name of the zone.
func withoutSearchExpansions(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.ContainsFunc(names, func(o string) bool { return o != n && strings.HasPrefix(n, strings.TrimSuffix(o, ".")+".") }) {
			out = append(out, n)
		}
	}
	return out
}

func uniqueNames(ns []string) []string {
	var out []string
	for _, n := range ns {
		out = appendNew(out, n)
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("%d more", len(out)-4))
	}
	return out
}

// zoneCallers names the workloads whose logs name a host under zone (or
// one of the names) and that failed: a DNS failure, a failed Job, a crash.
// onset is their first failure.
func zoneCallers(ev *Gathered, found []Finding, zone string, names []string, server string) (callers []string, onset time.Time, ns string) {
	mentions := func(s string) bool {
		s = strings.ToLower(s)
		if zone != "" && strings.Contains(s, "."+zone) {
			return true
		}
		return slices.ContainsFunc(names, func(n string) bool { return strings.Contains(s, n) })
	}
	named := map[string]bool{}
	var logged []string
	// The logs of a workload kubectl printed without naming the pod
	// (kubectl logs job/NAME, deploy/NAME) are kept as text: a failure to
	// resolve or reach one of the names there makes the workload (a Job's
	// CronJob) a caller.
	for _, c := range ev.Commands {
		kind, name, ok := strings.Cut(c.Target, "/")
		if !ok || c.Exec || c.Debug || !strings.Contains(c.Command, " logs ") {
			continue
		}
		if k := strings.ToLower(kind); k == "job" || k == "jobs" || strings.HasPrefix(k, "job.") {
			name = orWord(cronJobOf(name), name)
		}
		for _, l := range c.Lines {
			if mentions(l) && matchLine(connectFailRE, l) {
				named[name] = true
				logged = appendNew(logged, name)
				break
			}
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Subject == server || matchLine(dnsServerNameRE, set.Subject) {
			continue
		}
		for _, t := range set.Templates {
			if mentions(t.Example) || mentions(t.Last) {
				named[set.Subject] = true
				break
			}
		}
	}
	for i := range found {
		f := &found[i]
		who := orWord(f.fact("caller"), f.Subject)
		if who == server || matchLine(dnsServerNameRE, who) {
			continue
		}
		dnsLine := f.Kind == KindDNS || Kind(f.fact("line_kind")) == KindDNS
		if !dnsLine && !(named[who] && (f.Kind == KindJobFailed || f.Kind == KindCrashLoop || f.Kind == KindLogErrors)) {
			continue
		}
		if !named[who] && !mentions(f.fact("line")) && !mentions(f.fact("last_log")) {
			continue
		}
		callers = appendNew(callers, who)
		if dnsLine || f.Kind == KindJobFailed {
			onset = earliest(onset, f.Time)
			if ns == "" {
				ns = f.Namespace
			}
		}
	}
	// The failed Jobs of a caller that logs the zone's names: their runs
	// failing are the consequence, the first one's start the onset.
	for i := range ev.K8s.Jobs {
		j := &ev.K8s.Jobs[i]
		failed := false
		for _, c := range j.Status.Conditions {
			failed = failed || c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue
		}
		if !failed {
			continue
		}
		for _, who := range slices.Sorted(maps.Keys(named)) {
			if strings.HasPrefix(j.Name, who+"-") {
				callers = appendNew(callers, who)
				t := j.CreationTimestamp.Time
				if j.Status.StartTime != nil {
					t = earliest(t, j.Status.StartTime.Time)
				}
				if ev.Window.recent(t) {
					onset = earliest(onset, t)
				}
				ns = orWord(ns, j.Namespace)
			}
		}
	}
	// A workload that logs the zone's names and fails to connect or
	// resolve is a caller too, even without a finding of its own.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if !named[set.Subject] || slices.Contains(callers, set.Subject) {
			continue
		}
		for _, t := range set.Templates {
			if matchLine(connectFailRE, t.Example+" "+t.Last) {
				callers = appendNew(callers, set.Subject)
				break
			}
		}
	}
	for _, who := range logged {
		callers = appendNew(callers, who)
	}
	return callers, onset, ns
}

// connectFailRE is a line saying a connection to a named host failed.
var connectFailRE = regexp.MustCompile(`(?i)could not connect|cannot connect|can't connect|failed to connect|unable to connect|connection (?:error|failed)|name resolution|no such host|unknown ?host|EAI_AGAIN|NXDOMAIN|SERVFAIL`)

// upstreamProbe finds a query of one of the upstreams in a transcript
// (dig @IP, nslookup NAME IP) that got no answer.
func upstreamProbe(cmds []evidence.CommandOutput, addrs []string) (fact, ev string) {
	for _, c := range cmds {
		server := ""
		for _, l := range append([]string{c.Run}, c.Lines...) {
			if m := findSubmatch(digServerRE, l); m != nil {
				server = m[1] + m[2]
				continue
			}
			if server != "" && slices.Contains(addrs, server) && matchLine(noAnswerRE, l) {
				line := strings.TrimLeft(strings.TrimSpace(l), "; ")
				return fmt.Sprintf("a query sent straight to %s from inside the cluster gets no answer (%q)", server, line),
					fmt.Sprintf("query of %s from a pod: %q", server, line)
			}
		}
	}
	return "", ""
}

var (
	// digAtHostRE is a dig of a name sent to a server given by host name
	// ("dig +time=3 name @ns1.example.net", "dig @ns1.example.net name").
	digAtHostRE = regexp.MustCompile(`(?i)\bdig\b([^;|&]*)`)
	atHostRE    = regexp.MustCompile(`@([a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})\.?(?:[\s'"]|$)`)
)

// authoritativeProbe finds, in one transcript command, the zone's name
// servers listed (an NS answer) and a dig of a name under the zone sent
// straight to one of them that got no answer: the host asked and the
// line that says so.
func authoritativeProbe(cmds []evidence.CommandOutput, zone string, names []string) (host, line string) {
	if zone == "" {
		return "", ""
	}
	under := func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, " "+zone) || strings.Contains(s, "."+zone) || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(s, n) })
	}
	for _, c := range cmds {
		var asked []string
		for _, l := range append([]string{c.Run}, c.Lines...) {
			for _, m := range findAllSubmatch(digAtHostRE, l, -1) {
				if h := findSubmatch(atHostRE, m[1]+" "); h != nil && under(strings.ReplaceAll(m[1], "@"+h[1], "")) {
					asked = appendNew(asked, strings.ToLower(h[1]))
				}
			}
		}
		if len(asked) == 0 {
			continue
		}
		listed := ""
		for _, l := range c.Lines {
			f := strings.Fields(strings.ToLower(l))
			if len(f) > 0 && slices.Contains(asked, strings.TrimSuffix(f[len(f)-1], ".")) && (len(f) == 1 || strings.Contains(l, "NS")) {
				listed = strings.TrimSuffix(f[len(f)-1], ".")
				break
			}
		}
		if listed == "" {
			continue
		}
		for _, l := range c.Lines {
			if matchLine(noAnswerRE, l) {
				return listed, strings.TrimLeft(strings.TrimSpace(l), "; ")
			}
		}
	}
	return "", ""
}

// missingRoute finds a route listing (a cloud route table, a transit
// gateway's, a host's) whose routes cover none of the upstreams: the
// traffic to them has no path. A default route covers everything.
func missingRoute(cmds []evidence.CommandOutput, addrs []string) (fact, table string) {
	var ips []netip.Addr
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err == nil {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 {
		return "", ""
	}
	for _, c := range cmds {
		cmd := c.Command + " " + c.Run
		if !matchLine(routeCommandRE, cmd) {
			continue
		}
		var prefixes []netip.Prefix
		var shown []string
		for _, l := range c.Lines {
			if strings.HasPrefix(strings.TrimSpace(l), "default ") {
				prefixes = append(prefixes, netip.MustParsePrefix("0.0.0.0/0"))
			}
			for _, m := range findAllString(cidrRE, l, -1) {
				p, err := netip.ParsePrefix(m)
				if err != nil {
					continue
				}
				prefixes = append(prefixes, p)
				shown = appendNew(shown, m)
			}
		}
		if len(shown) == 0 {
			continue
		}
		covered := false
		for _, p := range prefixes {
			for _, ip := range ips {
				if p.Contains(ip) {
					covered = true
				}
			}
		}
		if covered {
			continue
		}
		table = ""
		if m := findSubmatch(routeTableIDRE, cmd); m != nil {
			table = m[1]
		}
		where := "the route table listed"
		if table != "" {
			where = "route table " + table
			if strings.HasPrefix(table, "tgw-") {
				where = "transit gateway route table " + table
			}
		}
		return fmt.Sprintf("no route in %s covers %s (its routes: %s)", where, strings.Join(addrs, ", "), strings.Join(shown, ", ")), table
	}
	return "", ""
}

// pathChangeBefore reports whether a change of the network path to outside
// resolvers was made in the hour before onset.
func pathChangeBefore(changes []evidence.Change, onset time.Time, table string) bool {
	for _, c := range changes {
		t := strings.ToLower(c.Service + " " + c.Description)
		if strings.Contains(strings.ToLower(c.Kind), "deploy") {
			continue
		}
		if !c.Timestamp.After(onset) && onset.Sub(c.Timestamp) <= time.Hour && (matchLine(upstreamChangeRE, t) || table != "" && strings.Contains(t, table)) {
			return true
		}
	}
	return false
}
