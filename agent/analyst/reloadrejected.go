package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A proxy or server whose configuration reloads are rejected. Ingress
// controllers (ingress-nginx, HAProxy, Traefik), Prometheus and
// Alertmanager regenerate their configuration when an object changes and
// reload it; when the new configuration fails its test (nginx -t: "[emerg]
// … configuration file … test failed"), the reload is refused and the
// process keeps serving the configuration it had. Every later edit — a
// rate limit, a route, a timeout, by any team — is then silently not
// applied, though the objects show the new values. The culprit is the
// change the first failure followed (often another team's snippet or
// rule: one broken object blocks every object's reload); the exporters'
// gauges say it (nginx_ingress_controller_config_last_reload_successful,
// prometheus_config_last_reload_successful 0), the controller's log and
// its RELOAD events quote nginx's error.

// KindReloadRejected is a configuration reload its server rejects.
const KindReloadRejected Kind = "reload_rejected"

var reloadRejected = &mechanism{
	kind:  KindReloadRejected,
	class: classCause,
	label: "configuration reload rejected, old configuration still served",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.9, e.Reason == "RELOAD" && e.Type == corev1.EventTypeWarning && strings.Contains(strings.ToLower(e.Message), "error reloading")
	},
	eventCritical: true,
	detect:        detectReloadRejected,
	related: func(h *Hypothesis, f *Finding) bool {
		return slices.Contains(strings.Split(h.fact("not_applied"), ","), f.Subject)
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Time.Before(h.Onset.Add(2*time.Minute)) && matchLine(servedConfigChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		since := hm(h.Onset)
		if y, m, dd := h.Onset.UTC().Date(); !h.Onset.IsZero() && !sc.Window.End.IsZero() && (y != sc.Window.End.UTC().Year() || m != sc.Window.End.UTC().Month() || dd != sc.Window.End.UTC().Day()) {
			since = h.Onset.UTC().Format("Jan 2 15:04 UTC")
		}
		d := fmt.Sprintf("%s rejects every configuration reload since %s (%s): the new configuration fails its test, so it keeps serving the configuration from before that",
			h.Subject, since, orWord(h.fact("failure"), "Error reloading"))
		if l := h.fact("line"); l != "" {
			d += fmt.Sprintf(" (%s)", quote(rejectionReason(l), 200))
		}
		d += h.clause("; the changes made since are not applied: ", "not_applied_words")
		if t := h.Trigger; t != nil {
			d += fmt.Sprintf("; the failures began with the change of %s", t.Subject)
			if s := h.fact("snippet"); s != "" {
				d += fmt.Sprintf(", whose configuration snippet reads %s", quote(s, 160))
			}
			d += ": one broken object blocks the reload of every object"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if t := h.Trigger; t != nil {
			r.high("Fix or revert %s (%s) so that the configuration passes its test again; the pending changes are applied at the next successful reload", t.Subject, truncate(t.fact("description"), 120))
		} else {
			r.high("Find the object whose configuration fails the test (the controller's log: the [emerg] line and its file:line) and fix or remove it")
		}
		r.med("Validate configurations before they reach the controller: enable the ingress admission webhook (it runs nginx -t on each Ingress), and restrict snippet annotations")
		r.low("Alert on nginx_ingress_controller_config_last_reload_successful == 0 (prometheus_config_last_reload_successful, alertmanager_config_last_reload_successful) for more than a few minutes")
	},
}

var (
	// reloadGaugeRE names the gauges of whether the last reload worked.
	reloadGaugeRE = regexp.MustCompile(`(?:^|_)config_last_reload_successful$|^traefik_config_last_reload_success$`)
	// reloadFailedLineRE is a server's log of a rejected reload.
	reloadFailedLineRE = regexp.MustCompile(`(?i)configuration file \S+ test failed|Unexpected failure reloading the backend|Error reloading NGINX|Error reloading config|error loading config(?:uration)? file|Failed to reload|reload failed|\[emerg\]`)
	// emergRE is nginx's own reason.
	emergRE = regexp.MustCompile(`\[emerg\][^\n]*`)
	// servedConfigChangeRE is a change to what such a server is
	// configured from.
	servedConfigChangeRE = regexp.MustCompile(`(?i)ingress|snippet|annotation|nginx|haproxy|traefik|route|configmap|rule|alert|scrape|virtualservice|gateway`)
)

// detectReloadRejected finds servers whose last-reload gauge fell to 0 in
// the window and stays there, with the changes made since (not applied),
// the log line that says why and the snippet handed over.
func detectReloadRejected(ev *Gathered, found []Finding) []Finding {
	type server struct {
		onset time.Time
		early bool // the rejection predates the series: onset from the log
		gauge string
		pods  []string
	}
	servers := map[string]*server{}
	var order []string
	for name, s := range metricSeries(ev.Metrics) {
		if !matchLine(reloadGaugeRE, name) {
			continue
		}
		pts := pointsUpTo(s, ev.Window.End)
		if len(pts) < 2 || pts[len(pts)-1].V != 0 {
			continue
		}
		var onset time.Time
		for i := len(pts) - 1; i > 0 && pts[i].V == 0; i-- {
			onset = pts[i].T
			if pts[i-1].V == 0 {
				onset = pts[i-1].T
			}
		}
		if onset.IsZero() || !ev.Window.BaselineStart.IsZero() && onset.Before(ev.Window.BaselineStart) {
			continue
		}
		pod := orWord(s.Labels["controller_pod"], s.Labels["pod"])
		early := false
		who := reloadServer(name, s.Labels["controller_namespace"], pod, s.Labels["job"])
		// A gauge at 0 from its first sample: the rejection is older
		// than the series; the server's own log of it, before the
		// window, names the server's workload and when it began.
		if pod == "" && pts[0].V == 0 {
			if l, ok := earlierRejection(ev, who); ok {
				who = workloadOfName(podOfSource(l.Source))
				onset = l.Time
				early = true
			}
		}
		sv := servers[who]
		if sv == nil {
			sv = &server{onset: onset, gauge: name}
			servers[who] = sv
			order = append(order, who)
		}
		sv.onset = earliest(sv.onset, onset)
		sv.early = sv.early || early
		if pod != "" && !slices.Contains(sv.pods, pod) {
			sv.pods = append(sv.pods, pod)
		}
	}
	var out []Finding
	for _, who := range order {
		sv := servers[who]
		f := Finding{Kind: KindReloadRejected, Subject: who, Object: "metrics " + sv.gauge, Source: SrcMetrics, Severity: SevCritical, Weight: 0.9, Time: sv.onset}
		if sv.early {
			f.setFact("failure", fmt.Sprintf("%s is 0 throughout; its log rejects the configuration since %s", sv.gauge, sv.onset.UTC().Format("Jan 2 15:04 UTC")))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s is 0 over the whole series (%s); %s's log rejects its configuration since %s", sv.gauge, orWord(strings.Join(sv.pods, ", "), who), who, ts(sv.onset)))
		} else {
			f.setFact("failure", fmt.Sprintf("%s has been 0 since %s", sv.gauge, hm(sv.onset)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s fell to 0 at %s and stays 0 (%s)", sv.gauge, ts(sv.onset), orWord(strings.Join(sv.pods, ", "), who)))
		}
		reloadFacts(ev, &f)
		f.Summary = fmt.Sprintf("%s rejects its configuration reloads since %s", who, hm(sv.onset))
		out = append(out, f)
	}
	// The RELOAD events found without the gauge.
	for i := range found {
		if found[i].Kind == KindReloadRejected {
			reloadFacts(ev, &found[i])
		}
	}
	return out
}

// reloadFacts adds to a rejected reload the changes made since its onset
// (not applied), the log line that says why and a snippet the evidence
// quotes.
func reloadFacts(ev *Gathered, f *Finding) {
	var subjects, words []string
	for _, c := range ev.Changes {
		if c.Timestamp.After(f.Time.Add(time.Minute)) && c.Service != "" && matchLine(servedConfigChangeRE, c.Description) {
			if !slices.Contains(subjects, c.Service) {
				subjects = append(subjects, c.Service)
			}
			words = append(words, fmt.Sprintf("%s at %s (%s)", c.Service, hm(c.Timestamp), truncate(c.Description, 120)))
		}
	}
	f.setFact("not_applied", strings.Join(subjects, ","))
	f.setFact("not_applied_words", strings.Join(words, "; "))
	f.Related = append(f.Related, subjects...)
	if l := reloadLogLine(ev); l != "" && f.fact("line") == "" {
		f.setFact("line", l)
		f.Evidence = append(f.Evidence, "log: "+quote(l, 240))
		f.Weight = max(f.Weight, 0.95)
	}
	for _, c := range ev.Commands {
		if strings.Contains(strings.ToLower(c.Command), "snippet") && len(c.Lines) > 0 {
			f.setFact("snippet", strings.Join(c.Lines, " / "))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 100), quote(strings.Join(c.Lines, " / "), 200)))
			return
		}
	}
	// A snippet annotation among an object's annotations (kubectl get
	// ingress -o jsonpath='{.metadata.annotations}', -o yaml, describe).
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(snippetAnnotationRE, l); m != nil {
				v := m[1]
				if u, err := strconv.Unquote(`"` + v + `"`); err == nil {
					v = u // a JSON string's escapes
				}
				f.setFact("snippet", strings.TrimSpace(v))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 100), quote(strings.TrimSpace(l), 200)))
				return
			}
		}
	}
}

// snippetAnnotationRE is a snippet annotation and its value, in JSON,
// YAML or describe's form ("nginx.ingress.kubernetes.io/configuration-snippet":
// "more_set_headers ...").
var snippetAnnotationRE = regexp.MustCompile(`[\w./-]*(?:configuration|server|auth|stream)-snippet"?\s*[:=]\s*"?(.+?)"?,?\s*$`)

// reloadServer names the server a reload gauge is of: the controller's
// workload, else its job.
func reloadServer(gauge, ns, pod, job string) string {
	if pod != "" {
		return workloadOfName(pod)
	}
	if job != "" {
		return job
	}
	if ns != "" {
		return ns
	}
	return strings.SplitN(gauge, "_", 2)[0]
}

// earlierRejection is the first line, before the window, of a pod log of
// server (its workload named server or after it: job "prometheus",
// workload prometheus-server) in which it rejected its configuration.
func earlierRejection(ev *Gathered, server string) (evidence.LogLine, bool) {
	for _, l := range ev.RejectedReloads {
		wl := workloadOfName(podOfSource(l.Source))
		if l.Time.IsZero() || server == "" || wl != server && !strings.HasPrefix(wl, server+"-") {
			continue
		}
		return l, true
	}
	return evidence.LogLine{}, false
}

// rejectReasonRE is a rejection's line that says what is wrong (the
// parser's error), not only that the reload failed.
var rejectReasonRE = regexp.MustCompile(`(?i)parse error|could not parse|unexpected|unknown (?:property|directive|field)|invalid|syntax error`)

// reloadLogLine is the line of a gathered log (or a command's output)
// that says why a reload was rejected: nginx's [emerg] line first, then a
// line with the parser's reason (also from before the window).
func reloadLogLine(ev *Gathered) string {
	l, reason := reloadLogLines(ev)
	if reason != "" && findString(emergRE, l) == "" {
		return reason
	}
	return l
}

// reloadLogLines is the first [emerg] line (else the first line of a
// failed reload), and the first rejection that gives the parser's reason.
func reloadLogLines(ev *Gathered) (any, reason string) {
	look := func(l string) bool {
		if m := findString(emergRE, l); m != "" {
			any = strings.TrimSpace(m)
			return true
		}
		if any == "" && matchLine(reloadFailedLineRE, l) {
			any = strings.TrimSpace(l)
		}
		if reason == "" && matchLine(rejectedConfigRE, l) && matchLine(rejectReasonRE, l) {
			reason = strings.TrimSpace(l)
		}
		return false
	}
	for _, l := range ev.RejectedReloads {
		if look(l.Text) {
			return any, reason
		}
	}
	for _, s := range ev.Logs {
		for _, t := range s.Templates {
			if t.Incident > 0 && look(t.Example) {
				return any, reason
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if look(l) {
				return any, reason
			}
		}
	}
	return any, reason
}

// podOfSource is the pod of a log line's source ("pod/container").
func podOfSource(src string) string {
	p, _, _ := strings.Cut(src, "/")
	return p
}

// rejectionReason is the part of a rejection's log line that says why:
// from its err= field when the line is logfmt, else the line.
func rejectionReason(l string) string {
	if i := strings.Index(l, `err="`); i >= 0 && matchLine(rejectReasonRE, l[i:]) {
		return strings.ReplaceAll(l[i:], `\"`, `"`)
	}
	return l
}
