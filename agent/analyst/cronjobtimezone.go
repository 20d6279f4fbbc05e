package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	// The zone database travels in the binary: an appliance without
	// /usr/share/zoneinfo still turns a crontab's zone into UTC hours.
	_ "time/tzdata"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Kubernetes CronJob without spec.timeZone reads its schedule in the
// controller's zone, UTC. A job moved from a host's crontab (whose clock
// ran in the local zone) with "the same schedule string" now runs at that
// hour UTC: a nightly batch meant for 02:00 local lands in the local
// morning, and whatever it loads (a shared database) is slow "every
// morning" while the job runs. The CronJob's missing time zone and the
// change that moved it, naming the host's zone, are the answer.

// KindCronTimeZone is a CronJob whose schedule is read in UTC, not the
// local zone it was written for.
const KindCronTimeZone Kind = "cronjob_timezone"

var cronTimeZone = &mechanism{
	kind:   KindCronTimeZone,
	class:  classCause,
	label:  "CronJob schedule read in UTC (no timeZone) after a move from a local-time crontab",
	detect: detectCronTimeZone,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the CronJob %s has no spec.timeZone, so its schedule %q is read in UTC, not in %s where it was written: it runs at %s",
			h.Subject, h.fact("schedule"), h.fact("zone"), orWord(h.fact("runs_at"), "that hour UTC"))
		if c := h.fact("moved_by"); c != "" {
			d += "; it was moved by the " + c
		}
		if r := h.fact("runs"); r != "" {
			d += "; its runs: " + r
		}
		if s := h.fact("slows"); s != "" {
			d += "; " + s + " while it runs"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Set the CronJob's time zone: kubectl -n %s patch cronjob %s -p '{\"spec\":{\"timeZone\":\"%s\"}}' (Kubernetes 1.27+), or rewrite the schedule in UTC", orWord(h.top().Namespace, sc.Namespace), h.Subject, h.fact("zone"))
		r.med("When moving jobs from host crontabs, translate schedules to the CronJob's zone and check the first run's time")
		r.low("Alert on heavy batch jobs running inside business hours (kube_job_status_start_time against the local day)")
	},
}

var (
	// ianaZoneRE: a zone name as tz databases spell it.
	ianaZoneRE = regexp.MustCompile(`\b((?:Africa|America|Asia|Atlantic|Australia|Europe|Indian|Pacific)/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)\b`)
	// cronMoveRE: a change moving a job from a host's crontab.
	cronMoveRE = regexp.MustCompile(`(?i)crontab|\bcron\b.*\b(?:host|vm|server|machine)\b|\b(?:host|vm|server|machine)\b.*\bcron|\bTZ\b|time ?zone`)
	// simpleCronRE: a schedule's fixed minute and hour ("0 2 * * *").
	simpleCronRE = regexp.MustCompile(`^\s*(\d{1,2})\s+(\d{1,2})\s+`)
)

func detectCronTimeZone(ev *Gathered, found []Finding) []Finding {
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	var out []Finding
	for i := range ev.K8s.CronJobs {
		cj := &ev.K8s.CronJobs[i]
		if tz := cj.Spec.TimeZone; tz != nil && *tz != "" && *tz != "UTC" && *tz != "Etc/UTC" {
			continue
		}
		var moved *evidence.Change
		var zone string
		for j := range changes {
			c := &changes[j]
			if !strings.EqualFold(c.Service, cj.Name) && !mentionsName(c.Description, cj.Name) {
				continue
			}
			z := ianaZoneRE.FindStringSubmatch(c.Description)
			if z == nil || !cronMoveRE.MatchString(c.Description) {
				continue
			}
			if moved == nil || c.Timestamp.After(moved.Timestamp) {
				moved, zone = c, z[1]
			}
		}
		if moved == nil {
			continue
		}
		f := Finding{Kind: KindCronTimeZone, Subject: cj.Name, Object: "cronjob " + cj.Namespace + "/" + cj.Name, Namespace: cj.Namespace,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.85, Time: moved.Timestamp}
		if s := ev.Scope.Service; s != "" && !strings.EqualFold(s, cj.Name) {
			f.Related = []string{s}
		}
		f.setFact("schedule", cj.Spec.Schedule)
		f.setFact("zone", zone)
		if m := simpleCronRE.FindStringSubmatch(cj.Spec.Schedule); m != nil {
			mi, _ := strconv.Atoi(m[1])
			hr, _ := strconv.Atoi(m[2])
			at := fmt.Sprintf("%02d:%02d UTC", hr, mi)
			if loc, err := time.LoadLocation(zone); err == nil {
				day := ev.Window.End
				if day.IsZero() {
					day = moved.Timestamp
				}
				u := time.Date(day.Year(), day.Month(), day.Day(), hr, mi, 0, 0, time.UTC)
				at += fmt.Sprintf(", %s in %s, instead of %02d:%02d %s", u.In(loc).Format("15:04"), zone, hr, mi, zone)
			}
			f.setFact("runs_at", at)
		}
		f.setFact("moved_by", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(moved.Kind), moved.Service, ts(moved.Timestamp), moved.Description))
		f.Evidence = []string{fmt.Sprintf("CronJob %s/%s: schedule %q with no timeZone (read in UTC)", cj.Namespace, cj.Name, cj.Spec.Schedule),
			"moved from a local-time crontab by the " + f.fact("moved_by")}
		// Its runs, as its Jobs say.
		var runs []string
		var last *batchv1.Job
		for j := range ev.K8s.Jobs {
			jb := &ev.K8s.Jobs[j]
			if !strings.HasPrefix(jb.Name, cj.Name+"-") || jb.Status.StartTime == nil {
				continue
			}
			r := jb.Name + " started " + ts(jb.Status.StartTime.Time)
			if c := jb.Status.CompletionTime; c != nil {
				r += fmt.Sprintf(", ran %s", c.Sub(jb.Status.StartTime.Time).Truncate(time.Minute))
			}
			runs = append(runs, r)
			if last == nil || jb.Status.StartTime.After(last.Status.StartTime.Time) {
				last = jb
			}
		}
		if len(runs) > 0 {
			f.setFact("runs", strings.Join(runs, "; "))
			f.Evidence = append(f.Evidence, "runs: "+f.fact("runs"))
		}
		// A finding of the asked service that begins while the last run runs.
		if last != nil && len(f.Related) > 0 {
			start := last.Status.StartTime.Time
			end := start.Add(time.Hour)
			if c := last.Status.CompletionTime; c != nil {
				end = c.Time
			}
			for k := range found {
				g := &found[k]
				if strings.EqualFold(g.Subject, f.Related[0]) && !g.Time.Before(start.Add(-5*time.Minute)) && !g.Time.After(end) {
					f.setFact("slows", g.Summary)
					f.Evidence = append(f.Evidence, fmt.Sprintf("while %s ran (%s to %s): %s", last.Name, ts(start), ts(end), g.Summary))
					break
				}
			}
		}
		f.Summary = fmt.Sprintf("CronJob %s/%s runs at %s (schedule read in UTC, written for %s)", cj.Namespace, cj.Name, orWord(f.fact("runs_at"), cj.Spec.Schedule), zone)
		out = append(out, f)
	}
	return out
}
