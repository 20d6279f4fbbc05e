package analyst

import (
	"fmt"
	"regexp"
	"time"
)

// A scrape that fails while the service is fine: Prometheus's up falls to
// 0 for a job (and a "service down" alert built on it fires) because the
// target's metrics endpoint moved or went away — a new version serves its
// metrics on another port or path, so the scrape of the old one gets 404
// ("No mapping for GET /metrics") — while the service keeps serving its
// own requests. The alert's claim is false: the monitoring lost the
// service, the service is not down.

// KindScrapeFailing is a scrape target down while its service serves.
const KindScrapeFailing Kind = "scrape_failing"

var (
	// metricsPath404RE is the target answering its scrape with 404: a
	// Spring handler without the path, an access line of the scrape.
	metricsPath404RE = regexp.MustCompile(`(?i)No mapping for GET /(?:actuator/)?(?:prometheus|metrics)\b|No endpoint GET /(?:actuator/)?(?:prometheus|metrics)\b|"GET /(?:actuator/)?(?:prometheus|metrics)[^"]*" 404\b|\bGET /(?:actuator/)?(?:prometheus|metrics)\b\S* (?:HTTP/[\d.]+ )?404\b`)
	// metricsListenRE is a process saying where it serves its metrics.
	metricsListenRE = regexp.MustCompile(`(?i)(?:metrics|prometheus|exporter)\b[^\n]{0,60}?\b(?:listening|serving|started|exposed|available)\b[^\n]{0,20}? (?:on|at) \S*?:(\d{2,5})(/\S*)?`)
)

var scrapeFailing = &mechanism{
	kind:   KindScrapeFailing,
	class:  classCause,
	label:  "metrics scrape failing (the service itself is up)",
	detect: detectScrapeFailing,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return (c.Kind == KindDeploy || c.Kind == KindConfigChange) && c.relates(h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is not down: its metrics scrape target is (up == 0), because the scrape of its metrics endpoint fails", h.Subject)
		if l := h.fact("scrape_404"); l != "" {
			d += fmt.Sprintf(" — the target answers the scrape with 404 (%s)", quote(ReadableLine(l), 160))
		}
		if p := h.fact("metrics_port"); p != "" {
			d += fmt.Sprintf("; its metrics are now served on port %s (%s), which the scrape config does not target", p, quote(ReadableLine(h.fact("listen")), 160))
		}
		d += fmt.Sprintf(". Meanwhile %s keeps serving requests (%s), so the alert built on up is a false alarm of the monitoring, not an outage", h.Subject, orWord(h.fact("serving"), "its own log goes on"))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if p := h.fact("metrics_port"); p != "" {
			r.high("Point the scrape of %s at its new metrics port %s (the ServiceMonitor/PodMonitor endpoint port and path, or the prometheus.io/port annotation)", h.Subject, p)
		} else {
			r.high("Fix the scrape target of %s: the port and path its ServiceMonitor/annotations scrape must serve its metrics", h.Subject)
		}
		r.med("Alert on the service's availability from its traffic or a blackbox probe, not on up alone, so a broken scrape does not page as an outage")
		r.low("Check scrape targets after a change of the metrics library or port (promtool, the Prometheus targets page)")
	},
}

// detectScrapeFailing reads a scrape target down for a subject whose own
// log shows the scrape answered 404, or a metrics endpoint moved, while
// its normal lines go on after the target went down.
func detectScrapeFailing(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, down := range found {
		if down.Kind != KindTargetDown || done[down.Subject] {
			continue
		}
		var f *Finding
		var last404, listen, port string
		var serving time.Time
		for i := range ev.Logs {
			set := &ev.Logs[i]
			if set.Subject != down.Subject {
				continue
			}
			for j, t := range set.Templates {
				for _, l := range []string{t.Example, t.Last} {
					if l == "" {
						continue
					}
					if metricsPath404RE.MatchString(l) && t.Incident > 0 {
						last404 = l
					}
					if m := metricsListenRE.FindStringSubmatch(l); m != nil && ev.Window.recent(t.LastSeen) {
						listen, port = l, m[1]
					}
				}
				if t.Incident > 0 && !set.classified(j).isErr && !metricsPath404RE.MatchString(t.Example) && t.LastSeen.After(serving) {
					serving = t.LastSeen
				}
			}
		}
		// Moved or refused, and still serving after the target went down.
		if last404 == "" && port == "" || !serving.After(down.Time.Add(5*time.Minute)) {
			continue
		}
		done[down.Subject] = true
		f = &Finding{Kind: KindScrapeFailing, Subject: down.Subject, Namespace: down.Namespace, Source: down.Source, Object: down.Object,
			Time: down.Time, Severity: SevWarning, Weight: 0.9,
			Summary:  fmt.Sprintf("the metrics scrape of %s fails while it serves", down.Subject),
			Evidence: append([]string{}, down.Evidence...)}
		if last404 != "" {
			f.setFact("scrape_404", last404)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s answers its scrape with 404: %s", down.Subject, quote(ReadableLine(last404), 200)))
		}
		if port != "" {
			f.setFact("metrics_port", port)
			f.setFact("listen", listen)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s serves its metrics on port %s: %s", down.Subject, port, quote(ReadableLine(listen), 200)))
		}
		f.setFact("serving", fmt.Sprintf("normal lines in its log until %s", hm(serving)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged normal work until %s, after its target went down at %s", down.Subject, hm(serving), hm(down.Time)))
		out = append(out, *f)
	}
	return out
}
