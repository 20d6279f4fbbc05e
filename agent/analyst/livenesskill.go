package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// Containers killed by their failing liveness (or startup) probe and
// restarted (exit code 143, SIGTERM). Why the probe fails is in what it
// got back, which the kubelet's Unhealthy event quotes: an HTTP status
// (404: the application is up but serves nothing on the probe's path, a
// health endpoint moved by an upgrade; 5xx: the application's own health
// check reports it unhealthy), no answer within the timeout (a slow or
// overloaded application, a timeout too short), a refused connection
// (nothing listens yet: a slow start without a startupProbe, or another
// port), or an exec probe's output. The application's log telling it
// found nothing for the probe's path confirms a wrong path.
var livenessKill = &mechanism{
	kind:  KindLivenessKill,
	class: classCause,
	label: "liveness probe kills",
	detect: func(ev *Gathered, found []Finding) []Finding {
		return append(detectProbePathNotFound(ev, found), detectProbeHealthDown(ev, found)...)
	},
	enrich: func(f *Finding, c *corev1.Container) {
		f.setFact("probe_config", probeConfig(c))
		if c.StartupProbe != nil {
			f.setFact("startup_probe", "true")
		}
		if p := c.LivenessProbe; p != nil && p.HTTPGet != nil && f.fact("probe_path") == "" {
			f.setFact("probe_path", p.HTTPGet.Path)
			f.setFact("probe_port", portWord(p.HTTPGet))
		}
		if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil {
			f.setFact("readiness_path", p.HTTPGet.Path)
		}
		if p := c.LivenessProbe; p != nil && p.Exec != nil && len(p.Exec.Command) > 0 && f.fact("probe_command") == "" {
			f.setFact("probe_command", strings.Join(p.Exec.Command, " "))
		}
		if f.fact("image") == "" && c.Image != "" {
			f.setFact("image", c.Image)
		}
	},
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "Unhealthy":
			return 0.7, strings.HasPrefix(msg, "liveness probe") || strings.HasPrefix(msg, "startup probe")
		case "Killing":
			return 0.85, strings.Contains(msg, "liveness probe") || strings.Contains(msg, "startup probe")
		}
		return 0, false
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		f.setFact("probe", probeKind(e.Message))
		if e.Reason != "Unhealthy" || f.fact("probe_result") != "" {
			return
		}
		o := probeOutcomeOf(e.Message)
		if o.result == "" {
			return
		}
		f.setFact("probe_result", o.result)
		f.setFact("probe_status", o.status)
		f.setFact("probe_failure", o.failure)
		f.setFact("why", o.why())
		if o.missing != "" {
			f.setFact("missing_command", o.missing)
			f.setFact("missing_error", o.missingError)
			f.setFact("missing_text", strings.ReplaceAll(o.missingText, `\"`, `"`))
		}
		if o.path != "" {
			f.setFact("probe_path", o.path)
		}
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		probe := orWord(h.fact("probe"), "liveness")
		d := fmt.Sprintf("%s containers are killed by their failing %s probe and restarted (exit code 143, SIGTERM, not OOMKilled)", s, probe)
		get := "the probe's request"
		if p := h.fact("probe_path"); p != "" {
			get = "the probe's GET " + p
			if port := h.fact("probe_port"); port != "" {
				get = fmt.Sprintf("the probe's GET :%s%s", port, p)
			}
		}
		status := h.fact("probe_status")
		switch failure := h.fact("probe_failure"); {
		case failure == "status" && status >= "400" && status < "500":
			d += fmt.Sprintf(": %s answers HTTP %s — the application is up and answering, but not on the path the probe checks", get, status)
			if line := h.fact("not_found_line"); line != "" {
				d += fmt.Sprintf(" (its log: %s)", quote(truncate(line, 160), 170))
			}
			d += "; the probe's path does not exist (or is not allowed) in the running version, as after a framework upgrade or a moved health endpoint"
			if rp := h.fact("readiness_path"); rp != "" && rp != h.fact("probe_path") {
				d += fmt.Sprintf("; the readiness probe checks %s", rp)
			}
		case (failure == "status" || failure == "unhealthy") && h.fact("health_down_line") != "":
			d += fmt.Sprintf(": %s gets %s because a health indicator in the liveness check reports DOWN: %s (its log: %s) — a check of something other than the process itself is part of the liveness health group, so when that check goes down the kubelet restarts pods that are working, and the restarts do not fix what the check covers (they can make it worse: a restarted consumer rebalances its group and falls further behind)",
				get, h.fact("probe_result"), orWord(h.fact("health_indicator"), "a health check"), quote(truncate(h.fact("health_down_line"), 200), 210))
		case failure == "status" || failure == "unhealthy":
			d += fmt.Sprintf(": %s gets %s — the application's own health check reports it unhealthy, so what that check covers (a database, a downstream service, a full disk) is failing and the kubelet restarts the pods for it", get, h.fact("probe_result"))
		case failure == "timeout":
			d += fmt.Sprintf(": %s gets no answer within the probe's timeout — the application is too slow to answer (overloaded, CPU-throttled, paused, blocked) or the timeout is too short", get)
			if c := h.fact("probe_config"); c != "" {
				d += fmt.Sprintf(" (%s)", c)
			}
		case failure == "exec_missing":
			cmd := h.fact("missing_command")
			d += fmt.Sprintf(": the probe is an exec probe whose command %s is not in the container's image", cmd)
			if pc := h.fact("probe_command"); pc != "" {
				d += fmt.Sprintf(" (liveness: exec [%s])", pc)
			}
			d += fmt.Sprintf(", so the kubelet cannot even start it (%s) and counts every check as a failure — the application is killed, it does not crash, and may well be healthy; an image rebuilt on another base (distroless, scratch, a slimmer or non-root image) no longer ships the probe's binary or shell", quote(truncate(orWord(h.fact("missing_text"), h.fact("probe_result")), 200), 210))
			if img := h.fact("image"); img != "" {
				d += fmt.Sprintf(" (image %s)", img)
			}
		case failure == "exec":
			d += fmt.Sprintf(": the probe's command fails: %s", quote(truncate(h.fact("probe_result"), 160), 170))
		default:
			// A refused connection, or no word of the outcome: the
			// application is not answering yet.
			if c := h.fact("probe_config"); c != "" {
				d += fmt.Sprintf(": the %s probe (%s) fails before the application is ready", probe, c)
			} else {
				d += ": the probe fails before the application is ready"
			}
			if failure == "refused" {
				d += " (connection refused: nothing listens on the probe's port yet, or the application listens on another)"
			}
			if h.fact("startup_probe") == "" {
				d += ", and there is no startupProbe to cover a slow start"
			}
		}
		if m := h.fact("message"); m != "" && h.fact("probe_failure") != "exec_missing" {
			d += " — " + quote(truncate(m, 160), 170)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		status := h.fact("probe_status")
		r.rollback()
		switch failure := h.fact("probe_failure"); {
		case failure == "status" && status >= "400" && status < "500":
			path := orWord(h.fact("probe_path"), "its path")
			if rp := h.fact("readiness_path"); rp != "" && rp != h.fact("probe_path") {
				r.high("Point the liveness probe of %s at a health path the application serves: %s answers HTTP %s (the readiness probe uses %s)", s, path, status, rp)
			} else {
				r.high("Point the liveness probe of %s at a health path the application serves: %s answers HTTP %s", s, path, status)
			}
			r.med("Check the probes of %s against the endpoints of each new version (framework upgrades move health endpoints) before rolling it out", s)
		case (failure == "status" || failure == "unhealthy") && h.fact("health_down_line") != "":
			ind := orWord(h.fact("health_indicator"), "the failing health check")
			r.high("Take %s out of the liveness health group of %s (keep the liveness group to the process's own state, e.g. Spring Boot's management.endpoint.health.group.liveness.include=livenessState) and report it through readiness or an alert instead, so that the kubelet stops restarting working pods", ind, s)
			r.med("Once the restarts stop, let %s catch up and watch whether %s recovers on its own", s, ind)
		case failure == "status" || failure == "unhealthy":
			r.high("Find what the health check of %s reports failing (%s) and fix it; keep dependencies out of the liveness check so that a dependency's failure does not restart the pods", s, h.fact("probe_result"))
			r.med("Make the liveness probe of %s check the process only, and leave dependencies to the readiness probe", s)
		case failure == "exec_missing":
			cmd := h.fact("missing_command")
			r.high("Put %s back into the image of %s (copy the binary into the new base image), or replace the exec probe by one that needs nothing in the image: a grpc, httpGet or tcpSocket probe", cmd, s)
			r.med("Before rolling out an image on a new base, run each exec probe's command in it (kubectl exec POD -- %s) so that a missing binary or shell is found before the kubelet kills the pods", orWord(h.fact("probe_command"), cmd))
		case failure == "timeout":
			r.high("Find why %s answers its probe too slowly (CPU throttling, pauses, blocked threads) and fix it, or raise the probe's timeoutSeconds", s)
			r.med("Make %s answer its liveness probe without waiting on other work", s)
		default:
			r.add(finding.PriorityHigh, fmt.Sprintf("Stop the liveness probe from killing %s while it starts: raise the liveness probe's initialDelaySeconds (or failureThreshold) above the start-up time, or add a startupProbe", s))
			r.add(finding.PriorityMedium, fmt.Sprintf("Make %s report live quickly (warm caches in the background, separate liveness from readiness)", s))
		}
		r.add(finding.PriorityLow, "Alert on containers restarted by probe failures (Killing events) and on rollouts that stop progressing")
	},
}

// probeOutcome is what a failing probe got back, as the kubelet's
// Unhealthy event quotes it.
type probeOutcome struct {
	failure string // status, timeout, refused, unhealthy, exec; "" when not said
	status  string // the HTTP status, for status
	result  string // in words: "HTTP 404", "no answer within the timeout"
	path    string // the request's path, when the message quotes its URL
	// missing is the command of an exec probe that could not start (not
	// in the image), missingError how the runtime or shell said it.
	missing, missingError string
	missingText           string // the runtime's or shell's words
}

var (
	probeStatusRE = regexp.MustCompile(`(?i)probe failed with statuscode: (\d{3})`)
	probeURLRE    = regexp.MustCompile(`(?i)\b(?:Get|Head) "?[a-z]+://[^/\s"]+(/[^\s"]*)"?`)
	probeExecRE   = regexp.MustCompile(`(?i)^(?:liveness|startup|readiness) probe (?:failed|errored): (.+)$`)
	// probeMissingRE are the ways an exec probe's command that is not in
	// the image fails to start: the OCI runtime's (runc, crun, through
	// containerd, CRI-O or Docker) `exec: "/bin/x": stat /bin/x: no such
	// file or directory` and `exec: "curl": executable file not found in
	// $PATH`, and a shell's `/bin/sh: 1: curl: not found` (dash), `sh:
	// curl: not found` (busybox) or `bash: line 1: pg_isready: command not
	// found`.
	probeMissingRE = []*regexp.Regexp{
		regexp.MustCompile(`exec: \\?"([^"\\]+)\\?": (?:stat \S+: )?(no such file or directory|executable file not found in \$PATH)`),
		regexp.MustCompile(`(?:^|[\s:])(?:/\S*/)?(?:ba|da|a|z)?sh: (?:line )?(?:\d+: )?([^\s:]+): (command not found|not found)`),
	}
)

// why says in a phrase what the probe's answer means ("" for a refused
// connection, which says only that nothing listens yet).
func (o probeOutcome) why() string {
	switch {
	case o.failure == "status" && o.status >= "400" && o.status < "500":
		return "the probe's path answers HTTP " + o.status + ": the application does not serve it"
	case o.failure == "status" || o.failure == "unhealthy":
		return "the application's health check reports it unhealthy (" + o.result + ")"
	case o.failure == "timeout":
		return "the probe gets no answer within its timeout"
	case o.failure == "exec_missing":
		return "the exec probe's command " + o.missing + " is not in the container's image (" + o.missingError + ")"
	case o.failure == "exec":
		return "the probe's command fails: " + truncate(o.result, 80)
	}
	return ""
}

// probeOutcomeOf reads a probe failure message: "Liveness probe failed:
// HTTP probe failed with statuscode: 404", `... Get
// "http://10.1.2.3:8080/healthz": context deadline exceeded
// (Client.Timeout exceeded while awaiting headers)`, `... dial tcp
// 10.1.2.3:8080: connect: connection refused`, `service unhealthy
// (responded with "NOT_SERVING")` (gRPC), or an exec probe's output.
func probeOutcomeOf(msg string) probeOutcome {
	var o probeOutcome
	if m := findSubmatch(probeURLRE, msg); m != nil {
		o.path = m[1]
	}
	l := strings.ToLower(msg)
	switch m := findSubmatch(probeStatusRE, msg); {
	case m != nil:
		o.failure, o.status, o.result = "status", m[1], "HTTP "+m[1]
	case strings.Contains(l, "deadline exceeded") || strings.Contains(l, "timeout") || strings.Contains(l, "timed out"):
		o.failure, o.result = "timeout", "no answer within the timeout"
	case strings.Contains(l, "connection refused"):
		o.failure, o.result = "refused", "connection refused"
	case strings.Contains(l, "not_serving") || strings.Contains(l, "service unhealthy"):
		o.failure, o.result = "unhealthy", "NOT_SERVING"
	default:
		if m := findSubmatch(probeExecRE, strings.TrimSpace(msg)); m != nil && !strings.Contains(l, "connection reset") && !strings.Contains(l, " eof") {
			o.failure, o.result = "exec", m[1]
			for _, re := range probeMissingRE {
				if mm := findSubmatch(re, m[1]); mm != nil {
					o.failure, o.missing, o.missingError, o.missingText = "exec_missing", mm[1], mm[2], strings.TrimSpace(mm[0])
					break
				}
			}
		}
	}
	return o
}

// notFoundWordsRE are the ways an application logs a request it found no
// route for: an HTTP 404 in an access log (nginx, uvicorn, gunicorn,
// werkzeug, morgan, gin, ASP.NET Core's "Request finished"), Spring's
// "No mapping for GET /x" and "No static resource x.", Rails' "No route
// matches", Django's "Not Found: /x", Express's "Cannot GET /x".
var notFoundWordsRE = regexp.MustCompile(`(?i)(?:^|[\s"|\-])404(?:[\s"|]|$)|no mapping for|no static resource|no route matches|not found:|cannot get|notfound|not_found|route not found|no handler found`)

// notFoundLine reports whether a log line says the application found
// nothing for a request to path.
func notFoundLine(line, path string) bool {
	if path == "" || path == "/" || !matchLine(notFoundWordsRE, line) {
		return false
	}
	for rest := line; ; {
		i := strings.Index(rest, path)
		if i < 0 {
			break
		}
		before, after := byte(' '), byte(' ')
		if i > 0 {
			before = rest[i-1]
		}
		if j := i + len(path); j < len(rest) {
			after = rest[j]
		}
		// The path itself, not a longer one it starts or ends; in a URL
		// it follows the host.
		start := !pathChar(before) || matchLine(probeURLHostRE, rest[:i])
		if start && (!pathChar(after) || after == '?') {
			return true
		}
		rest = rest[i+len(path):]
	}
	// Spring 6.1: "No static resource health." for /health.
	return strings.Contains(strings.ToLower(line), "no static resource "+strings.ToLower(strings.TrimPrefix(path, "/"))+".")
}

// probeURLHostRE matches text ending with a URL's scheme and host.
var probeURLHostRE = regexp.MustCompile(`[a-z]+://[^\s/"]+$`)

func pathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/_-.~%", c) >= 0
}

// detectProbePathNotFound looks, for the workloads whose containers a
// failing HTTP liveness probe kills, in their pods' logs for the
// application saying it has nothing at the probe's path: the application is
// up and the path is wrong.
func detectProbePathNotFound(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, f := range found {
		if f.Kind != KindLivenessKill || done[f.Subject] {
			continue
		}
		ns, _, _ := strings.Cut(strings.TrimPrefix(f.Object, "pod "), "/")
		path, port := "", ""
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if p.Namespace != ns || WorkloadOfPod(p) != f.Subject {
				continue
			}
			for _, c := range p.Spec.Containers {
				if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && path == "" {
					path, port = c.LivenessProbe.HTTPGet.Path, portWord(c.LivenessProbe.HTTPGet)
				}
			}
		}
		if path == "" {
			path = f.fact("probe_path")
		}
		if path == "" {
			continue
		}
		line, src := "", ""
		seen := map[string]bool{}
		n := 0
		count := func(text string, k int) {
			if !seen[text] {
				seen[text] = true
				n += k
			}
		}
		for key, lines := range ev.K8s.PreviousLogs {
			pod := strings.Split(key, "/")
			if len(pod) < 2 || pod[0] != ns || workloadOfName(pod[1]) != f.Subject && !podOfWorkloadNamed(ev, ns, pod[1], f.Subject) {
				continue
			}
			for _, l := range lines {
				if notFoundLine(l.Text, path) {
					count(l.Text, 1)
					if line == "" || src > key {
						line, src = l.Text, key
					}
				}
			}
		}
		for i := range ev.Logs {
			set := &ev.Logs[i]
			if set.Subject != f.Subject || set.Host {
				continue
			}
			for _, l := range set.Lines {
				if notFoundLine(l.Text, path) {
					count(l.Text, 1)
					if line == "" {
						line, src = l.Text, set.Source
					}
				}
			}
			for _, t := range set.Templates {
				if notFoundLine(t.Example, path) {
					count(t.Example, max(t.Count, 1))
					if line == "" {
						line, src = t.Example, set.Source
					}
				}
			}
		}
		if line == "" {
			continue
		}
		done[f.Subject] = true
		g := Finding{Kind: KindLivenessKill, Subject: f.Subject, Object: f.Object, Namespace: f.Namespace, Time: f.Time, Severity: SevCritical,
			Weight: 0.9, Source: SrcKubernetes, Related: f.Related}
		g.setFact("probe_path", path)
		g.setFact("probe_port", port)
		g.setFact("not_found_line", ReadableLine(line))
		g.setFact("probe_failure", "status")
		g.setFact("probe_status", orWord(f.fact("probe_status"), "404"))
		g.setFact("probe_result", "HTTP "+g.fact("probe_status"))
		g.setFact("why", "the application logs that it has nothing at the probe's path "+path)
		g.Summary = fmt.Sprintf("%s answers its liveness probe's path %s with not found", f.Subject, path)
		g.Evidence = []string{fmt.Sprintf("%s logs (%s): %s: the application is up and has nothing at %s, the path its liveness probe checks",
			src, plural(n, "line", "lines"), quote(truncate(ReadableLine(line), 200), 210), path)}
		out = append(out, g)
	}
	return out
}

// portWord is an HTTP probe's port, "" when not set.
func portWord(g *corev1.HTTPGetAction) string {
	if g.Port.IntVal == 0 && g.Port.StrVal == "" {
		return ""
	}
	return g.Port.String()
}

// podOfWorkloadNamed reports whether the pod named name belongs to
// workload.
func podOfWorkloadNamed(ev *Gathered, ns, name, workload string) bool {
	for i := range ev.K8s.Pods {
		if p := &ev.K8s.Pods[i]; p.Namespace == ns && p.Name == name {
			return WorkloadOfPod(p) == workload
		}
	}
	return false
}

// probeConfig describes a container's liveness probe timing.
func probeConfig(c *corev1.Container) string {
	if c == nil || c.LivenessProbe == nil {
		return ""
	}
	lp := c.LivenessProbe
	s := fmt.Sprintf("initialDelaySeconds %d, periodSeconds %d, failureThreshold %d", lp.InitialDelaySeconds, max(lp.PeriodSeconds, 10), max(lp.FailureThreshold, 3))
	if lp.TimeoutSeconds > 0 {
		s += ", timeoutSeconds " + strconv.Itoa(int(lp.TimeoutSeconds))
	}
	return s
}

// healthDownRE are the ways an application logs one of its health checks
// reporting down: Spring Boot's AbstractHealthIndicator ("o.s.b.a.jdbc.
// DataSourceHealthIndicator : DataSource health check failed"), a custom
// indicator's logger saying DOWN or unhealthy, ASP.NET Core's health
// check service ("Health check kafka-lag with status Unhealthy completed
// after 2.1ms", "Health check db completed after 5003ms with status
// Unhealthy"), and Spring's "LivenessState changed to BROKEN".
var (
	healthIndicatorRE = regexp.MustCompile(`\b([A-Za-z0-9_]*(?:HealthIndicator|HealthCheck|HealthContributor))\b`)
	healthDownWordRE  = regexp.MustCompile(`(?i)\bdown\b|\bunhealthy\b|health check failed|out_of_service|\bbroken\b`)
	healthCheckNetRE  = regexp.MustCompile(`(?i)health check "?([\w.:/-]+)"? (?:with status (?:unhealthy|degraded)|completed after \S+ with status (?:unhealthy|degraded))`)
)

// healthDownOf reads a log line of a health check reporting down and
// returns the check's name ("" when the line says no such thing).
func healthDownOf(line string) (string, bool) {
	if m := healthCheckNetRE.FindStringSubmatch(line); m != nil {
		return "the health check " + m[1], true
	}
	if !matchLine(healthDownWordRE, line) {
		return "", false
	}
	if m := healthIndicatorRE.FindStringSubmatch(line); m != nil && m[1] != "HealthIndicator" && m[1] != "HealthCheck" {
		return m[1], true
	}
	return "", false
}

// detectProbeHealthDown looks, for the workloads whose containers a
// liveness probe answered with a 5xx kills, in their pods' logs for one
// of the application's health checks reporting down: that check is in the
// liveness group, and what it covers, not the process, is what fails.
func detectProbeHealthDown(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, f := range found {
		if f.Kind != KindLivenessKill || done[f.Subject] {
			continue
		}
		if fl := f.fact("probe_failure"); !(fl == "status" && f.fact("probe_status") >= "500" || fl == "unhealthy") {
			continue
		}
		ns, _, _ := strings.Cut(strings.TrimPrefix(f.Object, "pod "), "/")
		line, src, name := "", "", ""
		n := 0
		take := func(text, from string, k int) {
			nm, ok := healthDownOf(text)
			if !ok {
				return
			}
			n += k
			if line == "" {
				line, src, name = text, from, nm
			}
		}
		for i := range ev.Logs {
			set := &ev.Logs[i]
			if set.Subject != f.Subject || set.Host {
				continue
			}
			for _, l := range set.Lines {
				take(l.Text, set.Source, 1)
			}
			for _, t := range set.Templates {
				take(t.Example, set.Source, max(t.Count, 1))
			}
		}
		if line == "" {
			keys := make([]string, 0, len(ev.K8s.PreviousLogs))
			for key := range ev.K8s.PreviousLogs {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			for _, key := range keys {
				pod := strings.Split(key, "/")
				if len(pod) < 2 || pod[0] != ns || workloadOfName(pod[1]) != f.Subject && !podOfWorkloadNamed(ev, ns, pod[1], f.Subject) {
					continue
				}
				for _, l := range ev.K8s.PreviousLogs[key] {
					take(l.Text, key, 1)
				}
			}
		}
		if line == "" {
			continue
		}
		done[f.Subject] = true
		g := Finding{Kind: KindLivenessKill, Subject: f.Subject, Object: f.Object, Namespace: f.Namespace, Time: f.Time, Severity: SevCritical,
			Weight: 0.9, Source: SrcKubernetes, Related: f.Related}
		for _, k := range []string{"probe_failure", "probe_status", "probe_result", "probe_path", "probe_port", "probe"} {
			g.setFact(k, f.fact(k))
		}
		g.setFact("health_down_line", ReadableLine(line))
		g.setFact("health_indicator", name)
		g.setFact("why", "a health check in the liveness group reports down: "+orWord(name, "a health check"))
		g.Summary = fmt.Sprintf("%s fails its liveness probe because %s reports down", f.Subject, orWord(name, "a health check"))
		g.Evidence = []string{fmt.Sprintf("%s logs (%s): %s: a health check that the liveness probe includes reports down",
			src, plural(n, "line", "lines"), quote(truncate(ReadableLine(line), 200), 210))}
		out = append(out, g)
	}
	return out
}
