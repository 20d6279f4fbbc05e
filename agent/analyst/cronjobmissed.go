package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A CronJob's run that was never created, with nothing failed: the
// cronjob controller (in kube-controller-manager) creates each Job at its
// scheduled time, and when it gets to a scheduled time later than the
// CronJob's startingDeadlineSeconds allows it skips that run for good and
// records a MissSchedule event ("Missed scheduled time to start a job:
// ..."). It gets there late when it was not running at that time: the
// controller manager restarted or was replaced (a control-plane upgrade,
// its static pod waiting for an image, a lost leader lease). The event's
// time against the scheduled time gives how long it was away; the change
// to the control plane and the host's lines about kube-controller-manager
// in that gap say why.

// KindCronMissed is a CronJob run skipped past its starting deadline.
const KindCronMissed Kind = "cronjob_missed"

var cronJobMissed = &mechanism{
	kind:   KindCronMissed,
	class:  classCause,
	label:  "CronJob run missed past its starting deadline (controller away at the scheduled time)",
	detect: detectCronJobMissed,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the CronJob %s's run scheduled for %s was never created: the cronjob controller (kube-controller-manager) missed the scheduled time", h.Subject, orWord(h.fact("scheduled"), "its last scheduled time"))
		if dl := h.fact("deadline"); dl != "" {
			d += fmt.Sprintf(" and, with startingDeadlineSeconds %s, skipped the run", dl)
		} else {
			d += " and skipped the run"
		}
		d += h.wrapped(" when it got to it ", "late", "")
		d += h.wrapped(" (MissSchedule: ", "event", ")")
		d += h.clause("; the controller was not running then: ", "away")
		d += h.clause("; during the ", "control_change")
		d += h.clause("; ", "host_line")
		d += h.clause("; its last run: ", "last_schedule")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		ns := orWord(h.top().Namespace, sc.Namespace)
		r.high("Run the missed run by hand: kubectl create job --from=cronjob/%s %s-manual -n %s", h.Subject, h.Subject, ns)
		r.med("Give the CronJob a startingDeadlineSeconds that covers a control-plane restart (or leave it unset), and schedule control-plane upgrades outside its runs")
		r.low("Alert on MissSchedule events and on CronJobs whose last schedule time is older than their period (kube_cronjob_status_last_schedule_time)")
	},
}

var (
	// missedAtRE is the scheduled time a MissSchedule event names.
	missedAtRE = regexp.MustCompile(`(?i)missed scheduled time to start a job:?\s*(.+?)\s*$`)
	// controlPlaneChangeRE is a change to the control plane: its upgrade or
	// a restart of its components.
	controlPlaneChangeRE = regexp.MustCompile(`(?i)kubeadm|control[ -]?plane|controller[ -]manager|kube-apiserver|cluster upgrade|upgrade (?:of )?the cluster|\b(?:eks|gke|aks)\b.*\bupgrade|\bupgrade\b.*\b(?:eks|gke|aks)\b|master nodes?`)
	// controllerManagerRE is a host line about the controller manager.
	controllerManagerRE = regexp.MustCompile(`(?i)kube-controller-manager|controller-manager`)
)

// missedTime reads the scheduled time of a MissSchedule event's message
// (the v2 controller prints it RFC 1123 with a numeric zone).
func missedTime(msg string) (time.Time, bool) {
	m := missedAtRE.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC1123Z, time.RFC1123, time.RFC3339, "2006-01-02 15:04:05 -0700 MST", "2006-01-02 15:04:05 +0000 UTC"} {
		if t, err := time.Parse(layout, strings.TrimSuffix(m[1], ".")); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, true
}

func detectCronJobMissed(ev *Gathered, _ []Finding) []Finding {
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	var out []Finding
	done := map[string]bool{}
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.InvolvedObject.Kind != "CronJob" || (e.Reason != "MissSchedule" && !missedAtRE.MatchString(e.Message)) {
			continue
		}
		ns, name := e.InvolvedObject.Namespace, e.InvolvedObject.Name
		if done[ns+"/"+name] {
			continue
		}
		done[ns+"/"+name] = true
		_, seen := eventTime(e)
		sched, _ := missedTime(e.Message)
		f := Finding{Kind: KindCronMissed, Subject: name, Object: "cronjob " + ns + "/" + name, Namespace: ns,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.8, Time: seen}
		f.setFact("event", quote(e.Message, 160))
		f.Evidence = append(f.Evidence, fmt.Sprintf("event MissSchedule on cronjob %s/%s at %s: %q", ns, name, ts(seen), e.Message))
		if !sched.IsZero() {
			f.setFact("scheduled", ts(sched))
			f.Time = sched
			if !seen.IsZero() && seen.After(sched) {
				f.setFact("late", fmt.Sprintf("at %s, %s after the scheduled time", ts(seen), seen.Sub(sched).Round(time.Second)))
			}
		}
		cj := cronJobNamed(ev.K8s.CronJobs, ns, name)
		if cj != nil {
			describeMissedCron(&f, cj, sched, seen)
		}
		if !sched.IsZero() {
			controllerAway(&f, ev, changes, sched, seen)
		}
		if f.fact("away") != "" || f.fact("control_change") != "" {
			f.Weight = 0.9
		}
		f.Summary = fmt.Sprintf("CronJob %s/%s missed its scheduled run (MissSchedule)", ns, name)
		out = append(out, f)
	}
	return out
}

// describeMissedCron adds the CronJob's starting deadline and last run.
func describeMissedCron(f *Finding, cj *batchv1.CronJob, sched, seen time.Time) {
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		f.setFact("deadline", fmt.Sprintf("%d", *d))
		ev := fmt.Sprintf("cronjob %s/%s: schedule %q, startingDeadlineSeconds %d", cj.Namespace, cj.Name, cj.Spec.Schedule, *d)
		if !sched.IsZero() && !seen.IsZero() && seen.Sub(sched) > time.Duration(*d)*time.Second {
			ev += fmt.Sprintf(": the controller came %s after the scheduled time, past the deadline", seen.Sub(sched).Round(time.Second))
		}
		f.Evidence = append(f.Evidence, ev)
	}
	if t := cj.Status.LastScheduleTime; t != nil && (sched.IsZero() || t.Time.Before(sched)) {
		f.setFact("last_schedule", ts(t.Time)+" (no run since)")
	}
}

// controllerAway says why the controller was late: a change to the control
// plane shortly before the scheduled time, and the host's lines about the
// controller manager between then and the event.
func controllerAway(f *Finding, ev *Gathered, changes []evidence.Change, sched, seen time.Time) {
	end := seen
	if end.IsZero() || end.Before(sched) {
		end = sched.Add(30 * time.Minute)
	}
	var best *evidence.Change
	for j := range changes {
		c := &changes[j]
		if c.Timestamp.After(end) || sched.Sub(c.Timestamp) > 3*time.Hour {
			continue
		}
		if matchLine(controlPlaneChangeRE, c.Description+" "+c.Service) && (best == nil || c.Timestamp.After(best.Timestamp)) {
			best = c
		}
	}
	if best != nil {
		f.setFact("control_change", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(best.Kind), best.Service, ts(best.Timestamp), best.Description))
		f.Evidence = append(f.Evidence, "the control plane changed: "+f.fact("control_change"))
	}
	// The host's first error line about the controller manager in the gap.
	var host, line string
	var first time.Time
	for _, set := range ev.Logs {
		if !set.Host {
			continue
		}
		for _, t := range set.Templates {
			if !matchLine(controllerManagerRE, t.Example) || t.FirstSeen.IsZero() || t.FirstSeen.After(end) || sched.Sub(t.FirstSeen) > 30*time.Minute {
				continue
			}
			if _, isErr := ClassifyLine(t.Example); isErr && (first.IsZero() || t.FirstSeen.Before(first)) {
				host, line, first = set.Subject, t.Example, t.FirstSeen
			}
		}
	}
	if host == "" {
		return
	}
	f.setFact("host_line", fmt.Sprintf("%s logged at %s: %s", host, ts(first), quote(ReadableLine(line), 220)))
	f.setFact("away", fmt.Sprintf("kube-controller-manager on %s was failing to start from %s", host, ts(first)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs about kube-controller-manager from %s: %q", host, ts(first), ReadableLine(line)))
	if !containsStr(f.Related, host) {
		f.Related = append(f.Related, host)
	}
}
