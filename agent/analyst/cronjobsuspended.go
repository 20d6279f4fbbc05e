package analyst

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	batchv1 "k8s.io/api/batch/v1"
)

// A CronJob that is suspended (spec.suspend: true) creates no Job: its
// runs do not fail, they never happen, and nothing logs an error. Asked
// why a scheduled run left no output, the suspension is the answer; the
// change that suspended it (a maintenance window) and a later change that
// resumed its neighbours but not it say how it stayed so.

// KindCronSuspended is a CronJob whose runs are not created because it
// is suspended.
const KindCronSuspended Kind = "cronjob_suspended"

var cronJobSuspended = &mechanism{
	kind:   KindCronSuspended,
	class:  classCause,
	label:  "CronJob suspended (no runs created)",
	detect: detectSuspendedCronJobs,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the CronJob %s is suspended (spec.suspend: true), so it creates no Job: its scheduled runs (%s) do not happen", h.Subject, orWord(h.fact("schedule"), "its schedule"))
		d += h.clause("; it last ran at ", "last_schedule")
		d += h.clause("; it was suspended by the ", "suspended_by")
		if h.fact("suspended_by") == "" {
			d += h.clause("; spec.suspend was last written by ", "suspend_writer")
		}
		if sel := h.fact("resume_selector"); sel != "" {
			d += fmt.Sprintf("; the resume step, the %s, selects CronJobs by the label %s, which %s does not carry (its labels: %s), so it resumed other CronJobs but left this one suspended", h.fact("resumed_others"), sel, h.Subject, h.fact("labels"))
		} else {
			d += h.wrapped("; the ", "resumed_others", " resumed other CronJobs but not this one")
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Resume the CronJob: kubectl patch cronjob %s -n %s -p '{\"spec\":{\"suspend\":false}}', and run the missed runs by hand (kubectl create job --from=cronjob/%s %s-manual)", h.Subject, orWord(h.top().Namespace, sc.Namespace), h.Subject, h.Subject)
		r.med("Make maintenance runbooks resume every CronJob they suspend (list them with kubectl get cronjobs -A -o jsonpath on .spec.suspend)")
		r.low("Alert on CronJobs whose last schedule time is older than their period (kube_cronjob_status_last_schedule_time, kube_cronjob_spec_suspend)")
	},
}

var (
	suspendTrueRE  = regexp.MustCompile(`(?i)"?suspend"?\s*[:=]\s*"?true|\bsuspend(?:ed|ing)?\b`)
	suspendFalseRE = regexp.MustCompile(`(?i)"?suspend"?\s*[:=]\s*"?false|\bresum(?:e|ed|ing)\b|\bunsuspend`)
)

// detectSuspendedCronJobs finds suspended CronJobs. One the question names
// is a cause with the changes that suspended it; others are background
// (a suspension may be meant) and weigh little.
func detectSuspendedCronJobs(ev *Gathered, _ []Finding) []Finding {
	subjects := ev.Scope.Subjects()
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	var out []Finding
	for i := range ev.K8s.CronJobs {
		cj := &ev.K8s.CronJobs[i]
		if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
			continue
		}
		asked := containsFold(subjects, cj.Name)
		f := Finding{Kind: KindCronSuspended, Subject: cj.Name, Object: "cronjob " + cj.Namespace + "/" + cj.Name, Namespace: cj.Namespace,
			Source: SrcKubernetes, Severity: SevInfo, Weight: 0.3, Time: ev.Window.Start}
		if asked {
			f.Severity, f.Weight = SevCritical, 0.9
		}
		f.setFact("schedule", cj.Spec.Schedule)
		// The suspension is the CronJob's state now, however long ago it
		// was set.
		f.setFact("current", "true")
		ev1 := fmt.Sprintf("CronJob %s/%s is suspended (spec.suspend: true, schedule %q)", cj.Namespace, cj.Name, cj.Spec.Schedule)
		if t := cj.Status.LastScheduleTime; t != nil {
			f.setFact("last_schedule", ts(t.Time))
			ev1 += fmt.Sprintf("; last scheduled at %s, %s before", ts(t.Time), ev.Window.End.Sub(t.Time).Truncate(time.Minute))
			if t.After(ev.Window.BaselineStart) {
				f.Time = t.Time
			}
		}
		f.Evidence = []string{ev1}
		// The change that suspended it, and a later one that resumed
		// others without it.
		var susp *evidence.Change
		for j := range changes {
			c := &changes[j]
			d := c.Description
			if mentionsName(d, cj.Name) && matchLine(suspendTrueRE, d) && !matchLine(suspendFalseRE, d) && (susp == nil || c.Timestamp.After(susp.Timestamp)) {
				susp = c
			}
		}
		if susp != nil {
			f.setFact("suspended_by", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(susp.Kind), susp.Service, ts(susp.Timestamp), susp.Description))
			f.Evidence = append(f.Evidence, "suspended by the "+f.fact("suspended_by"))
			f.Time = susp.Timestamp
			for j := range changes {
				c := &changes[j]
				if c.Timestamp.After(susp.Timestamp) && matchLine(suspendFalseRE, c.Description) && !mentionsName(c.Description, cj.Name) {
					f.setFact("resumed_others", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), c.Description))
					f.Evidence = append(f.Evidence, "resumed others, not "+cj.Name+": the "+f.fact("resumed_others"))
					break
				}
			}
		}
		if susp == nil {
			suspendedInHostLogs(ev, cj, &f)
		}
		suspendWriter(ev, cj, &f)
		f.Summary = fmt.Sprintf("CronJob %s/%s is suspended: no runs created", cj.Namespace, cj.Name)
		out = append(out, f)
	}
	return out
}

var (
	// cronPatchRE is a command that patches or edits CronJobs.
	cronPatchRE = regexp.MustCompile(`(?i)\bkubectl\b.*\b(?:patch|edit|apply|annotate)\b.*\b(?:cronjobs?|cj)\b|\b(?:cronjobs?|cj)\b.*\bkubectl\b.*\bpatch\b`)
	// labelSelectorRE is a kubectl label selector argument.
	labelSelectorRE = regexp.MustCompile(`(?:\s-l\s*|--selector[ =])['"]?([^\s'"]+)`)
	// managerRE and managedTimeRE read a managedFields entry (yq or jq
	// output, YAML or JSON).
	managerRE   = regexp.MustCompile(`"?manager"?\s*:\s*"?([\w.:/-]+)`)
	managedAtRE = regexp.MustCompile(`"?time"?\s*:\s*"?(\d{4}-\d\d-\d\dT[\d:.]+Z)`)
)

// suspendedInHostLogs reads the commands host logs record (a runbook's or
// a script's transcript) for the command that suspended the CronJob and a later one
// that resumed CronJobs without it: by name, or by a label selector the
// CronJob's labels do not match.
func suspendedInHostLogs(ev *Gathered, cj *batchv1.CronJob, f *Finding) {
	var suspAt time.Time
	var suspLine, suspSrc string
	type resume struct {
		at   time.Time
		line string
	}
	var resumes []resume
	for _, hl := range ev.HostCommands {
		l, at := hl.Text, hl.Time
		if !matchLine(cronPatchRE, l) {
			continue
		}
		switch {
		case matchLine(suspendFalseRE, l):
			resumes = append(resumes, resume{at, l})
		case matchLine(suspendTrueRE, l) && (mentionsName(l, cj.Name) || selectorMatches(l, cj.Labels) == 1):
			if suspLine == "" || at.After(suspAt) {
				suspAt, suspLine, suspSrc = at, l, path.Base(hl.Source)
			}
		}
	}
	if suspLine == "" {
		return
	}
	f.setFact("suspended_by", fmt.Sprintf("command at %s in %s: %q", ts(suspAt), suspSrc, clip(commandText(suspLine), 200)))
	f.Evidence = append(f.Evidence, "suspended by the "+f.fact("suspended_by"))
	f.Time = suspAt
	for _, r := range resumes {
		if !r.at.After(suspAt) || mentionsName(r.line, cj.Name) {
			continue
		}
		what := fmt.Sprintf("command at %s: %q", ts(r.at), clip(commandText(r.line), 200))
		f.setFact("resumed_others", what)
		ev1 := "resumed others, not " + cj.Name + ": the " + what
		if selectorMatches(r.line, cj.Labels) == -1 {
			f.setFact("resume_selector", labelSelectorRE.FindStringSubmatch(r.line)[1])
			f.setFact("labels", orWord(labelList(cj.Labels), "none"))
			ev1 += fmt.Sprintf(", which selects CronJobs by %s, a label %s does not carry (its labels: %s)", f.fact("resume_selector"), cj.Name, f.fact("labels"))
		}
		f.Evidence = append(f.Evidence, ev1)
		return
	}
}

// commandText is a logged command without the time its line starts with.
func commandText(line string) string {
	if m := leadTimeRE.FindStringIndex(line); m != nil {
		return strings.TrimSpace(line[m[1]:])
	}
	return line
}

// selectorMatches says whether the label selector a command line passes
// (-l or --selector, equality terms) selects an object with these labels:
// 1 it does, -1 it does not, 0 the line has no selector read.
func selectorMatches(line string, labels map[string]string) int {
	m := labelSelectorRE.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	for _, term := range strings.Split(m[1], ",") {
		neg := strings.Contains(term, "!=")
		k, v, ok := strings.Cut(strings.NewReplacer("!=", "=", "==", "=").Replace(term), "=")
		if !ok {
			if _, has := labels[term]; !has {
				return -1
			}
			continue
		}
		if got, has := labels[k]; (has && got == v) == neg {
			return -1
		}
	}
	return 1
}

// suspendWriter reads a managedFields listing of the CronJob filtered on
// spec.suspend (kubectl get -o yaml --show-managed-fields piped to yq or
// jq): who last wrote the field, and when.
func suspendWriter(ev *Gathered, cj *batchv1.CronJob, f *Finding) {
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "suspend") || !strings.Contains(strings.ToLower(c.Command), "managedfields") || !mentionsName(c.Command, cj.Name) {
			continue
		}
		out := strings.Join(c.Lines, "\n")
		m, tm := managerRE.FindStringSubmatch(out), managedAtRE.FindStringSubmatch(out)
		if m == nil || tm == nil {
			continue
		}
		f.setFact("suspend_writer", fmt.Sprintf("%s at %s", m[1], tm[1]))
		f.Evidence = append(f.Evidence, fmt.Sprintf("spec.suspend of CronJob %s was last written by %s at %s (managedFields)", cj.Name, m[1], tm[1]))
		if at, err := time.Parse(time.RFC3339, tm[1]); err == nil && f.fact("suspended_by") == "" {
			f.Time = at
		}
		return
	}
}

// mentionsName reports whether text names name as a whole word.
func mentionsName(text, name string) bool {
	low, n := strings.ToLower(text), strings.ToLower(name)
	for i := 0; ; {
		j := strings.Index(low[i:], n)
		if j < 0 {
			return false
		}
		j += i
		if wordEdge(low, j-1) && wordEdge(low, j+len(n)) {
			return true
		}
		i = j + 1
	}
}
