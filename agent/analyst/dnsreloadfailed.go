package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Unreachable upstream resolvers that the DNS server's configuration no
// longer names (dnsupstream.go, one hop further). A forwarder repointed to
// new resolvers in the Corefile (or named.conf) keeps forwarding to the old
// ones when its reload of the edit failed: CoreDNS's reload plugin logs
// "Corefile changed but reload failed: plugin/forward: Corefile:30 - Error
// during parsing: unknown property 'max_fail'" and goes on serving the
// configuration it had; BIND's rndc reload says "reloading configuration
// failed". The edit looks applied (the ConfigMap reads the new
// resolvers), nothing restarts, and the day the old resolvers are switched
// off every lookup of the zone fails. The cause is the rejected reload,
// the power-off only its trigger.

var (
	// dnsReloadFailedRE is a DNS server's log of a configuration reload it
	// rejected, with the reason.
	dnsReloadFailedRE = regexp.MustCompile(`(?i)Corefile changed but reload failed:\s*(.+)|reloading configuration failed:\s*(.+)|rndc: '(?:reconfig|reload)' failed:\s*(.+)`)
	// corefileBlockRE opens a Corefile server block ("corp.internal:53 {",
	// "corp.internal {"), after cat -n's line number.
	corefileBlockRE = regexp.MustCompile(`^\s*(?:\d+\s+)?((?:[\w-]+\.)*[\w-]+\.?)(?::\d+)?\s*\{\s*$`)
	// corefileForwardRE is a forward (or proxy) plugin line and its
	// destinations.
	corefileForwardRE = regexp.MustCompile(`^\s*(?:\d+\s+)?(?:forward|proxy)\s+\S+\s+([^{]+?)\s*\{?\s*$`)
	// namedForwardersRE is named.conf's "forwarders { 10.52.0.10; 10.52.0.11; };".
	namedForwardersRE = regexp.MustCompile(`forwarders\s*\{\s*([^}]*)\}`)
)

// dnsReloadFailed reads, for a DNS server whose forwards of zone to addrs
// fail, a reload of its configuration it rejected and the resolvers that
// configuration names for the zone instead: the reason line, and the
// configured resolvers when none of addrs is among them.
func dnsReloadFailed(ev *Gathered, zone string, addrs []string) (reason, configured, evidence string) {
	look := func(l string) bool {
		if m := findSubmatch(dnsReloadFailedRE, l); m != nil && reason == "" {
			reason = strings.TrimSpace(l)
			return true
		}
		return false
	}
	for _, s := range ev.Logs {
		for _, t := range s.Templates {
			look(t.Example)
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			look(l)
		}
	}
	for _, l := range ev.RejectedReloads {
		look(l.Text)
	}
	if reason == "" {
		return "", "", ""
	}
	// The resolvers the configuration forwards the zone to now.
	for _, c := range ev.Commands {
		block := ""
		for _, l := range c.Lines {
			if m := findSubmatch(corefileBlockRE, l); m != nil {
				block = strings.TrimSuffix(strings.ToLower(m[1]), ".")
				continue
			}
			var dests []string
			if m := findSubmatch(corefileForwardRE, l); m != nil && block != "" && block != "." && zoneCovers(block, zone) {
				dests = strings.Fields(m[1])
			} else if m := findSubmatch(namedForwardersRE, l); m != nil && zone != "" && strings.Contains(strings.ToLower(strings.Join(c.Lines, "\n")), zone) {
				for _, a := range strings.Split(m[1], ";") {
					if a = strings.TrimSpace(a); a != "" {
						dests = append(dests, a)
					}
				}
			}
			if len(dests) == 0 {
				continue
			}
			for i := range dests {
				dests[i] = strings.TrimSuffix(dests[i], ":53")
			}
			if slices.ContainsFunc(addrs, func(a string) bool { return slices.Contains(dests, a) }) {
				return "", "", "" // the configuration names the failing ones: no stale forward
			}
			configured = strings.Join(dests, " ")
			evidence = fmt.Sprintf("%s: the configuration forwards %s to %s, not to %s", truncate(c.Command, 100), block, configured, strings.Join(addrs, ", "))
			return reason, configured, evidence
		}
	}
	return reason, "", ""
}

// zoneCovers reports whether a server block for block serves zone (the
// same domain, or zone a name under it).
func zoneCovers(block, zone string) bool {
	zone = strings.TrimSuffix(strings.ToLower(zone), ".")
	return zone != "" && (zone == block || strings.HasSuffix(zone, "."+block))
}
