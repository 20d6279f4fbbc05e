package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A mesh sidecar that refuses a destination its configuration does not
// know. Istio's sidecar only forwards to the hosts in its registry when
// the mesh's outboundTrafficPolicy is REGISTRY_ONLY (an external host
// needs a ServiceEntry), and only to the hosts a namespace's Sidecar
// resource lists in its egress (other namespaces' Services included).
// A call to any other host never leaves the pod: plain TCP and TLS go to
// BlackHoleCluster (the access log's "- - -" line with flag UH and
// BlackHoleCluster, the client's ECONNRESET during the TLS handshake), and
// HTTP is answered by the proxy's own block_all route with 502
// direct_response. The destination is healthy and sees nothing; the
// cause is the egress lockdown, the ServiceEntry allowlist or the Sidecar
// that missed the host, not the caller's code nor the provider.

// KindMeshEgressBlocked is a caller's sidecar dropping calls to a host
// its mesh configuration does not let it reach.
const KindMeshEgressBlocked Kind = "mesh_egress_blocked"

var (
	// meshBlackholeRE is a call the sidecar black-holed or answered from
	// its block_all route.
	meshBlackholeRE = regexp.MustCompile(`\bBlackHoleCluster\b|\bblock_all\b`)
	// meshRegistryOnlyRE is the mesh's outbound policy locked down.
	meshRegistryOnlyRE = regexp.MustCompile(`\bREGISTRY_ONLY\b`)
	// meshEgressChangeRE is a change to what a sidecar may reach.
	meshEgressChangeRE = regexp.MustCompile(`(?i)outboundTrafficPolicy|REGISTRY_ONLY|service ?entr(?:y|ies)|\bsidecar\b|\begress\b|allowlist|lockdown`)
	// meshAuthorityRE is the authority field of an Istio access log line
	// ("fraud-check.risk.svc.cluster.local:8080").
	meshAuthorityRE = regexp.MustCompile(`"([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+(?::\d+)?)"`)
	// meshSNIRE is the requested server name at the end of a TCP proxy
	// line ("... 10.60.2.45:51337 api.addressy.com -").
	meshSNIRE = regexp.MustCompile(`\s([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+)\s+\S+\s*$`)
)

var meshEgressBlocked = &mechanism{
	kind:   KindMeshEgressBlocked,
	class:  classCause,
	label:  "the caller's mesh sidecar drops calls to a host outside its registry (REGISTRY_ONLY, Sidecar egress)",
	detect: detectMeshEgressBlocked,
	// Only a change to what the sidecars may reach fits; the caller's
	// deploy naming a new host is the victim of the allowlist.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && matchLine(meshEgressChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		dest := orWord(h.fact("destination"), "the destination")
		how := "sends them to BlackHoleCluster"
		if h.fact("block_all") != "" {
			how = "answers them itself with 502 from its block_all route (direct_response)"
		}
		d := fmt.Sprintf("the Istio sidecar of %s drops its outbound calls to %s and %s: the host is not in the registry of %s's sidecar", h.Subject, dest, how, h.Subject)
		var why []string
		if h.fact("registry_only") != "" {
			why = append(why, "the mesh's outboundTrafficPolicy is REGISTRY_ONLY")
		}
		if s := h.fact("sidecar"); s != "" {
			why = append(why, "the namespace's Sidecar resource limits its egress hosts ("+s+") and does not list "+dest)
		}
		if h.fact("external") != "" {
			if s := h.fact("entries"); s != "" {
				why = append(why, fmt.Sprintf("no ServiceEntry names %s (the egress allowlist has %s)", dest, s))
			} else {
				why = append(why, "no ServiceEntry names "+dest)
			}
		}
		if len(why) > 0 {
			d += " (" + strings.Join(why, "; ") + ")"
		}
		d += fmt.Sprintf("; %s itself is not at fault", dest)
		d += h.changeClause("the lockdown came with", 180)
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		dest := orWord(h.fact("destination"), "the destination")
		if h.fact("external") != "" {
			r.high("Add a ServiceEntry for %s (hosts, ports, resolution DNS, location MESH_EXTERNAL) so %s's sidecar may reach it, or fix the allowlist entry that names an old host", dest, h.Subject)
		} else {
			r.high("Add %s's namespace (ns/* or the host) to the egress hosts of the Sidecar resource that applies to %s", dest, h.Subject)
		}
		r.med("Check with istioctl proxy-config cluster on %s's pod that %s has a cluster, and watch its access log for BlackHoleCluster and block_all", h.Subject, dest)
		r.low("Before a mesh egress lockdown, list every host the workloads call (access logs with PassthroughCluster) and generate the allowlist from them")
	},
}

func detectMeshEgressBlocked(ev *Gathered, _ []Finding) []Finding {
	type blocked struct {
		f     *Finding
		dests []string
	}
	bySubject := map[string]*blocked{}
	var order []string
	for m := range incidentMatches(ev, meshBlackholeRE) {
		dest := ""
		blockAll := strings.Contains(m.line, "block_all")
		if blockAll {
			if r, ok := parseRequestLine(m.line); ok {
				dest = upstreamName(r.Host)
			}
			if am := findSubmatch(meshAuthorityRE, m.line); dest == "" && am != nil {
				dest = upstreamName(am[1])
			}
		} else if sm := findSubmatch(meshSNIRE, m.line); sm != nil {
			dest = sm[1]
		}
		if h, p, cut := strings.Cut(dest, ":"); cut && isDigits(p) {
			dest = h
		}
		if dest == "" || dest == m.set.Subject {
			continue
		}
		b := bySubject[m.set.Subject]
		if b == nil {
			f := &Finding{Kind: KindMeshEgressBlocked, Subject: m.set.Subject, Namespace: m.set.Namespace, Object: "sidecar of " + m.set.Subject,
				Time: earliest(m.t.FirstSeen, m.t.FirstIncident), Severity: SevCritical, Weight: 0.9, Source: m.set.Origin, Facts: map[string]string{}}
			f.setFact("line", m.line)
			b = &blocked{f: f}
			bySubject[m.set.Subject] = b
			order = append(order, m.set.Subject)
		}
		f := b.f
		if at := earliest(m.t.FirstSeen, m.t.FirstIncident); !at.IsZero() && at.Before(f.Time) {
			f.Time = at
		}
		if blockAll {
			f.setFact("block_all", "yes")
		}
		if !slices.Contains(b.dests, dest) {
			b.dests = append(b.dests, dest)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's sidecar dropped %d calls to %s (%s): %s", m.set.Subject, m.t.Incident, dest, map[bool]string{true: "block_all route, 502 direct_response", false: "BlackHoleCluster"}[blockAll], quote(ReadableLine(m.line), 240)))
	}
	var out []Finding
	for _, s := range order {
		b := bySubject[s]
		f := b.f
		dest := b.dests[0]
		f.setFact("destination", dest)
		short := ShortHost(dest)
		if short != dest || !strings.Contains(dest, ".") {
			f.Related = append(f.Related, short)
		} else {
			f.setFact("external", "yes")
		}
		meshEgressCommands(ev.Commands, f, dest)
		for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
			for _, c := range cs {
				if c.Kind == "deploy" || !matchLine(meshEgressChangeRE, c.Description) || c.Timestamp.After(f.Time.Add(time.Minute)) {
					continue
				}
				f.setFact("change", fmt.Sprintf("the change of %s at %s: %s", c.Service, ts(c.Timestamp), quote(c.Description, 180)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("the change of %s at %s restricted the sidecars' egress: %s", c.Service, ts(c.Timestamp), quote(c.Description, 200)))
				if matchLine(meshRegistryOnlyRE, c.Description) {
					f.setFact("registry_only", "yes")
				}
			}
		}
		f.Summary = fmt.Sprintf("the sidecar of %s drops calls to %s (not in its registry)", s, dest)
		out = append(out, *f)
	}
	return out
}

// meshEgressCommands reads what the commands handed over say of the
// sidecar's registry: the mesh config's REGISTRY_ONLY, the Sidecar
// resources' egress hosts, the ServiceEntries' hosts.
func meshEgressCommands(cmds []evidence.CommandOutput, f *Finding, dest string) {
	var entries []string
	for _, c := range cmds {
		cmd := strings.ToLower(c.Command)
		for _, l := range c.Lines {
			if matchLine(meshRegistryOnlyRE, l) && f.fact("registry_only") == "" {
				f.setFact("registry_only", "yes")
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 120), strings.TrimSpace(l)))
			}
		}
		switch {
		case strings.Contains(cmd, "get sidecar"):
			var hosts []string
			for _, l := range c.Lines {
				for _, w := range strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '[' || r == ']' || r == ',' || r == '"' || r == '\t' }) {
					if strings.HasSuffix(w, "/*") || strings.Count(w, "/") == 1 && strings.Contains(w, ".") {
						hosts = append(hosts, w)
					}
				}
			}
			if len(hosts) > 0 && f.fact("sidecar") == "" {
				f.setFact("sidecar", strings.Join(hosts, ", "))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: egress hosts %s", truncate(c.Command, 120), strings.Join(hosts, ", ")))
			}
		case strings.Contains(cmd, "serviceentr") || strings.Contains(cmd, " se "):
			for _, l := range c.Lines {
				for _, w := range strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '[' || r == ']' || r == ',' || r == '"' || r == '\t' }) {
					if strings.Count(w, ".") >= 1 && !strings.Contains(w, "/") && !matchLine(ipLikeRE, w) && w != dest && !slices.Contains(entries, w) && strings.ContainsAny(w, "abcdefghijklmnopqrstuvwxyz") && !strings.HasSuffix(w, ".svc.cluster.local") {
						entries = append(entries, w)
					}
				}
			}
		}
	}
	if len(entries) > 0 {
		f.setFact("entries", strings.Join(entries, ", "))
	}
}
