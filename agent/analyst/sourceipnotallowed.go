package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A provider that only accepts calls from the source addresses on its
// allowlist (a bank's or a partner's API, a SaaS with IP access
// management, a managed database's access list) refuses a caller whose
// outbound address changed: the cluster's NAT took new addresses (a Cloud
// NAT switched to automatic allocation, a NAT gateway recreated, nodes
// given public addresses), so the calls leave from an address the
// provider never saw. The provider says so in its answer (403
// IP_NOT_ALLOWED, "Source IP … is not on the allowlist", "Client with IP
// address '…' is not allowed to access the server", "IP … is not allowed
// to access Snowflake", GitHub's "has an IP allow list enabled"). The
// credentials are fine and the provider changed nothing: the cause is the
// egress address, and the change that moved it.

// KindSourceIPNotAllowed is a caller refused by a provider because its
// calls come from a source address the provider's allowlist lacks.
const KindSourceIPNotAllowed Kind = "source_ip_not_allowed"

var (
	// sourceIPRefusedRE is a provider refusing the caller's address.
	sourceIPRefusedRE = regexp.MustCompile(`(?i)\bIP_(?:ADDRESS_)?NOT_(?:ALLOWED|PERMITTED|WHITELISTED|ALLOWLISTED|AUTHORI[SZ]ED|ON_(?:ACCESS_?|ALLOW_?|WHITE_?)LIST)\b|\bIP\b[^;]{0,60}?\bnot (?:on|in) (?:the |your |an? |its )?(?:IP )?(?:allow ?-?list|white ?-?list|access ?list|allowed (?:IP|address|list|range))|\bIP\b(?: address)?\W{1,3}[0-9a-f.:]{7,39}\W{0,3} (?:is )?not (?:allowed|permitted|authori[sz]ed|whitelisted|allowlisted)\b|\bhas an IP allow list enabled\b`)
	// sourceIPRE is the address named after "IP" in a refusal.
	sourceIPRE = regexp.MustCompile(`(?i)\bIP\b(?: address)?\W{1,3}(\d{1,3}(?:\.\d{1,3}){3})\b`)
	// anyIPv4RE is an IPv4 address anywhere.
	anyIPv4RE = regexp.MustCompile(`\b(\d{1,3}(?:\.\d{1,3}){3})\b`)
	// egressIPLookupRE is a command that asks what address calls leave
	// from (an echo service).
	egressIPLookupRE = regexp.MustCompile(`(?i)ifconfig\.(?:me|co|io)|icanhazip|ipify|ipinfo\.io|checkip\.amazonaws|ident\.me|myip|whatismyip`)
	// egressAddrChangeRE is a change to the addresses calls leave from.
	egressAddrChangeRE = regexp.MustCompile(`(?i)\bnat\b|cloud[- _]?nat|nat[- _]?gateway|\bnat[-_]|\begress\b|static (?:ip|address)|elastic ip|\beip\b|public ip|outbound ip|source ip|\bnat_?ips?\b|reserved (?:ip|address)|outbound(?:_| )type|snat`)
	// natAutoRE is a Cloud NAT that allocates its addresses itself.
	natAutoRE = regexp.MustCompile(`(?i)nat_?ip_?allocate_?option\W+AUTO_ONLY`)
	// providerURLRE is an external host a caller's log names.
	providerURLRE = regexp.MustCompile(`(?i)https?://([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+)`)
)

var sourceIPNotAllowed = &mechanism{
	kind:  KindSourceIPNotAllowed,
	class: classCause,
	label: "the provider refuses the caller's source IP (not on its allowlist)",
	lines: sourceIPRefusedRE, lineWeight: 0.85,
	detect: detectSourceIPNotAllowed,
	// Only a change to the outbound addresses moves them; a deploy of the
	// caller does not.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && matchLine(egressAddrChangeRE, changeText(c))
	},
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject != h.Subject {
			return false
		}
		switch f.Kind {
		case KindAuth, KindLogErrors, KindErrorRate, KindJobFailed, KindCrashLoop, KindAppCrash:
			return true
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		prov := orWord(h.fact("provider"), "the provider")
		ip := h.fact("source_ip")
		d := fmt.Sprintf("%s refuses the calls of %s because of their source IP, not their credentials", prov, h.Subject)
		if ip != "" {
			d += fmt.Sprintf(": they leave from %s, which is not on %s's allowlist of source addresses", ip, prov)
		} else {
			d += fmt.Sprintf(": they leave from an address that is not on %s's allowlist", prov)
		}
		d += h.quoteClause(" — ", "line", 220)
		if e := h.fact("egress_ip"); e != "" && e == ip {
			d += fmt.Sprintf(". %s is the cluster's outbound (egress) IP now: %s", ip, h.fact("egress_seen"))
		}
		if n := h.fact("nat_auto"); n != "" {
			d += fmt.Sprintf(". The Cloud NAT %s allocates its NAT IPs itself (natIpAllocateOption AUTO_ONLY), so the outbound address is a new automatic one", n)
		}
		if r := h.fact("reserved"); r != "" {
			d += fmt.Sprintf("; the static addresses reserved for it sit unused (RESERVED, not IN_USE): %s", r)
		}
		if h.Trigger == nil {
			d += h.clause("; the outbound address changed with ", "change")
		}
		d += ". The provider's allowlist still holds the old addresses"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		prov := orWord(h.fact("provider"), "the provider")
		if h.fact("reserved") != "" || h.fact("nat_auto") != "" {
			r.high("Put the NAT back on the reserved static addresses (manual allocation, MANUAL_ONLY with natIps %s) so %s's calls leave from the addresses %s allows, then re-run the failed work", orWord(h.fact("reserved_ips"), "the reserved ones"), h.Subject, prov)
		} else {
			r.high("Make %s's calls leave from an address on %s's allowlist again (the previous static egress IPs), or have %s add the new source IP %s; then re-run the failed work", h.Subject, prov, prov, orWord(h.fact("source_ip"), ""))
		}
		if h.Trigger != nil {
			r.med("Fix the change that moved the outbound address (%s) so that it keeps the static egress IPs (pin the NAT IPs in the module's inputs)", h.Trigger.Subject)
		}
		r.med("Check the outbound address from a pod (curl ifconfig.me) against the addresses %s allows", prov)
		r.low("Alert on the provider's IP refusals (IP_NOT_ALLOWED) and on a change of the cluster's egress IPs; keep the allowlisted addresses in the infrastructure code beside the NAT")
	},
}

// detectSourceIPNotAllowed finds callers a provider refuses for their
// source address, with what the commands say of the egress address.
func detectSourceIPNotAllowed(ev *Gathered, _ []Finding) []Finding {
	var by keyed[Finding]
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := templateLine(t, sourceIPRefusedRE)
			if line == "" || set.Subject == "" {
				continue
			}
			f := by.get(set.Subject)
			at := earliest(t.FirstSeen, t.FirstIncident)
			if f.Kind == "" {
				*f = Finding{Kind: KindSourceIPNotAllowed, Subject: set.Subject, Namespace: set.Namespace, Object: set.Source,
					Time: at, Severity: SevCritical, Weight: 0.9, Source: set.Origin, Facts: map[string]string{}}
				f.setFact("line", line)
			} else if !at.IsZero() && (f.Time.IsZero() || at.Before(f.Time)) {
				f.Time = at
			}
			if f.fact("source_ip") == "" {
				f.setFact("source_ip", refusedIP(line))
			}
			if f.fact("provider") == "" {
				f.setFact("provider", providerOfSet(set))
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %s of its source address from %s: %s", set.Source, plural(t.Incident, "refusal", "refusals"), hm(at), quote(ReadableLine(line), 240)))
		}
	}
	var out []Finding
	for _, s := range by.order {
		f := by.m[s]
		earlierRefusals(ev, f)
		sourceIPCommands(ev.Commands, f)
		for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
			for _, c := range cs {
				if c.Kind == "deploy" || !matchLine(egressAddrChangeRE, c.Description+" "+c.Service) || c.Timestamp.After(f.Time.Add(time.Minute)) || c.Timestamp.Before(f.Time.Add(-72*time.Hour)) {
					continue
				}
				f.setFact("change", fmt.Sprintf("the change of %s at %s: %s", c.Service, ts(c.Timestamp), quote(c.Description, 180)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("the change of %s at %s, before the first refusal: %s", c.Service, ts(c.Timestamp), quote(c.Description, 200)))
			}
		}
		what := "its source IP"
		if ip := f.fact("source_ip"); ip != "" {
			what = "source IP " + ip
		}
		f.Summary = fmt.Sprintf("%s refuses %s's calls from %s (not on its allowlist)", orWord(f.fact("provider"), "the provider"), s, what)
		out = append(out, *f)
	}
	return out
}

// earlierRefusals moves f's onset back to the first refusal that a log
// kept as text shows (kubectl logs job/NAME of a run whose pod is gone,
// read with no pod to tie it to), when that log is of f's subject.
func earlierRefusals(ev *Gathered, f *Finding) {
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, " logs ") {
			continue
		}
		_, name, _ := strings.Cut(c.Target, "/")
		if name == "" || name != f.Subject && workloadOfPodName(name) != f.Subject {
			continue
		}
		for _, l := range c.Lines {
			if !matchLine(sourceIPRefusedRE, l) {
				continue
			}
			at := evidence.ParseLogTime(l, ev.Window.End)
			if at.IsZero() || !at.Before(f.Time) || at.After(ev.Window.End) {
				continue
			}
			f.Time = at
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s shows the same refusal at %s: %s", truncate(strings.TrimSpace(c.Command), 100), ts(at), quote(ReadableLine(l), 200)))
			break
		}
	}
}

// refusedIP is the public address a refusal names.
func refusedIP(line string) string {
	if m := findSubmatch(sourceIPRE, line); m != nil && !privateIPv4(m[1]) {
		return m[1]
	}
	for _, m := range anyIPv4RE.FindAllStringSubmatch(line, -1) {
		if !privateIPv4(m[1]) {
			return m[1]
		}
	}
	return ""
}

// privateIPv4 reports whether ip is a private, loopback or link-local
// address (never a provider's view of the caller).
func privateIPv4(ip string) bool {
	for _, p := range []string{"10.", "127.", "192.168.", "169.254.", "0."} {
		if strings.HasPrefix(ip, p) {
			return true
		}
	}
	if strings.HasPrefix(ip, "172.") {
		var b int
		fmt.Sscanf(strings.Split(ip, ".")[1], "%d", &b)
		return b >= 16 && b < 32
	}
	return false
}

// providerOfSet is the first external host a log set's lines name.
func providerOfSet(set *LogSet) string {
	for _, t := range set.Templates {
		for _, l := range t.Lines() {
			for _, m := range providerURLRE.FindAllStringSubmatch(l, -1) {
				h := strings.ToLower(m[1])
				if strings.HasSuffix(h, ".local") || strings.HasSuffix(h, ".svc") || strings.Contains(h, ".svc.") || strings.HasSuffix(h, ".internal") || anyIPv4RE.MatchString(h) {
					continue
				}
				return h
			}
		}
	}
	return ""
}

// sourceIPCommands reads what commands say of the outbound address: an
// echo service's answer from a pod, a Cloud NAT allocating its own
// addresses, static addresses reserved but unused.
func sourceIPCommands(cmds []evidence.CommandOutput, f *Finding) {
	var reserved, reservedIPs []string
	for _, c := range cmds {
		run := c.Run + " " + c.Command
		if matchLine(egressIPLookupRE, run) {
			for _, l := range c.Lines {
				if m := findSubmatch(anyIPv4RE, strings.TrimSpace(l)); m != nil && !privateIPv4(m[1]) && f.fact("egress_ip") == "" {
					f.setFact("egress_ip", m[1])
					f.setFact("egress_seen", fmt.Sprintf("%s answers %s", truncate(strings.TrimSpace(c.Command), 120), m[1]))
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s (the address calls leave from)", truncate(strings.TrimSpace(c.Command), 120), m[1]))
				}
			}
		}
		name := ""
		auto := false
		for _, l := range c.Lines {
			tl := strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(tl, "name:"); ok && name == "" {
				name = strings.TrimSpace(v)
			}
			if matchLine(natAutoRE, tl) {
				auto = true
			}
		}
		if auto && f.fact("nat_auto") == "" {
			f.setFact("nat_auto", orWord(name, "of the cluster"))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: natIpAllocateOption: AUTO_ONLY (the NAT picks its own addresses)", truncate(strings.TrimSpace(c.Command), 120)))
		}
		if strings.Contains(strings.ToLower(c.Command), "addresses") {
			for _, l := range c.Lines {
				fs := strings.Fields(l)
				if len(fs) < 3 || fs[len(fs)-1] != "RESERVED" {
					continue
				}
				if m := findSubmatch(anyIPv4RE, l); m != nil && !privateIPv4(m[1]) && !slices.Contains(reservedIPs, m[1]) {
					reserved = append(reserved, fmt.Sprintf("%s (%s)", fs[0], m[1]))
					reservedIPs = append(reservedIPs, m[1])
				}
			}
		}
	}
	if len(reserved) > 0 {
		f.setFact("reserved", strings.Join(reserved, ", "))
		f.setFact("reserved_ips", strings.Join(reservedIPs, ", "))
		f.Evidence = append(f.Evidence, "static external addresses reserved but not in use: "+strings.Join(reserved, ", "))
	}
}
