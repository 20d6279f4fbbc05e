package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// Pods that never become ready because their HTTP readiness probe asks a
// path the application does not serve: the kubelet's Unhealthy event
// quotes an HTTP 4xx ("Readiness probe failed: HTTP probe failed with
// statuscode: 404"). The application is up and answering (a 5xx or a
// timeout would be its health reported bad; a refused connection, nothing
// listening yet): the probe and the running version disagree on the path,
// as after an upgrade that moved its health endpoint ("/ready" to
// "/healthz/ready", Spring Boot's "/actuator/health/readiness") or a
// chart whose probe path is not the application's. The pods stay out of
// their Service's endpoints, so the Deployment shows 0/N ready and a
// rolling update never completes. The application's access log answering
// the probe (kube-probe) with 404, or its start-up line naming its own
// readiness path, confirms it.

// KindReadinessPathMissing is an HTTP readiness probe answered with a 4xx:
// the application does not serve the path it checks.
const KindReadinessPathMissing Kind = "readiness_path_missing"

var readinessPathMissing = &mechanism{
	kind:    KindReadinessPathMissing,
	class:   classCause,
	label:   "readiness probe on a path the application does not serve",
	detect:  detectReadinessPathMissing,
	related: kindsOnSubject(KindProbeFailure, KindRolloutStuck, KindNoEndpoints),
	refines: []Kind{KindProbeFailure},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.fact("image") != ""
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		get := "its readiness probe's GET " + orWord(h.fact("probe_path"), "request")
		if port := h.fact("probe_port"); port != "" && h.fact("probe_path") != "" {
			get = fmt.Sprintf("its readiness probe's GET :%s%s", port, h.fact("probe_path"))
		}
		status := h.fact("probe_status")
		d := fmt.Sprintf("%s pods never become ready: %s answers HTTP %s", s, get, status)
		switch status {
		case "401", "403":
			d += " — the application is up and answering, but refuses the probe's unauthenticated request on that path"
		default:
			d += " — the application is up and answering, but does not serve the path the readiness probe checks (a moved health endpoint, as after an upgrade, or a probe path that was never the application's)"
		}
		if p := h.fact("served_path"); p != "" {
			d += fmt.Sprintf("; the application serves its readiness check on %s", p)
		}
		if line := h.fact("not_found_line"); line != "" {
			d += fmt.Sprintf(" (its log: %s)", quote(clipMiddle(line, 180), 190))
		}
		d += "; the kubelet keeps them out of the Service's endpoints"
		if r := h.fact("ready"); r != "" {
			d += fmt.Sprintf(" (%s ready)", r)
		}
		if m := h.fact("message"); m != "" {
			d += " — " + quote(truncate(m, 160), 170)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		path := orWord(h.fact("probe_path"), "its path")
		if p := h.fact("served_path"); p != "" {
			r.high("Point the readiness probe of %s at the path the application serves (%s instead of %s), or roll back to the version that served %s", s, p, path, path)
		} else {
			r.high("Point the readiness probe of %s at a health path the running version serves (%s answers HTTP %s), or roll back to the version that served it", s, path, h.fact("probe_status"))
		}
		r.rollback()
		r.med("Check the probes of %s against the health endpoints of each new version (in the chart or manifest that ships with it) before rolling it out", s)
		r.low("Alert on Deployments whose available replicas stay under the desired count after a rollout")
	},
}

// servedReadinessRE reads a readiness path an application names in its
// log at start-up: structured fields ("readiness":"/healthz/ready",
// readiness=/health/ready) and sentences ("readiness probe at
// /healthz/ready", "readiness endpoint on /ready").
var servedReadinessRE = regexp.MustCompile(`(?i)\breadiness(?:[_ -]?(?:path|probe|endpoint|check|url))?\\?"?\s*[:=]\s*\\?"?(/[\w./-]*)|\breadiness\s+(?:probe|endpoint|check|handler)s?\s+(?:at|on|is|served at|registered at|mounted at)\s+(/[\w./-]*)`)

func detectReadinessPathMissing(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, f := range found {
		if f.Kind != KindProbeFailure || f.fact("probe") != "readiness" || done[f.Subject] || f.fact("resolved") != "" {
			continue
		}
		o := probeOutcomeOf(f.fact("message"))
		if o.failure != "status" || o.status < "400" || o.status >= "500" || o.status == "408" || o.status == "429" {
			continue
		}
		ns, _, _ := strings.Cut(strings.TrimPrefix(f.Object, "pod "), "/")
		path, port := o.path, ""
		ready, total, seen := 0, 0, false
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if p.Namespace != ns || WorkloadOfPod(p) != f.Subject || p.DeletionTimestamp != nil {
				continue
			}
			seen = true
			total++
			if podReady(p) {
				ready++
			}
			for _, c := range p.Spec.Containers {
				if rp := c.ReadinessProbe; rp != nil && rp.HTTPGet != nil && path == "" {
					path, port = rp.HTTPGet.Path, portWord(rp.HTTPGet)
				} else if rp != nil && rp.HTTPGet != nil && rp.HTTPGet.Path == path && port == "" {
					port = portWord(rp.HTTPGet)
				}
			}
		}
		// Every pod of the workload ready again: the failures are
		// history (a slow start), not a path it does not serve.
		if seen && ready == total {
			continue
		}
		done[f.Subject] = true
		g := Finding{Kind: KindReadinessPathMissing, Subject: f.Subject, Object: f.Object, Namespace: f.Namespace, Time: f.Time, Severity: SevCritical,
			Weight: 0.82, Source: SrcEvents, Related: f.Related}
		g.setFact("probe_path", path)
		g.setFact("probe_port", port)
		g.setFact("probe_status", o.status)
		g.setFact("message", f.fact("message"))
		if seen {
			g.setFact("ready", fmt.Sprintf("%d/%d", ready, total))
		}
		g.Summary = fmt.Sprintf("%s's readiness probe %s answers HTTP %s", f.Subject, orWord(path, "request"), o.status)
		g.Evidence = []string{fmt.Sprintf("%s: readiness probe failed with HTTP %s: %s", f.Object, o.status, quote(truncate(f.fact("message"), 200), 210))}
		line, served, src := "", "", ""
		look := func(text, from string) {
			if line == "" && notFoundLine(text, path) {
				line, src = text, from
			}
			if m := findSubmatch(servedReadinessRE, text); m != nil && served == "" {
				if p := m[1] + m[2]; p != "" && p != path {
					served = p
				}
			}
		}
		for key, lines := range ev.K8s.PreviousLogs {
			pod := strings.Split(key, "/")
			if len(pod) < 2 || pod[0] != ns || workloadOfName(pod[1]) != f.Subject && !podOfWorkloadNamed(ev, ns, pod[1], f.Subject) {
				continue
			}
			for _, l := range lines {
				look(l.Text, key)
			}
		}
		for i := range ev.Logs {
			set := &ev.Logs[i]
			if set.Subject != f.Subject || set.Host {
				continue
			}
			for _, l := range set.Lines {
				look(l.Text, set.Source)
			}
			for _, t := range set.Templates {
				look(t.Example, set.Source)
			}
		}
		if line != "" {
			g.Weight = 0.9
			g.setFact("not_found_line", ReadableLine(line))
			g.Evidence = append(g.Evidence, fmt.Sprintf("%s logs %s: the application is up and has nothing at %s, the path its readiness probe checks", src, quote(truncate(ReadableLine(line), 200), 210), path))
		}
		if served != "" {
			g.Weight = 0.9
			g.setFact("served_path", served)
			g.Evidence = append(g.Evidence, fmt.Sprintf("the application names its readiness path %s, not %s", served, path))
		}
		out = append(out, g)
	}
	return out
}
