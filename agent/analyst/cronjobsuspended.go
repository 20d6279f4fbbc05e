package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
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
		d += h.wrapped("; the ", "resumed_others", " resumed other CronJobs but not this one")
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
		f.Summary = fmt.Sprintf("CronJob %s/%s is suspended: no runs created", cj.Namespace, cj.Name)
		out = append(out, f)
	}
	return out
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
