package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An Ingress rule whose pathType is Exact where the backend serves a tree
// of paths (/api with pathType Exact instead of Prefix, as a chart that
// makes every pathType explicit writes it): only the bare path itself
// matches the rule, and every request below it (/api/v1/cart) falls
// through to the host's next matching rule (a "/" Prefix rule of the web
// frontend) or to the controller's default backend, which answer 404. The
// backend the rule names gets no traffic, its pods are Ready and its
// endpoints fine; the 404s come from the backend that caught the requests.

// KindIngressPathExact is an Ingress rule with pathType Exact whose
// backend's requests fall through to another backend.
const KindIngressPathExact Kind = "ingress_path_exact"

// ingressPathChangeRE is what a change that could set a rule's pathType
// says of itself.
var ingressPathChangeRE = regexp.MustCompile(`(?i)path ?type|\bexact\b|\bprefix\b|ingress|\broutes?\b|\brules?\b|\bpaths?\b`)

var ingressPathExact = &mechanism{
	kind:           KindIngressPathExact,
	class:          classCause,
	label:          "Ingress rule with pathType Exact sends its subpaths to another backend",
	detect:         detectIngressPathExact,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return matchLine(ingressPathChangeRE, changeText(c)) },
	strictTriggers: true,
	related: func(h *Hypothesis, f *Finding) bool {
		// The 404s the backend that caught the requests logs.
		fb := h.fact("fallback")
		return fb != "" && strings.EqualFold(f.Subject, fb) && (f.Kind == KindLogErrors || f.Kind == KindLogMatch || f.Kind == KindErrorRate)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		p := h.fact("path")
		d := fmt.Sprintf("the Ingress %s routes %s to %s with pathType Exact, which matches the path %s itself only: requests below it (%s) do not match that rule", h.fact("ingress"), h.fact("rule"), h.Subject, p, h.fact("example"))
		if fb := h.fact("fallback"); fb != "" {
			d += fmt.Sprintf(" and fall through to %s (%s), which has no such routes and answers 404", fb, h.fact("fallback_rule"))
		} else {
			d += " and go to the ingress controller's default backend, which answers 404"
		}
		d += fmt.Sprintf(" (%s such requests answered 404 from %s); %s itself gets none of them", h.fact("count"), hm(h.Onset), h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Set pathType: Prefix on the %s rule of Ingress %s (or ImplementationSpecific where a regex is meant), so that %s and everything below it reach %s", h.fact("path"), h.fact("ingress"), h.fact("path"), h.Subject)
		r.med("Test an Ingress change with requests below each path (curl https://HOST%s/...) before rolling it out; a linter that demands explicit pathTypes does not say which one", h.fact("path"))
		r.low("Alert on 404s per ingress backend and on a backend whose request rate drops to zero")
	},
}

// exactRule is an Exact rule of an Ingress, with the requests below its
// path that other backends answered 404.
type exactRule struct {
	host, path, svc   string
	fallback, fbRule  string
	count             int
	first             time.Time
	example, line     string
	lineFrom          string
	proxyLine         bool
	counts            map[string]int // requests by the log that shows them
	upstreamFallbacks map[string]bool
}

// detectIngressPathExact finds Ingress rules with pathType Exact (not "/")
// and, in any log read (the ingress controller's access log, the
// backends' own request logs), requests below their path answered 404 by
// another backend than the rule's.
func detectIngressPathExact(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for i := range ev.K8s.Ingresses {
		ing := &ev.K8s.Ingresses[i]
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.PathType == nil || *p.PathType != networkingv1.PathTypeExact || p.Path == "" || p.Path == "/" || p.Backend.Service == nil {
					continue
				}
				x := &exactRule{host: r.Host, path: strings.TrimSuffix(p.Path, "/"), svc: p.Backend.Service.Name}
				if fb, rule := ingressFallback(ing, r.Host, x.path+"/"); fb != x.svc {
					x.fallback, x.fbRule = fb, rule
				} else {
					continue // a wider rule sends the subpaths to the same backend
				}
				exactRequests(ev, x)
				if x.count < 2 {
					continue
				}
				out = append(out, exactFinding(ev, ing, x))
			}
		}
	}
	return out
}

// ingressFallback is the backend of the longest Prefix (or
// ImplementationSpecific) rule of host that matches path, with the rule,
// or the default backend; "" for the controller's own.
func ingressFallback(ing *networkingv1.Ingress, host, path string) (string, string) {
	best, svc, rule := -1, "", ""
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil || r.Host != host {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact || p.Backend.Service == nil {
				continue
			}
			pp := strings.TrimSuffix(p.Path, "/")
			if (pp == "" || path == pp || strings.HasPrefix(path, pp+"/")) && len(pp) > best {
				best, svc = len(pp), p.Backend.Service.Name
				kind := "Prefix"
				if p.PathType != nil {
					kind = string(*p.PathType)
				}
				rule = fmt.Sprintf("its %s rule %s", kind, orWord(p.Path, "/"))
			}
		}
	}
	if svc == "" && ing.Spec.DefaultBackend != nil && ing.Spec.DefaultBackend.Service != nil {
		svc, rule = ing.Spec.DefaultBackend.Service.Name, "its default backend"
	}
	return svc, rule
}

// exactRequests counts, in every log read (and every log handed over as
// a command's output: an ingress controller's, read through its
// Deployment), the requests below x's path answered 404, unless the log
// or the proxy's upstream shows x's own backend answering them.
func exactRequests(ev *Gathered, x *exactRule) {
	take := func(from, l string, n int, at time.Time) bool {
		req, ok := parseRequestLine(l)
		if !ok || req.Status != 404 {
			return false
		}
		path, _, _ := strings.Cut(req.Path, "?")
		if !strings.HasPrefix(path, x.path+"/") {
			return false
		}
		proxy := false
		if req.Upstream != "" {
			up := ingressUpstreamService(ev, req.Upstream)
			if up == "" {
				up = req.Upstream
			}
			if strings.EqualFold(up, x.svc) {
				return false
			}
			if x.fallback == "" {
				x.fallback = up
			}
			proxy = true
		}
		if x.counts == nil {
			x.counts = map[string]int{}
		}
		x.counts[from] += n
		if x.first.IsZero() || !at.IsZero() && at.Before(x.first) {
			x.first = at
		}
		// The proxy's line, which names the backend, is the one shown.
		if x.line == "" || proxy && !x.proxyLine {
			x.example, x.line, x.lineFrom, x.proxyLine = req.Method+" "+path, l, from, proxy
		}
		return true
	}
	for _, set := range ev.Logs {
		if strings.EqualFold(set.Subject, x.svc) {
			continue // the rule's own backend answering 404 is its own matter
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if take(set.Subject, l, max(t.Count, 1), earliest(t.FirstSeen, t.FirstIncident)) {
					break
				}
			}
		}
	}
	for _, c := range ev.Commands {
		if c.Exec || !strings.Contains(c.Command, " logs ") {
			continue
		}
		from := orWord(c.Target, c.Pod)
		if _, name, ok := strings.Cut(from, "/"); ok {
			from = name
		}
		if strings.EqualFold(from, x.svc) {
			continue
		}
		for _, l := range c.Lines {
			at, _ := evidence.LineTime([]byte(l), ev.Window.End)
			take(orWord(from, "a log handed over"), l, 1, at)
		}
	}
	// The same requests show in the proxy's log and the backend's: the
	// count is that of the log shown.
	x.count = x.counts[x.lineFrom]
}

// exactFinding is the finding of an Exact rule whose subpaths other
// backends answer.
func exactFinding(ev *Gathered, ing *networkingv1.Ingress, x *exactRule) Finding {
	at := x.first
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindIngressPathExact, Subject: x.svc, Object: "ingress " + ing.Namespace + "/" + ing.Name, Namespace: ing.Namespace,
		Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: at, Related: []string{ing.Name}}
	if x.fallback != "" {
		f.Related = append(f.Related, x.fallback)
	}
	// The release that manages the Ingress (Helm's, Argo CD's instance):
	// its changes are the Ingress's.
	for _, r := range []string{ing.Annotations["meta.helm.sh/release-name"], ing.Labels["app.kubernetes.io/instance"], ing.Labels["argocd.argoproj.io/instance"]} {
		if r != "" && !slices.Contains(f.Related, r) {
			f.Related = append(f.Related, r)
		}
	}
	rule := strings.TrimSpace(x.host + x.path)
	f.setFact("ingress", ing.Namespace+"/"+ing.Name)
	f.setFact("rule", rule)
	f.setFact("path", x.path)
	f.setFact("fallback", x.fallback)
	f.setFact("fallback_rule", x.fbRule)
	f.setFact("count", fmt.Sprint(x.count))
	f.setFact("example", x.example)
	f.Evidence = []string{
		fmt.Sprintf("Ingress %s/%s: rule %s -> service %s has pathType Exact, so %s/... does not match it", ing.Namespace, ing.Name, rule, x.svc, x.path),
		fmt.Sprintf("%s logged %d requests below %s/ answered 404 since %s, e.g. %s", x.lineFrom, x.count, x.path, hm(at), quote(truncate(ReadableLine(x.line), 240), 250)),
	}
	if x.fallback != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the requests below %s/ match %s of Ingress %s/%s, service %s", x.path, orWord(x.fbRule, "another rule"), ing.Namespace, ing.Name, x.fallback))
	}
	f.Summary = fmt.Sprintf("Ingress %s/%s rule %s has pathType Exact: requests below it reach %s, not %s, and get 404", ing.Namespace, ing.Name, rule, orWord(x.fallback, "the default backend"), x.svc)
	return f
}
