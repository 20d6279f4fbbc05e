package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// Worker-pool exhaustion: every worker of an HTTP server busy (gunicorn
// WORKER TIMEOUT, php-fpm max_children, a full thread pool), so requests
// queue and time out while the CPU may be idle.
var workerPool = &mechanism{
	kind:       KindWorkerPool,
	class:      classCause,
	label:      "worker pool exhausted (all workers busy)",
	lines:      regexp.MustCompile(`(?i)WORKER TIMEOUT|all \d+ (sync |async )?workers (are )?busy|no (idle|free|available) workers?|max_children|thread ?pool (is )?(exhausted|full|saturated)|worker pool (is )?(exhausted|full|saturated)|workers? (are )?all busy|request queue (is )?full|listen queue (overflow|full)|RejectedExecutionException|puma.{0,30}(backlog|all threads busy)|no free worker`),
	lineWeight: 0.85,
	detect:     detectServerPoolHeld,
	// Workers held by a slow callee: only a change that names the callee
	// (its client, its timeout) triggers it; the server's own release
	// near the onset is a coincidence.
	strictFor: func(h *Hypothesis) bool { return h.fact("callee") != "" },
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		callee := strings.ToLower(h.fact("callee"))
		if callee == "" {
			return false
		}
		t := changeText(c)
		return strings.Contains(t, callee) || strings.Contains(t, strings.Split(strings.TrimPrefix(callee, "api."), ".")[0])
	},
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		c := h.fact("callee")
		return c != "" && (strings.EqualFold(f.Subject, c) || f.Kind == KindLatency)
	}),
	describe: func(h *Hypothesis, sc Scope) string {
		if c := h.fact("callee"); c != "" {
			d := fmt.Sprintf("every worker of %s's web server is busy: %s", h.Subject, quote(h.fact("line"), 160))
			if st := h.fact("status"); st != "" {
				d += fmt.Sprintf(" (%s)", st)
			}
			d += fmt.Sprintf(", held by requests waiting on calls to %s that time out", c)
			if l := h.fact("callee_line"); l != "" {
				d += ": " + quote(ReadableLine(l), 200)
			}
			d += fmt.Sprintf(" — so every other request to %s queues and times out while the CPU is idle; the cause is the slow calls to %s made on the request workers without a short timeout, not the server's capacity", h.Subject, c)
			return d
		}
		d := fmt.Sprintf("the worker pool of %s is exhausted: all workers are busy (slow requests hold them), so new requests queue in the backlog and time out — a capacity/saturation problem of the HTTP server, not of CPU", h.Subject)
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if c := h.fact("callee"); c != "" {
			r.high("Put a short timeout (and a circuit breaker or a cached fallback) on %s's calls to %s so they cannot hold every worker", h.Subject, c)
			r.med("Move the calls to %s off the request path (asynchronous, cached) and raise the worker limit only after that", c)
			r.low("Alert on busy workers against the server's limit (MaxRequestWorkers, pm.max_children) and on %s's latency", c)
			return
		}
		r.rollback()
		r.high("Add workers/replicas to %s and put a timeout on the slow endpoint so it cannot hold every worker", h.Subject)
		r.med("Move slow requests off the synchronous workers (async workers, a separate pool or a background job) and rate-limit their callers")
		r.low("Alert on busy workers / request backlog, not only on CPU")
	},
}

var (
	// serverPoolFullRE is a web server's own word that every worker is
	// busy: Apache's AH00161 (MaxClients before 2.4), php-fpm's
	// max_children warning.
	serverPoolFullRE = regexp.MustCompile(`AH00161: server reached MaxRequestWorkers setting[^"]*|server reached MaxClients setting[^"]*|server reached pm\.max_children setting \(\d+\)[^"]*`)
	// serverStatusFullRE is apachectl status's line with no idle worker.
	serverStatusFullRE = regexp.MustCompile(`(\d+) requests currently being processed, 0 idle workers`)
)

// detectServerPoolHeld finds a web server whose workers are all busy (its
// error log or its status page, as run on its host) while its calls to one
// dependency time out: the workers are held by those calls.
func detectServerPoolHeld(ev *Gathered, found []Finding) []Finding {
	var callee, calleeLine string
	for _, f := range found {
		if f.Kind == KindTimeout && f.fact("caller") != "" && callee == "" {
			callee, calleeLine = f.Subject, f.fact("line")
		}
	}
	if callee == "" {
		return nil
	}
	var line, status string
	var ev2 []string
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findString(serverPoolFullRE, l); m != "" && line == "" {
				line = strings.TrimSpace(m)
				ev2 = append(ev2, fmt.Sprintf("%s: %s", truncate(c.Command, 60), truncate(strings.TrimSpace(l), 220)))
			}
			if m := findString(serverStatusFullRE, l); m != "" && status == "" {
				status = m
				ev2 = append(ev2, fmt.Sprintf("%s: %s", truncate(c.Command, 60), m))
			}
		}
	}
	for x := range incidentMatches(ev, serverPoolFullRE) {
		if line == "" {
			line = findString(serverPoolFullRE, x.line)
			ev2 = append(ev2, templateEvidence(*x.set, x.t, x.line))
		}
		break
	}
	if line == "" && status == "" {
		return nil
	}
	subj := ""
	if s := ev.Scope.Subjects(); len(s) > 0 {
		subj = s[0]
	}
	if subj == "" || strings.EqualFold(subj, callee) {
		return nil
	}
	f := Finding{Kind: KindWorkerPool, Subject: subj, Object: "service " + subj, Source: SrcLogs, Severity: SevCritical, Weight: 0.9, Time: ev.Window.Start}
	for _, o := range found {
		if o.Kind == KindTimeout && o.Subject == callee && !o.Time.IsZero() {
			f.Time = o.Time
			f.Evidence = append(f.Evidence, o.Summary)
			break
		}
	}
	f.setFact("line", orWord(line, status))
	f.setFact("status", status)
	f.setFact("callee", callee)
	f.setFact("callee_line", calleeLine)
	f.Evidence = append(ev2, f.Evidence...)
	f.Related = []string{callee}
	f.Summary = fmt.Sprintf("%s: every worker busy, held by calls to %s", subj, callee)
	return []Finding{f}
}
