package analyst

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Containers in CrashLoopBackOff: a symptom whose exit code and last log
// lines point at the cause (a missing setting, a failing dependency...).
var crashLoop = &mechanism{
	kind:      KindCrashLoop,
	class:     classSymptom,
	label:     "CrashLoopBackOff",
	container: crashingContainer,
	// A client failing to reach one of the crashing pods (a lookup of a
	// StatefulSet pod's name fails while none is ready, connections are
	// refused) is a victim of the crash.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindDNS, KindConnRefused:
		default:
			return false
		}
		for _, s := range []string{f.Subject, f.fact("target")} {
			if s != "" && s != h.Subject && workloadOfName(s) == h.Subject {
				return true
			}
		}
		return false
	},
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "BackoffLimitExceeded", "DeadlineExceeded":
			return 0.6, true
		case "BackOff":
			return 0.7, strings.Contains(msg, "restarting failed container") && !strings.Contains(msg, "pulling image")
		}
		return 0, false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s containers are in CrashLoopBackOff", s)
		if c := h.fact("init_container"); c != "" {
			d = fmt.Sprintf("%s pods are stuck in Init:CrashLoopBackOff: their init container %s keeps failing", s, c)
		}
		if c := h.fact("exit_code"); c != "" {
			d += fmt.Sprintf(", exiting with code %s (%s)", c, exitMeaningStr(c))
		}
		if l := h.fact("last_log"); l != "" {
			d += "; last log line: " + quote(lastLineOfExit(l, h.fact("exit_code")), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}

// crashingContainer judges a container in CrashLoopBackOff, or one that
// recently terminated with an error (a Job's, an init container's), and
// asks the other mechanisms for the cause its termination and last lines
// show.
func crashingContainer(c *containerState) []Finding {
	if c.killedByOOM() {
		return nil
	}
	p, cs, term, cobj, lastLines := c.Pod, c.Status, c.Term, c.Object, c.LastLines
	if c.Waiting != nil {
		if c.Waiting.Reason != "CrashLoopBackOff" {
			return nil
		}
		f := c.Base
		f.Kind, f.Severity, f.Weight = KindCrashLoop, SevCritical, 0.85
		f.Time = containerSince(p, cs)
		if t := notReadySince(p); !t.IsZero() && cs.RestartCount > 1 {
			// Not ready since then, restarting ever since: the loop
			// began there, not at its latest restart.
			f.Time = earliest(t, f.Time)
		}
		ev := fmt.Sprintf("%s is in CrashLoopBackOff, restart count %d", cobj, cs.RestartCount)
		if term != nil {
			if validStart(p, term.StartedAt.Time) {
				f.Time = earliest(term.StartedAt.Time, f.Time)
			}
			if exitKnown(term) {
				ev += fmt.Sprintf("; last terminated with reason %s, exit code %d (%s) at %s", orDash(term.Reason), term.ExitCode, exitMeaning(term.ExitCode), ts(term.FinishedAt.Time))
				f.setFact("exit_code", strconv.Itoa(int(term.ExitCode)))
				f.setFact("reason", term.Reason)
			} else if !term.FinishedAt.IsZero() {
				ev += fmt.Sprintf("; last restarted at %s (its exit code is not shown)", ts(term.FinishedAt.Time))
			}
			if term.Message != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("termination message: %s", quote(term.Message, 200)))
			}
		}
		f.Evidence = append([]string{ev}, f.Evidence...)
		if n := len(lastLines); n > 0 {
			from := max(0, n-3)
			var qs []string
			for _, l := range lastLines[from:] {
				qs = append(qs, quote(l.Text, 200))
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("last log lines of the crashed container: %s", strings.Join(qs, " / ")))
			f.setFact("last_log", causeLine(lastLines))
		}
		exit := ""
		if c := f.fact("exit_code"); c != "" {
			exit = " (exit code " + c + ")"
		}
		f.Summary = fmt.Sprintf("%s in CrashLoopBackOff%s", cobj, exit)
		if isInitContainer(p, cs.Name) {
			f.setFact("init_container", cs.Name)
			f.Summary = fmt.Sprintf("%s (init container) in Init:CrashLoopBackOff%s", cobj, exit)
		}
		f.setFact("container", cs.Name)
		f.setFact("restarts", strconv.Itoa(int(cs.RestartCount)))
		if c.Spec != nil {
			f.setFact("image", c.Spec.Image)
		}
		return append([]Finding{f}, crashCauses(f, c)...)
	}
	if f, ok := rowError(c); ok {
		return append([]Finding{f}, crashCauses(f, c)...)
	}
	// Restarted recently without a waiting state, or terminated with an
	// error (jobs, init containers).
	if term == nil || term.ExitCode == 0 || !c.Window.recent(term.FinishedAt.Time) || cs.RestartCount < 2 && c.Current == nil {
		return nil
	}
	f := c.Base
	f.Kind, f.Severity, f.Weight = KindCrashLoop, SevWarning, 0.6
	f.Time = term.StartedAt.Time
	if f.Time.IsZero() {
		f.Time = term.FinishedAt.Time
	}
	f.Summary = fmt.Sprintf("%s terminated with exit code %d (%s), %s", cobj, term.ExitCode, orDash(term.Reason), plural(int(cs.RestartCount), "restart", "restarts"))
	f.Evidence = []string{fmt.Sprintf("%s last terminated with reason %s, exit code %d (%s) at %s; restart count %d", cobj, orDash(term.Reason), term.ExitCode, exitMeaning(term.ExitCode), ts(term.FinishedAt.Time), cs.RestartCount)}
	if n := len(lastLines); n > 0 {
		line := causeLine(lastLines)
		f.Evidence = append(f.Evidence, fmt.Sprintf("last log line of the crashed container: %s", quote(line, 200)))
		f.setFact("last_log", line)
	}
	f.setFact("exit_code", strconv.Itoa(int(term.ExitCode)))
	f.setFact("container", cs.Name)
	return append([]Finding{f}, crashCauses(f, c)...)
}

var (
	errDetailRE  = regexp.MustCompile(`(?i)\berr(or)?=|"err(or)?"\s*:|\bcaused by\b|\bexception\b|\b(error|failed|invalid|cannot|can't|unable)\b[^:]*:\s*\S`)
	genericEndRE = regexp.MustCompile(`(?i)\b(exiting|shutting down|exited|terminating|stopping|bye)\b`)
	// thrownRE is an exception thrown with its message
	// ("kafka.common.InconsistentClusterIdException: The Cluster ID …",
	// "ValueError: …").
	thrownRE     = regexp.MustCompile(`^\s*(?:[\w$]+\.)*[A-Z]\w*(?:Exception|Error):\s*\S`)
	configPathRE = regexp.MustCompile(`(?:path|file|config)=["']?(/[\w./-]+)|(/[\w./-]+\.(?:ya?ml|json|toml|conf|cfg|ini|properties|xml|hcl))\b`)
)

// causeLine picks, among the last lines of a crashed container, the line
// that carries the cause: a configuration error, then an error line with
// its detail (err="yaml: line 47: …", "invalid …: …"), rather than a
// final generic "exiting" line.
func causeLine(lines []evidence.LogLine) string {
	if len(lines) == 0 {
		return ""
	}
	best, bestScore := len(lines)-1, 0
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-15; i-- {
		t := lines[i].Text
		score := 0
		switch {
		case matchLine(configInvalidRE, t) && matchLine(errDetailRE, t):
			score = 4
		case matchLine(configInvalidRE, t):
			score = 3
		case matchLine(errDetailRE, t) && matchLine(errorWordRE, t) && !matchLine(genericEndRE, t),
			matchLine(thrownRE, t) && !matchLine(genericEndRE, t):
			score = 2
		case matchLine(errorWordRE, t):
			score = 1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return lines[best].Text
}

// rowError judges a container a kubectl get pods row shows in Error
// between restarts ("2/3  Error  11 (4s ago)"): it crashed again and waits
// to be restarted, its exit code not shown. The onset is its last restart
// before this one.
func rowError(c *containerState) (Finding, bool) {
	cur, cs := c.Current, c.Status
	if cur == nil || cur.Reason != "Error" || exitKnownCode(cur) || cs.RestartCount == 0 {
		return Finding{}, false
	}
	f := c.Base
	f.Kind, f.Severity, f.Weight = KindCrashLoop, SevWarning, 0.6
	f.Time = c.Window.End
	if t := cs.LastTerminationState.Terminated; t != nil && !t.FinishedAt.IsZero() {
		f.Time = t.FinishedAt.Time
	}
	f.Summary = fmt.Sprintf("%s terminated with reason Error (exit code not shown), %s", c.Object, plural(int(cs.RestartCount), "restart", "restarts"))
	f.Evidence = []string{fmt.Sprintf("%s is terminated with reason Error after %s; it is restarted again and again", c.Object, plural(int(cs.RestartCount), "restart", "restarts"))}
	if n := len(c.LastLines); n > 0 {
		line := causeLine(c.LastLines)
		f.Evidence = append(f.Evidence, fmt.Sprintf("last log line of the crashed container: %s", quote(line, 200)))
		f.setFact("last_log", line)
	}
	f.setFact("container", c.Status.Name)
	f.setFact("restarts", strconv.Itoa(int(cs.RestartCount)))
	return f, true
}

// exitKnownCode reports whether a termination carries its exit code or
// times (a reason alone is what a kubectl get pods row shows).
func exitKnownCode(t *corev1.ContainerStateTerminated) bool {
	return t.ExitCode != 0 || t.Signal != 0 || !t.StartedAt.IsZero() || !t.FinishedAt.IsZero()
}

// exitKnown reports whether a termination says how the container ended:
// a kubectl get pods row tells only when it last restarted ("12 (2m ago)"),
// and its exit code 0 is then no exit code at all (the kubelet gives a
// container that exited 0 the reason Completed).
func exitKnown(t *corev1.ContainerStateTerminated) bool {
	return t.ExitCode != 0 || t.Reason != "" || t.Signal != 0 || !t.StartedAt.IsZero()
}

// notReadySince is when a pod last became not ready, from its Ready
// condition (zero when it is ready or the condition is unknown).
func notReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() && validStart(p, c.LastTransitionTime.Time) {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// joinCrashVictims puts a dependency that crash-loops before the failures
// of its clients to reach it: when every finding a dependency hypothesis
// rests on (lookups of the crashing pods' names failing, connections to
// them refused) supports a crash-loop hypothesis, the crash is the cause
// and the failed calls its consequence.
func joinCrashVictims(hs []*Hypothesis) {
	for _, k := range hs {
		if k.Kind != KindCrashLoop || len(k.Support) == 0 {
			continue
		}
		for _, d := range hs {
			if d == k || d.class() != classDependency || len(d.Primary) == 0 || d.Score <= k.Score {
				continue
			}
			all := true
			for _, f := range d.Primary {
				if !slices.Contains(k.Support, f) {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			k.Score = math.Min(0.95, d.Score+0.01)
			d.Score = math.Min(d.Score, k.Score*0.8)
		}
	}
}

// lastLineOfExit is a crashed container's last line as an answer quotes
// it. After a normal exit (code 0) the line's own fields say why the
// process stopped (a run-once mode, a finished pass), so a JSON line keeps
// its short fields besides its time, level and message.
func lastLineOfExit(line, exitCode string) string {
	l := ReadableLine(line)
	if exitCode != "0" || l == line {
		return l
	}
	var m map[string]any
	if json.Unmarshal([]byte(strings.TrimSpace(line)), &m) != nil {
		return l
	}
	var extra []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch strings.ToLower(k) {
		case "ts", "time", "timestamp", "@timestamp", "level", "severity", "msg", "message", "error", "err", "exception",
			"caller", "logger", "source", "version", "commit", "pid", "hostname", "trace_id", "span_id":
			continue
		}
		switch v := m[k].(type) {
		case string, float64, bool:
			if s := fmt.Sprint(v); len(s) <= 40 {
				extra = append(extra, k+"="+s)
			}
		}
	}
	if len(extra) == 0 {
		return l
	}
	return l + " " + strings.Join(extra[:min(len(extra), 4)], " ")
}
