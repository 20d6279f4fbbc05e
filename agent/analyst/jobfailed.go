package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// KindJobFailed is a Job that gave up: its pods failed until it hit its
// backoff limit or its deadline.
const KindJobFailed Kind = "job_failed"

// A failed Job: its pods ended in Error and the job controller stopped
// retrying (BackoffLimitExceeded) or ran out of time (DeadlineExceeded).
// A failed Job is the current state of that Job however long ago it ran,
// until a later run of the same CronJob succeeds (then it is history). The
// chain goes one hop further, to the failing pod's log: the line that says
// why (an authentication failure, a migration error) is the root.
var jobFailed = &mechanism{
	kind:  KindJobFailed,
	class: classCause,
	label: "Job failed (backoff limit or deadline reached)",
	detect: func(ev *Gathered, _ []Finding) []Finding {
		fs := detectFailedJobs(ev.K8s, ev.Logs)
		for i := range fs {
			if f := &fs[i]; f.fact("reason") == "DeadlineExceeded" {
				explainDeadline(f, ev.Logs, []string{f.Subject, f.fact("job")}, ev.Changes, jobStart(ev.K8s, f.fact("job")))
				explainDeadlineThrottled(f, ev.Logs, []string{f.Subject, f.fact("job")}, ev.K8s.Jobs)
				explainDeadlineSerial(f, ev.K8s.Jobs)
			}
			// No line of its log and no timing says why: the finding only
			// restates that the Job failed (capped in confidence).
			if f := &fs[i]; f.fact("slow_line") == "" && f.fact("throttle_line") == "" && f.fact("serial_completions") == "" && (f.fact("line") == "" || matchLine(statusOnlyRE, ReadableLine(f.fact("line")))) {
				f.setFact("state_only", "true")
			}
			// A log that says only how a call failed (reset, refused,
			// timed out) names the dependency's failure, not its cause:
			// one hop short, like a caller's reports (capped alike).
			if f := &fs[i]; slices.Contains([]Kind{KindConnReset, KindConnRefused, KindTimeout}, Kind(f.fact("line_kind"))) {
				f.setFact("state_only", "true")
			}
			// A file the operating system refused: who runs, who owns it.
			fileAccessWhy(ev, &fs[i])
			// No cloud credentials: the ServiceAccount the pods run as.
			noCredentialsWhy(ev, &fs[i])
			// An expired session: the run outlasted its credentials.
			sessionOutlived(ev, &fs[i], jobRunLines(ev, &fs[i]))
			// A name that does not resolve is followed to its Service.
			// A name that does not resolve, with no Service found missing,
			// says that the lookup failed, not why (the resolver, its
			// upstream, the path to it): one hop short as well.
			if f := &fs[i]; Kind(f.fact("line_kind")) == KindDNS {
				markMissingService(f, ev.K8s)
				if f.fact("missing_service") == "" {
					f.setFact("state_only", "true")
				}
			}
		}
		return fs
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.Kind == KindConfigChange || strings.Contains(strings.ToLower(c.fact("description")), "secret")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the Job %s", orWord(h.fact("job"), h.Subject))
		if cj := h.fact("cronjob"); cj != "" {
			d += fmt.Sprintf(" of CronJob %s", cj)
		}
		d += " failed"
		if r := h.fact("reason"); r != "" {
			d += fmt.Sprintf(" (%s: %s)", r, jobReasonWords(r))
		}
		d += describeDeadline(h)
		d += describeDeadlineThrottled(h)
		d += describeDeadlineSerial(h)
		if r := h.fact("failed_runs"); r != "" && strings.Contains(r, "in a row") {
			d += " (" + r + ")"
		}
		if p := h.fact("pod"); p != "" {
			d += fmt.Sprintf(": its pod %s", p)
			if c := h.fact("exit_code"); c != "" {
				d += fmt.Sprintf(" exited with code %s (%s)", c, exitMeaningStr(c))
			} else {
				d += " failed"
			}
		}
		if l := h.fact("line"); l != "" && l != h.fact("throttle_line") {
			d += "; its log says why: " + quote(ReadableLine(l), 240)
			if h.fact("session_lifetime") != "" {
				d += "; " + describeSessionOutlived(h)
			} else if h.fact("file_refused") != "" {
				d += " (the operating system refused the file access)"
				d += h.clause(": ", "file_why")
			} else if k := Kind(h.fact("line_kind")); k != "" {
				d += fmt.Sprintf(" (%s)", infoOf(k).label)
			}
			d += h.clause("; ", "missing_service")
			d += describeNoCredentials(h)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		what := orWord(h.fact("cronjob"), h.fact("job"))
		lk := Kind(h.fact("line_kind"))
		if h.fact("file_refused") != "" {
			lk = kindFileRefused
		}
		if h.fact("session_lifetime") != "" {
			lk = kindSessionOutlived
		}
		if recommendNoCredentials(h, r, "the Job "+what) {
			lk = kindNoCredentialsHandled
		}
		switch lk {
		case kindNoCredentialsHandled:
		case kindSessionOutlived:
			recommendSessionOutlived(h, r)
		case kindFileRefused:
			r.high("Let the user the Job %s runs as write the path it was refused: set the pod's securityContext.fsGroup (or runAsUser/runAsGroup) to the image's user, or chown the volume's directory to it, then re-run it: kubectl create job --from=cronjob/%s %s-manual", what, what, what)
		case KindThrottling:
			if !recommendDeadlineThrottled(h, r) {
				r.high("Lower the rate of the calls the Job %s makes to what its API allows, then re-run it", what)
			}
		case KindAuth:
			r.high("Fix the credentials the Job %s uses (the Secret it reads, the password or token after a rotation), then re-run it: kubectl create job --from=cronjob/%s %s-manual", what, what, what)
		case KindDNS, KindConnRefused, KindTimeout:
			if h.fact("missing_service") != "" {
				r.high("Point the Job %s at a Service that exists (%s), then re-run it: the Service its configuration names is gone", what, h.fact("services_there"))
				break
			}
			r.high("Make the dependency the Job %s calls reachable (name, Service, network policy), then re-run it", what)
		default:
			switch {
			case h.fact("line") != "":
				r.high("Fix the failure the log of %s names (%s), then re-run the Job", orWord(h.fact("pod"), "its pod"), truncate(h.fact("line"), 160))
			case recommendDeadlineSerial(h, r):
			case h.fact("reason") == "DeadlineExceeded":
				// No log of the run was read: what it waited on is not known.
				rerun := "re-run it"
				if cj := h.fact("cronjob"); cj != "" {
					rerun += fmt.Sprintf(": kubectl create job --from=cronjob/%s %s-manual", cj, cj)
				}
				r.high("Find what the run of %s waited on until its activeDeadlineSeconds stopped it: read the log of its pod (kept where the cluster's logs are collected once the Job deleted the pod: a log search, the log files handed over), then %s", what, rerun)
			default:
				r.high("Read the log of the pod of %s for why it failed (kubectl logs job/%s, or where the cluster's logs are collected once the pod is gone), fix that, then re-run the Job", what, orWord(h.fact("job"), what))
			}
		}
		r.med("Check whether the Job's work is idempotent before re-running it (a half-applied migration, a partial backup)")
		r.low("Alert on failed Jobs (kube_job_status_failed > 0) and on CronJobs whose last successful run is too old")
	},
}

// jobStart is when a Job started, when its object says.
func jobStart(k K8sEvidence, name string) time.Time {
	for i := range k.Jobs {
		if j := &k.Jobs[i]; j.Name == name && j.Status.StartTime != nil {
			return j.Status.StartTime.Time
		}
	}
	return time.Time{}
}

// jobReasonWords says what a Job failure reason means.
func jobReasonWords(r string) string {
	switch r {
	case "BackoffLimitExceeded":
		return "its pods failed as many times as its backoffLimit allows, so it stopped retrying"
	case "DeadlineExceeded":
		return "it ran longer than its activeDeadlineSeconds and was stopped"
	}
	return "the job controller marked it failed"
}

var cronJobSuffixRE = regexp.MustCompile(`^(.+)-\d{6,}$`)

// cronJobOf names the CronJob a Job was created by, from its name
// (<cronjob>-<scheduled minute>), or "".
func cronJobOf(job string) string {
	if m := findSubmatch(cronJobSuffixRE, job); m != nil {
		return m[1]
	}
	return ""
}

// jobOfPod names the Job that owns a pod ("" for none).
func jobOfPod(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" {
			return o.Name
		}
	}
	if j := p.Labels["job-name"]; j != "" {
		return j
	}
	return p.Labels["batch.kubernetes.io/job-name"]
}

// detectFailedJobs finds Jobs whose pods failed and that no later run of
// the same CronJob superseded, with the failing pod's log line.
func detectFailedJobs(k K8sEvidence, logs []LogSet) []Finding {
	type job struct {
		ns, name  string
		created   time.Time
		failed    []*corev1.Pod
		succeeded bool
		// statusFailed: the Job object's own condition Failed is true.
		statusFailed bool
		reason       string
		message      string
		at           time.Time
		// inferred: failed by what its CronJob says (not among its
		// active runs, not complete).
		inferred bool
	}
	jobs := map[string]*job{}
	get := func(ns, name string) *job {
		key := ns + "/" + name
		if jobs[key] == nil {
			jobs[key] = &job{ns: ns, name: name}
		}
		return jobs[key]
	}
	var jobNames []string
	for i := range k.Jobs {
		o := &k.Jobs[i]
		jobNames = append(jobNames, o.Name)
		j := get(o.Namespace, o.Name)
		j.created = earliest(j.created, o.CreationTimestamp.Time)
		if o.Status.StartTime != nil {
			j.created = earliest(j.created, o.Status.StartTime.Time)
		}
		for _, c := range o.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobFailed:
				j.statusFailed = true
				if j.reason == "" {
					j.reason, j.message, j.at = c.Reason, c.Message, c.LastTransitionTime.Time
				}
			case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
				j.succeeded = true
			}
		}
	}
	byCron := cronRuns(k)
	for _, runs := range byCron {
		for _, r := range runs {
			if r.Inferred && r.State == runFailed {
				j := get(r.Job.Namespace, r.Job.Name)
				j.statusFailed, j.inferred = true, true
			}
		}
	}
	for i := range k.Events {
		if e := &k.Events[i]; e.InvolvedObject.Kind == "Job" {
			jobNames = append(jobNames, e.InvolvedObject.Name)
		}
	}
	for i := range k.Pods {
		p := &k.Pods[i]
		name := jobOfPod(p)
		if name == "" {
			// A pod listed without its owner (a table of kubectl get pods):
			// the Job's pods are named <job>-<5 characters>.
			for _, j := range jobNames {
				if rest, ok := strings.CutPrefix(p.Name, j+"-"); ok && len(rest) == 5 && isAlnumLower(rest) {
					name = j
				}
			}
		}
		if name == "" {
			continue
		}
		j := get(p.Namespace, name)
		j.created = earliest(j.created, p.CreationTimestamp.Time)
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			j.succeeded = true
		case p.Status.Phase == corev1.PodFailed || podExitedWithError(p):
			j.failed = append(j.failed, p)
		}
	}
	for i := range k.Events {
		e := &k.Events[i]
		if e.InvolvedObject.Kind != "Job" {
			continue
		}
		switch e.Reason {
		case "BackoffLimitExceeded", "DeadlineExceeded":
			j := get(orWord(e.InvolvedObject.Namespace, e.Namespace), e.InvolvedObject.Name)
			first, _ := eventTime(e)
			j.reason, j.message, j.at = e.Reason, e.Message, first
		case "Completed", "SuccessfulCompletions":
			get(orWord(e.InvolvedObject.Namespace, e.Namespace), e.InvolvedObject.Name).succeeded = true
		}
	}
	// The latest successful run of each CronJob supersedes older failures.
	lastOK := map[string]time.Time{}
	for _, j := range jobs {
		if cj := cronJobOf(j.name); cj != "" && j.succeeded && j.created.After(lastOK[j.ns+"/"+cj]) {
			lastOK[j.ns+"/"+cj] = j.created
		}
	}
	keys := slices.Sorted(maps.Keys(jobs))
	var out []Finding
	for _, key := range keys {
		j := jobs[key]
		if j.succeeded || len(j.failed) == 0 && j.reason == "" && !j.statusFailed {
			continue
		}
		cj := cronJobOf(j.name)
		if cj != "" && !lastOK[j.ns+"/"+cj].IsZero() && lastOK[j.ns+"/"+cj].After(j.created) {
			continue // a later run succeeded
		}
		subject := orWord(cj, j.name)
		f := Finding{Kind: KindJobFailed, Subject: subject, Object: "job " + j.ns + "/" + j.name, Namespace: j.ns, Source: SrcKubernetes,
			Severity: SevCritical, Weight: 0.8, Time: j.at}
		f.setFact("job", j.name)
		f.setFact("cronjob", cj)
		f.setFact("reason", j.reason)
		f.setFact("current", "true")
		ev := fmt.Sprintf("Job %s/%s failed", j.ns, j.name)
		if j.reason != "" {
			ev += fmt.Sprintf(" with reason %s: %s", j.reason, quote(j.message, 160))
			f.Weight = 0.9
		}
		if n := len(j.failed); n > 0 {
			ev += fmt.Sprintf("; %s failed", plural(n, "pod", "pods"))
		}
		if j.inferred && j.reason == "" {
			ev += fmt.Sprintf(": it did not complete and is not among the active runs of CronJob %s", cj)
		}
		f.Evidence = []string{ev}
		if cj != "" {
			failedRuns(&f, byCron[j.ns+"/"+cj], j.name)
		}
		// The latest failed pod and its log.
		sort.SliceStable(j.failed, func(a, b int) bool { return j.failed[a].CreationTimestamp.After(j.failed[b].CreationTimestamp.Time) })
		for _, p := range j.failed {
			f.setFact("pod", p.Name)
			var lines []string
			for _, cs := range p.Status.ContainerStatuses {
				term := cs.State.Terminated
				if term == nil {
					term = cs.LastTerminationState.Terminated
				}
				if term == nil || !failedTermination(term) {
					continue
				}
				f.Time = earliest(f.Time, term.FinishedAt.Time)
				if term.ExitCode != 0 {
					f.setFact("exit_code", strconv.Itoa(int(term.ExitCode)))
				}
				f.setFact("container", cs.Name)
				f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s container %s terminated with reason %s, exit code %d (%s) at %s", p.Namespace, p.Name, cs.Name, orDash(term.Reason), term.ExitCode, exitMeaning(term.ExitCode), ts(term.FinishedAt.Time)))
				for _, l := range k.PreviousLogs[p.Namespace+"/"+p.Name+"/"+cs.Name] {
					lines = append(lines, l.Text)
				}
				break
			}
			if len(lines) == 0 {
				lines = podLogLines(logs, p.Name)
			}
			useLog(&f, lines, "pod "+p.Name)
			break
		}
		// The pods are gone (deleted with the Job, or stopped at its
		// deadline): the log of the run is read from the sources of its
		// CronJob or Job.
		if f.fact("line") == "" {
			for _, set := range logs {
				if set.Subject == subject || set.Subject == j.name {
					var lines []string
					for _, t := range set.Templates {
						lines = append(lines, t.Example)
					}
					useLog(&f, lines, set.Source)
				}
			}
		}
		if f.Time.IsZero() {
			f.Time = j.created
		}
		f.Summary = fmt.Sprintf("Job %s/%s failed (%s)", j.ns, j.name, orWord(j.reason, "pods failed"))
		if l := f.fact("line"); l != "" {
			f.Summary += ": " + truncate(ReadableLine(l), 140)
		}
		out = append(out, f)
	}
	return out
}

// failedRuns says which runs of a failed Job's CronJob failed since its
// last run that completed, and when each was scheduled: the latest failed
// run is the CronJob's state; an earlier one is its history (weighs less).
func failedRuns(f *Finding, runs []cronRun, job string) {
	at := slices.IndexFunc(runs, func(r cronRun) bool { return r.Job.Name == job })
	if at < 0 {
		return
	}
	var streak []string
	latest := ""
	for _, r := range runs {
		switch r.State {
		case runComplete:
			streak, latest = nil, ""
		case runFailed:
			streak = append(streak, r.label())
			latest = r.Job.Name
		}
	}
	if latest != job {
		f.Weight *= 0.6
		return
	}
	d := fmt.Sprintf("%s of CronJob %s failed: %s", plural(len(streak), "run", "runs in a row"), f.fact("cronjob"), strings.Join(streak, ", "))
	if ok := lastComplete(runs, at); ok != nil {
		d += "; the last run that completed was " + ok.label()
		if t := ok.ran(time.Time{}); t > 0 {
			d += fmt.Sprintf(", in %s", t.Round(time.Second))
		}
	}
	f.Evidence = append(f.Evidence, d)
	f.setFact("failed_runs", d)
	if len(streak) > 1 {
		// Failing since the first of them: the onset.
		f.Time = earliest(runs[at].Scheduled, scheduledOf(runs, len(runs)-1, len(streak)))
	}
}

// scheduledOf is when the n-th failed run before index i (counting back
// from it) was scheduled.
func scheduledOf(runs []cronRun, i, n int) time.Time {
	var t time.Time
	for ; i >= 0 && n > 0; i-- {
		if runs[i].State == runFailed {
			t = runs[i].Scheduled
			n--
		}
	}
	return t
}

// statusOnlyRE is an exception's head that names a status and no reason
// ("kubernetes.client.exceptions.ApiException: (403)", "HTTPError: 500").
var statusOnlyRE = regexp.MustCompile(`^[\w.]*(?:Exception|Error)\s*:?\s*\(?\d{3}\)?\s*$`)

// useLog sets the line of a failed run's log that says why it failed,
// read from source (a pod, a log file), when it has one.
func useLog(f *Finding, lines []string, source string) {
	line := bestCauseLine(lines)
	if line == "" || f.fact("line") != "" {
		return
	}
	// A client's exception names its status at its head ("ApiException:
	// (403)") and the reason in its body, lines below ("HTTP response
	// body: {... is forbidden: User ...}", fabric8's "Message: ... is
	// forbidden"): an RBAC refusal there is the root, the Job's failure
	// its consequence (rbacdenied.go names the user, verb and resource).
	for _, l := range lines {
		if matchLine(forbiddenRE, l) {
			l = forbiddenMessage(l)
			f.setFact("line", l)
			f.setFact("last_log", l)
			f.setFact("explained_by", string(KindRBACDenied))
			f.Weight = 0.7
			f.Evidence = append(f.Evidence, fmt.Sprintf("log of %s: %s", source, quote(ReadableLine(l), 240)))
			return
		}
	}
	f.setFact("line", line)
	f.setFact("last_log", line)
	f.Weight = 0.95
	if kind, _ := ClassifyLine(line); kind != "" {
		f.setFact("line_kind", string(kind))
		// Data the run fetched that no longer parses: the producer's
		// change is the root (decodefailure.go), the failed run its
		// consequence. So are the two ends of a connection that
		// disagree on TLS (tlsmismatch.go): the end that changed.
		if kind == KindDecodeFailure || kind == KindTLSMismatch {
			f.setFact("explained_by", string(kind))
			f.Weight = 0.7
		}
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("log of %s: %s", source, quote(ReadableLine(line), 240)))
	if dep := errorComponent(line); dep != "" {
		f.setFact("error_component", dep)
	}
}

// errorPrefixRE reads the component a wrapped error names first, as Go
// programs and most clients write their errors ("paystream: 429 Too Many
// Requests", "ledger-api: 503 Service Unavailable"): a short name, a colon,
// then an HTTP status the component answered.
var errorPrefixRE = regexp.MustCompile(`(?:\berr(?:or)?="?|\berror: )([a-z][a-z0-9-]{2,40}): (?:HTTP |status |code )?([45]\d\d)\b`)

// errorWords are prefixes that name an operation or a protocol, not a
// component.
var errorWords = map[string]bool{"error": true, "failed": true, "dial": true, "read": true, "write": true, "get": true, "post": true,
	"put": true, "delete": true, "patch": true, "http": true, "https": true, "rpc": true, "grpc": true, "tcp": true, "status": true,
	"request": true, "response": true, "code": true, "context": true, "unexpected": true}

// errorComponent names the component a Job's failing line says answered
// it with an HTTP error status ("" for none): the external API or service
// the run depends on, an affected system of its own.
func errorComponent(line string) string {
	m := findSubmatch(errorPrefixRE, line)
	if m == nil || errorWords[m[1]] {
		return ""
	}
	return m[1]
}

// podExitedWithError reports whether a pod's containers all stopped and
// one failed (a Job pod with restartPolicy Never).
func podExitedWithError(p *corev1.Pod) bool {
	failed := false
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			return false
		}
		if failedTermination(t) {
			failed = true
		}
	}
	return failed
}

// podLogLines returns the mined lines of a pod's log (one example per
// template), when its log was read with its workload's.
func podLogLines(logs []LogSet, pod string) []string {
	var out []string
	for _, set := range logs {
		if set.Source != pod && set.Subject != pod {
			continue
		}
		for _, t := range set.Templates {
			out = append(out, t.Example)
		}
	}
	return out
}

// bestCauseLine picks the line of a failed run's log that says why it
// failed: a "Caused by:" or an exception with its message before a
// generic error line, a line naming a mechanism (a DNS failure, a
// throttled call) before one naming only a crash, a line naming a known
// failure before one that only reads as an error; the last of equals.
func bestCauseLine(lines []string) string {
	best, bestScore := "", 0
	for _, l := range lines {
		score := 2 * RootCauseScore(l)
		if k, isErr := ClassifyLine(l); k != "" {
			score += 3
			// A named mechanism (a name that does not resolve, a
			// throttled API) is deeper than the crash it ends in.
			if c := infoOf(k).class; c == classCause || c == classDependency {
				score += 2
			}
		} else if isErr {
			score++
		}
		if score > 0 && score >= bestScore {
			best, bestScore = l, score
		}
	}
	return best
}

// failedTermination reports whether a container ended in failure: a
// non-zero exit code, or a failure reason when the code is not known (a
// kubectl table shows only "Error").
func failedTermination(t *corev1.ContainerStateTerminated) bool {
	return t.ExitCode != 0 || t.Reason != "" && t.Reason != "Completed"
}
