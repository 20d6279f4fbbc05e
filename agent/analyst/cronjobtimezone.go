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
//
// The zone is also lost without a move: a chart upgrade that moved its
// values (timeZone now read under another key) renders the CronJob
// without it while helm get values, or an earlier -o yaml, still says
// "timeZone: America/New_York". Its Jobs' names carry the minute each
// run was scheduled (UTC): runs at 13:00 UTC before the upgrade and at
// 09:00 UTC after it, for "0 9 * * *", show the schedule went from the
// zone's 09:00 to UTC's. A shift of the runs' hour after a change of the
// CronJob, with the schedule unchanged, shows it even when no output
// names the zone.

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
		d += h.clause("; it was moved by the ", "moved_by")
		if h.fact("lost_by") != "" {
			d += h.clause("; the time zone was lost with the ", "lost_by") + h.wrapped(" (", "zone_from", ", a value the CronJob no longer gets)")
		}
		d += h.clause("; ", "shift") + h.clause("; its runs: ", "runs") + h.wrapped("; ", "slows", " while it runs")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Set the CronJob's time zone: kubectl -n %s patch cronjob %s -p '{\"spec\":{\"timeZone\":\"%s\"}}' (Kubernetes 1.27+), or rewrite the schedule in UTC", orWord(h.top().Namespace, sc.Namespace), h.Subject, h.fact("zone"))
		if h.fact("lost_by") != "" {
			r.high("Put the time zone where the chart now reads it (helm get values shows it under a key the templates no longer use) and check the rendered CronJob: helm get manifest %s | grep -n timeZone", h.Subject)
			r.med("After chart or template migrations, diff the rendered manifests (helm diff upgrade) for fields that disappeared, and check the next run's time")
		} else {
			r.med("When moving jobs from host crontabs, translate schedules to the CronJob's zone and check the first run's time")
		}
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
			z := findSubmatch(ianaZoneRE, c.Description)
			if z == nil || !matchLine(cronMoveRE, c.Description) {
				continue
			}
			if moved == nil || c.Timestamp.After(moved.Timestamp) {
				moved, zone = c, z[1]
			}
		}
		// No move naming the zone: a zone an output still shows for it, or
		// its runs' hour shifted after a change of it.
		var zoneFrom string
		var shift *runShift
		if moved == nil {
			zone, zoneFrom = zoneShown(ev.Commands, cj)
			shift = shiftedRuns(cronRuns(ev.K8s)[cj.Namespace+"/"+cj.Name], cj.Spec.Schedule, zone)
			if zone == "" && shift == nil {
				continue
			}
			if moved = zoneLostBy(changes, cj.Name, shift, ev.Window.End); moved == nil {
				continue
			}
		}
		f := Finding{Kind: KindCronTimeZone, Subject: cj.Name, Object: "cronjob " + cj.Namespace + "/" + cj.Name, Namespace: cj.Namespace,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.85, Time: moved.Timestamp}
		if s := ev.Scope.Service; s != "" && !strings.EqualFold(s, cj.Name) {
			f.Related = []string{s}
		}
		f.setFact("schedule", cj.Spec.Schedule)
		if zone == "" && shift != nil {
			zone = shift.offsetWords()
		}
		f.setFact("zone", zone)
		if m := findSubmatch(simpleCronRE, cj.Spec.Schedule); m != nil {
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
		by := fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(moved.Kind), moved.Service, ts(moved.Timestamp), moved.Description)
		f.Evidence = []string{fmt.Sprintf("CronJob %s/%s: schedule %q with no timeZone (read in UTC)", cj.Namespace, cj.Name, cj.Spec.Schedule)}
		if zoneFrom == "" && shift == nil {
			f.setFact("moved_by", by)
			f.Evidence = append(f.Evidence, "moved from a local-time crontab by the "+by)
		} else {
			f.setFact("lost_by", by)
			if zoneFrom != "" {
				f.setFact("zone_from", zoneFrom)
				f.Evidence = append(f.Evidence, zoneFrom)
			}
			if shift != nil {
				f.setFact("shift", shift.String())
				f.Evidence = append(f.Evidence, "its runs moved: "+shift.String())
			}
			f.Evidence = append(f.Evidence, "the time zone was lost with the "+by)
			why := "the CronJob has no timeZone"
			if zoneFrom != "" {
				why += " while its values still set " + zone
			}
			if shift != nil {
				why += fmt.Sprintf("; its runs moved from %s to %s UTC", shift.Before.UTC().Format("15:04"), shift.After.UTC().Format("15:04"))
			}
			f.setFact("why", why)
		}
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
		if len(runs) > 0 && shift == nil {
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

// zoneKeyRE is a values or manifest line setting a schedule's zone
// ("timeZone: America/New_York", "time_zone = Europe/Berlin", "TZ=...").
var zoneKeyRE = regexp.MustCompile(`(?i)^\s*-?\s*"?(?:[\w.]*\.)?(?:time_?zone|tz|cron_tz|schedule_?time_?zone)"?\s*[:=]\s*["']?((?:Africa|America|Asia|Atlantic|Australia|Europe|Indian|Pacific)/[A-Za-z_]+(?:/[A-Za-z_]+)?)`)

// zoneShown is the zone a command's output still sets for the CronJob
// (helm get values of its release, a manifest or an earlier -o yaml of
// it), and what says so; "" when none does. The CronJob's own container
// environment (TZ) sets the process's clock, not the schedule's: not read.
func zoneShown(cmds []evidence.CommandOutput, cj *batchv1.CronJob) (zone, from string) {
	for _, c := range cmds {
		if c.Exec || !mentionsName(c.Command, cj.Name) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(zoneKeyRE, l); m != nil {
				// The last output saying so is the newest revision's.
				zone, from = m[1], fmt.Sprintf("%s still sets %s", c.Command, strings.TrimSpace(l))
				break
			}
		}
	}
	return zone, from
}

// runShift is the hour a CronJob's runs moved by while its schedule did
// not: Before is the last run at the earlier hour, After the first at the
// schedule's own hour in UTC.
type runShift struct {
	Before, After time.Time
	Jobs          [2]string
}

// offset is how far the earlier runs were from the schedule's UTC hour.
func (s *runShift) offset() time.Duration {
	d := (s.Before.UTC().Hour()*60 + s.Before.UTC().Minute()) - (s.After.UTC().Hour()*60 + s.After.UTC().Minute())
	for d > 12*60 {
		d -= 24 * 60
	}
	for d <= -12*60 {
		d += 24 * 60
	}
	return time.Duration(d) * time.Minute
}

// offsetWords names the zone the earlier runs kept, by its offset ("a
// zone at UTC-4").
func (s *runShift) offsetWords() string {
	h := -s.offset().Hours()
	return fmt.Sprintf("a zone at UTC%+g", h)
}

func (s *runShift) String() string {
	return fmt.Sprintf("%s ran at %s UTC, %s at %s UTC (the schedule's hour read in UTC, %s earlier)",
		s.Jobs[0], s.Before.UTC().Format("2006-01-02 15:04"), s.Jobs[1], s.After.UTC().Format("2006-01-02 15:04"), strings.TrimSuffix(strings.TrimSuffix(s.offset().Abs().String(), "0s"), "0m"))
}

// shiftedRuns finds the runs of a fixed-hour schedule that moved from
// another hour to the schedule's own hour in UTC (nil when they did not,
// or the schedule is not at a fixed hour). With a zone known, the earlier
// runs must sit at the schedule's hour in that zone.
func shiftedRuns(runs []cronRun, schedule, zone string) *runShift {
	m := findSubmatch(simpleCronRE, schedule)
	if m == nil {
		return nil
	}
	mi, _ := strconv.Atoi(m[1])
	hr, _ := strconv.Atoi(m[2])
	utc := func(t time.Time) bool { return t.UTC().Hour() == hr && t.UTC().Minute() == mi }
	var loc *time.Location
	if zone != "" {
		loc, _ = time.LoadLocation(zone)
	}
	var s *runShift
	for i := 1; i < len(runs); i++ {
		a, b := runs[i-1].Scheduled, runs[i].Scheduled
		if a.IsZero() || b.IsZero() || utc(a) || !utc(b) || a.UTC().Minute() != mi {
			continue
		}
		if loc != nil && (a.In(loc).Hour() != hr || a.In(loc).Minute() != mi) {
			continue
		}
		s = &runShift{Before: a, After: b, Jobs: [2]string{runs[i-1].Job.Name, runs[i].Job.Name}}
	}
	if s == nil || s.offset() == 0 || s.offset().Abs() > 14*time.Hour || s.offset()%(30*time.Minute) != 0 {
		return nil
	}
	return s
}

// zoneLostBy is the change of the CronJob that lost its zone: the last
// one between the shifted runs when they show when, else the last one
// before the window's end.
func zoneLostBy(changes []evidence.Change, name string, shift *runShift, end time.Time) *evidence.Change {
	var by *evidence.Change
	for j := range changes {
		c := &changes[j]
		if !strings.EqualFold(c.Service, name) && !mentionsName(c.Description, name) {
			continue
		}
		if shift != nil && (!c.Timestamp.After(shift.Before) || c.Timestamp.After(shift.After)) {
			continue
		}
		if !end.IsZero() && c.Timestamp.After(end) {
			continue
		}
		if by == nil || c.Timestamp.After(by.Timestamp) {
			by = c
		}
	}
	return by
}
