package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindDNSNegativeCache: a resolver answering NXDOMAIN from its cache for
// a name that exists again. The record was missing for a moment (deleted
// and re-created by a Terraform move, a zone migration, a DNS provider's
// replace) and a query in that moment cached the denial: the cluster DNS
// (CoreDNS's cache plugin, NodeLocal DNSCache, dnsmasq, systemd-resolved)
// keeps serving NXDOMAIN for as long as its negative TTL (the SOA's
// minimum, capped by the cache's denial TTL), while the authoritative
// servers and any resolver that did not cache it resolve the name. The
// callers fail with "Name or service not known" although dig from a
// laptop works.
const KindDNSNegativeCache Kind = "dns_negative_cache"

var dnsNegativeCache = &mechanism{
	kind:           KindDNSNegativeCache,
	class:          classCause,
	label:          "NXDOMAIN served from a resolver's negative cache",
	detect:         detectDNSNegativeCache,
	fitsChange:     changeSays(recordGoneRE),
	strictTriggers: true,
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindDNS && strings.Contains(strings.ToLower(f.fact("line")+" "+strings.Join(f.Evidence, " ")), strings.ToLower(h.fact("name")))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot resolve %s because the cluster's resolver (%s) answers NXDOMAIN from its negative cache while the name resolves again elsewhere (%s): a moment when the record did not exist was cached as a denial, and the resolver keeps serving that cached NXDOMAIN until its negative TTL runs out",
			h.Subject, h.fact("name"), h.fact("cached_at"), h.fact("resolves_at"))
		d += h.wrapped("; the denial carries the zone's SOA (", "soa", ")") + h.clause("; the record was removed and re-created by the ", "record_change")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Flush the cached denial of %s: restart or reload the cluster DNS pods (kubectl -n kube-system rollout restart deployment coredns) or the node-local cache", h.fact("name"))
		r.med("Cap negative caching (CoreDNS cache plugin: denial with a short TTL) and lower the zone SOA's negative TTL (its last field)")
		r.low("Move or rename DNS records with a moved block or create-before-destroy so the name never stops existing")
	},
}

var (
	digStatusRE    = regexp.MustCompile(`->>HEADER<<- opcode: \w+, status: (\w+)`)
	digAnswerRE    = regexp.MustCompile(`^([A-Za-z0-9_.-]+\.)\s+\d+\s+IN\s+(A|AAAA|CNAME)\s+\S+`)
	negDigServerRE = regexp.MustCompile(`^;; SERVER: ([0-9a-fA-F.:]+)`)
	digSOARE       = regexp.MustCompile(`^(\S+)\s+(\d+)\s+IN\s+SOA\s+(.+)$`)
	recordGoneRE   = regexp.MustCompile(`(?i)record[^.]{0,60}(destroy|delet|remov|re-?creat|replac)|(destroy|delet|remov)[^.]{0,40}record|route53_record|dns record`)
)

type digAnswer struct {
	name, server, status, soa string
	answers                   int
	cluster                   bool
}

// readDig reads one dig output: the name asked, the server (from @ or
// its SERVER line), the status and whether it answered.
func readDig(c evidence.CommandOutput) (digAnswer, bool) {
	fields := strings.Fields(c.Command)
	i := slices.Index(fields, "dig")
	if i < 0 {
		return digAnswer{}, false
	}
	var a digAnswer
	for _, f := range fields[i+1:] {
		switch {
		case strings.HasPrefix(f, "@"):
			a.server = strings.TrimPrefix(f, "@")
		case strings.HasPrefix(f, "+") || strings.HasPrefix(f, "-"):
		case a.name == "" && strings.Contains(f, "."):
			a.name = strings.ToLower(strings.TrimSuffix(f, "."))
		}
	}
	if a.name == "" {
		return digAnswer{}, false
	}
	a.cluster = c.Exec || strings.Contains(c.Command, "kubectl run") || strings.Contains(c.Command, "kubectl exec")
	for _, l := range c.Lines {
		if m := findSubmatch(digStatusRE, l); m != nil {
			a.status = m[1]
		}
		if m := findSubmatch(negDigServerRE, l); m != nil && a.server == "" {
			a.server = m[1]
		}
		if m := findSubmatch(digAnswerRE, l); m != nil && strings.EqualFold(strings.TrimSuffix(m[1], "."), a.name) {
			a.answers++
		}
		if m := findSubmatch(digSOARE, l); m != nil {
			a.soa = strings.Join(strings.Fields(l), " ")
		}
	}
	if a.status == "" && a.answers > 0 {
		a.status = "NOERROR"
	}
	return a, a.status != ""
}

// detectDNSNegativeCache pairs a dig answered NXDOMAIN with a dig of the
// same name that resolved through another resolver.
func detectDNSNegativeCache(ev *Gathered, found []Finding) []Finding {
	var digs []digAnswer
	for _, c := range ev.Commands {
		if a, ok := readDig(c); ok {
			digs = append(digs, a)
		}
	}
	for _, nx := range digs {
		if nx.status != "NXDOMAIN" {
			continue
		}
		var ok *digAnswer
		for i := range digs {
			d := &digs[i]
			if d.name == nx.name && d.status == "NOERROR" && d.answers > 0 && d.server != nx.server {
				ok = d
				break
			}
		}
		if ok == nil {
			continue
		}
		subject, at := ev.Scope.Service, time.Time{}
		for _, f := range found {
			if f.Kind == KindDNS && strings.Contains(strings.ToLower(f.fact("line")+" "+strings.Join(f.Evidence, " ")), nx.name) {
				if at.IsZero() || f.Time.Before(at) {
					at = f.Time
					if subject == "" {
						subject = f.Subject
					}
				}
			}
		}
		if subject == "" {
			subject = nx.name
		}
		if at.IsZero() {
			at = ev.Window.Start
		}
		f := Finding{Kind: KindDNSNegativeCache, Subject: subject, Object: "name " + nx.name, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
		f.Related = append(f.Related, "coredns")
		f.setFact("name", nx.name)
		f.setFact("cached_at", orWord(nx.server, "the cluster DNS"))
		f.setFact("resolves_at", orWord(ok.server, "the resolver of a machine outside the cluster"))
		f.setFact("soa", nx.soa)
		f.setFact("why", fmt.Sprintf("%s answers NXDOMAIN for %s while %s resolves it", orWord(nx.server, "the cluster DNS"), nx.name, orWord(ok.server, "another resolver")))
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("dig %s through %s: status NXDOMAIN%s", nx.name, orWord(nx.server, "the cluster DNS"), map[bool]string{true: ", authority " + nx.soa, false: ""}[nx.soa != ""]),
			fmt.Sprintf("dig %s through %s: NOERROR with %d answer(s)", nx.name, orWord(ok.server, "another resolver"), ok.answers))
		label := strings.SplitN(nx.name, ".", 2)[0]
		for _, c := range ev.Changes {
			t := strings.ToLower(c.Description)
			if c.Timestamp.After(at.Add(2*time.Minute)) || !matchLine(recordGoneRE, t) || !strings.Contains(t, label) {
				continue
			}
			f.setFact("record_change", fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
			break
		}
		f.Summary = fmt.Sprintf("%s answers NXDOMAIN for %s from its negative cache; other resolvers resolve it", orWord(nx.server, "the cluster DNS"), nx.name)
		return []Finding{f}
	}
	return nil
}
