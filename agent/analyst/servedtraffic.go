package analyst

import (
	"regexp"
	"slices"
	"strings"
	"time"
)

// Requests a workload's pods answered are what its clients got: a reading
// of its configuration that says no request can reach it (a Service whose
// targetPort its pods do not declare, endpoints derived as empty) is
// contradicted by its own access log answering clients after that moment.
// The kubelet's probes and the scrapers reach a pod directly, not through
// its Service: their requests say nothing of it.

// probePathRE is a path only probes and health checks ask for.
var probePathRE = regexp.MustCompile(`(?i)^/(?:healthz?|readyz?|livez?|ready|live|ping|metrics|status|-/(?:healthy|ready))/?$`)

// served is what the pods of a workload answered: how many requests
// logged as answered (a status below 400, from a client other than a
// probe or a scraper) and one of their lines.
type served struct {
	N       int
	Example string
	Last    time.Time
}

// servedRequests counts the requests the pods of workload wl (of
// namespace ns when known) logged as answered at or after since (within
// the incident window when since is zero).
func servedRequests(ev *Gathered, wl, ns string, since time.Time) served {
	var s served
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host || set.Origin != SrcLogs || set.Subject != wl || ns != "" && set.Namespace != "" && set.Namespace != ns {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 || !since.IsZero() && t.LastSeen.Before(since) {
				continue
			}
			line := t.Example
			if t.Last != "" {
				line = t.Last
			}
			r, ok := parseRequestLine(line)
			if !ok || r.Status < 100 || r.Status >= 400 || !clientRequest(r) {
				continue
			}
			s.N += t.Incident
			if t.LastSeen.After(s.Last) {
				s.Last, s.Example = t.LastSeen, line
			}
		}
	}
	return s
}

// clientRequest reports whether a request came from a client rather than
// from a probe, a health check or a scraper.
func clientRequest(r requestLine) bool {
	if matchLine(platformAgentRE, r.Agent) || matchLine(synthAgentRE, r.Agent) {
		return false
	}
	path, _, _ := strings.Cut(r.Path, "?")
	return r.Agent != "" || !matchLine(probePathRE, path)
}

// servesClients reports whether the pods of wl answered clients at or
// after since: at least five requests answered.
func servesClients(ev *Gathered, wl, ns string, since time.Time) (served, bool) {
	s := servedRequests(ev, wl, ns, since)
	return s, s.N >= 5
}

// dropServedEndpoints drops the findings that a Service has no ready
// endpoints when the pods its selector matches are all ready and answer
// clients in the window: the endpoints were derived from a reading (a
// named targetPort the listing did not resolve), and the clients' answered
// requests contradict it.
func dropServedEndpoints(ev *Gathered, fs []Finding) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if f.Kind != KindNoEndpoints || !servedService(ev, f) {
			out = append(out, f)
		}
	}
	return out
}

// servedService reports whether the Service of a no-endpoints finding
// selects ready pods only, of workloads that answer clients.
func servedService(ev *Gathered, f Finding) bool {
	name := strings.TrimPrefix(f.Object, "service "+f.Namespace+"/")
	for _, s := range ev.K8s.Services {
		if s.Service.Name != name || s.Service.Namespace != f.Namespace || len(s.Service.Spec.Selector) == 0 {
			continue
		}
		var wls []string
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if p.Namespace != f.Namespace || len(p.Labels) == 0 || !selectsLabels(s.Service.Spec.Selector, p.Labels) {
				continue
			}
			if !podReady(p) {
				return false
			}
			if wl := WorkloadOfPod(p); !slices.Contains(wls, wl) {
				wls = append(wls, wl)
			}
		}
		if len(wls) == 0 {
			return false
		}
		for _, wl := range wls {
			if _, ok := servesClients(ev, wl, f.Namespace, f.Time); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// selectsLabels reports whether a selector matches a set of labels.
func selectsLabels(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
