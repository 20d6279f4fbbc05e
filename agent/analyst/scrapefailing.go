package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A scrape that fails while the service is fine: Prometheus's up falls to
// 0 for a job (and a "service down" alert built on it fires) because the
// target's metrics endpoint moved or went away — a new version serves its
// metrics on another port or path, so the scrape of the old one gets 404
// ("No mapping for GET /metrics") — while the service keeps serving its
// own requests. The alert's claim is false: the monitoring lost the
// service, the service is not down.
//
// The same false alarm comes from a scrape Prometheus rejects: when a
// target exposes more samples than the scrape's sample limit (sampleLimit
// of a ServiceMonitor, sample_limit of a scrape config), Prometheus drops
// the whole scrape and sets up to 0 ("sample limit exceeded" in its log
// and in the targets API's lastError), though the endpoint answers. A new
// label with unbounded values (a raw URL path, an id) multiplying the
// series is the usual cause.

// KindScrapeFailing is a scrape target down while its service serves.
const KindScrapeFailing Kind = "scrape_failing"

var (
	// metricsPath404RE is the target answering its scrape with 404: a
	// Spring handler without the path, an access line of the scrape.
	metricsPath404RE = regexp.MustCompile(`(?i)No mapping for GET /(?:actuator/)?(?:prometheus|metrics)\b|No endpoint GET /(?:actuator/)?(?:prometheus|metrics)\b|"GET /(?:actuator/)?(?:prometheus|metrics)[^"]*" 404\b|\bGET /(?:actuator/)?(?:prometheus|metrics)\b\S* (?:HTTP/[\d.]+ )?404\b`)
	// metricsListenRE is a process saying where it serves its metrics.
	// sampleLimitRE is Prometheus rejecting a scrape over its sample limit
	// (its log, the targets API's lastError).
	sampleLimitRE = regexp.MustCompile(`(?i)\bsample limit exceeded\b|\bexceeded (?:the |its )?sample[ _]limit\b`)
	// scrapePoolRE is the scrape pool or job a Prometheus log line names.
	scrapePoolRE = regexp.MustCompile(`\b(?:scrape_pool|scrapePool|job)"?[=:]"?([\w./:-]+)`)
	// sampleLimitValueRE is the limit a ServiceMonitor or scrape config sets.
	sampleLimitValueRE = regexp.MustCompile(`\b(?:sampleLimit|sample_limit):\s*(\d+)`)
	metricsListenRE    = regexp.MustCompile(`(?i)(?:metrics|prometheus|exporter)\b[^\n]{0,60}?\b(?:listening|serving|started|exposed|available)\b[^\n]{0,20}? (?:on|at) \S*?:(\d{2,5})(/\S*)?`)
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
		if l := h.fact("sample_limit_line"); l != "" {
			d = fmt.Sprintf("%s is not down: its metrics scrape target is (up == 0) because Prometheus rejects every scrape of it for exceeding the sample limit", h.Subject)
			if v := h.fact("sample_limit"); v != "" {
				d += fmt.Sprintf(" (sampleLimit %s)", v)
			}
			d += fmt.Sprintf(": the target exposes more series than the limit allows, so the whole scrape is dropped (%s); a new label with many values (a raw URL path or an id as a label) multiplies the series of a metric", quote(ReadableLine(l), 260))
		}
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
		if h.fact("sample_limit_line") != "" {
			r.high("Cut the series %s exposes back under the scrape's sample limit: find the metric whose label values grew (count the series per metric on its /metrics) and label it by route template, not by raw path or id; raise sampleLimit only as a stopgap", h.Subject)
			r.med("Alert on prometheus_target_scrapes_exceeded_sample_limit_total and on the service's traffic, so a rejected scrape does not page as an outage")
			return
		}
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
				for _, l := range t.Lines() {
					if matchLine(metricsPath404RE, l) && t.Incident > 0 {
						last404 = l
					}
					if m := findSubmatch(metricsListenRE, l); m != nil && ev.Window.recent(t.LastSeen) {
						listen, port = l, m[1]
					}
				}
				if t.Incident > 0 && !set.classified(j).isErr && !matchLine(metricsPath404RE, t.Example) && t.LastSeen.After(serving) {
					serving = t.LastSeen
				}
			}
		}
		limitLine, limit := sampleLimitRejected(ev, down)
		// Moved, refused or rejected, and still serving after the target
		// went down.
		if last404 == "" && port == "" && limitLine == "" || !serving.After(down.Time.Add(5*time.Minute)) {
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
		if limitLine != "" {
			f.setFact("sample_limit_line", limitLine)
			f.setFact("sample_limit", limit)
			f.Evidence = append(f.Evidence, fmt.Sprintf("Prometheus rejects the scrape of %s: %s", down.Subject, quote(ReadableLine(limitLine), 200)))
			if limit != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the scrape of %s has a sample limit of %s", down.Subject, limit))
			}
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

// sampleLimitRejected finds Prometheus rejecting the scrape of the down
// target's subject for exceeding its sample limit — a log line or a
// targets API answer naming the subject's scrape pool or job — and the
// limit set for it (a ServiceMonitor or scrape config printed).
func sampleLimitRejected(ev *Gathered, down Finding) (line, limit string) {
	names := func(l string) bool {
		for _, m := range findAllSubmatch(scrapePoolRE, l, -1) {
			for _, part := range strings.Split(m[1], "/") {
				if strings.EqualFold(part, down.Subject) {
					return true
				}
			}
		}
		return false
	}
	// A log line of Prometheus is the better quote; a targets API answer
	// (read as a log or a command's output) gives its lastError.
	take := func(l string) {
		if l = lastErrorOf(l); line == "" || strings.HasPrefix(line, "lastError: ") && !strings.HasPrefix(l, "lastError: ") {
			line = l
		}
	}
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			for _, l := range []string{t.Last, t.Example} {
				if l != "" && matchLine(sampleLimitRE, l) && names(l) {
					take(l)
				}
			}
		}
	}
	for _, o := range ev.Commands {
		for _, l := range o.Lines {
			if matchLine(sampleLimitRE, l) && (names(l) || names(o.Run)) {
				take(l)
			}
		}
	}
	if line == "" {
		return "", ""
	}
	for _, o := range ev.Commands {
		if !strings.Contains(o.Run, down.Subject) && !slicesContainsFold(o.Lines, down.Subject) {
			continue
		}
		for _, l := range o.Lines {
			if m := findSubmatch(sampleLimitValueRE, l); m != nil {
				limit = m[1]
			}
		}
	}
	return line, limit
}

// lastErrorOf is the lastError of a targets API answer, else the line.
func lastErrorOf(l string) string {
	if i := strings.Index(l, `"lastError":"`); i >= 0 {
		l = l[i+len(`"lastError":"`):]
		if j := strings.Index(l, `"`); j >= 0 {
			l = l[:j]
		}
		return "lastError: " + l
	}
	return l
}

func slicesContainsFold(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), strings.ToLower(s)) {
			return true
		}
	}
	return false
}
