package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A low-storage alert on a database or volume that resolved by itself
// because the platform grew the storage (RDS storage autoscaling, Cloud
// SQL's automatic storage increase, Azure's storage autogrow, a
// PersistentVolumeClaim expanded by its resizer) is not a fault of the
// service asked about: its free space fell while something wrote (a
// nightly import), the platform added capacity, the free space stepped
// up and the alert cleared. When nothing else identifies a cause, the
// answer is "healthy; the alert auto-resolved", with the growth as its
// evidence: the provider's event lines, the free-space series stepping up
// and the allocated size the provider reports now. Without a growth
// event or a step up the alert is left to the other readings.

// storageAlertRE matches a low-storage or disk-space alert by its name,
// summary or expression.
var storageAlertRE = regexp.MustCompile(`(?i)free.?storage|storage.?(?:space|low|full|usage)|low.?storage|disk.?(?:space|full|usage|free|low)|filesystem.?(?:space|avail|free|full|almost)|volume.?(?:full|space|free|avail)|kubelet_volume_stats_available|(?:volume|disk|filesystem|storage)\w* (?:is )?filling ?up|(?:Volume|Disk|Filesystem|Storage)FillingUp`)

// storageGrowRE matches a provider's line that storage was grown: RDS
// ("Applying autoscaling-initiated modification to allocated storage."),
// Cloud SQL ("automatic storage increase"), Azure ("storage autogrow"),
// Kubernetes volume expansion (FileSystemResizeSuccessful,
// VolumeResizeSuccessful, "NodeExpandVolume succeeded").
var storageGrowRE = regexp.MustCompile(`(?i)autoscaling-initiated modification to allocated storage|storage (?:auto-?scal\w*|auto-?increase\w*|auto-?grow\w*)|automatic storage increase|auto_storage_increase|FileSystemResizeSuccessful|VolumeResizeSuccessful|NodeExpandVolume succeeded|ExpandVolume succeeded`)

// freeStorageNameRE matches a free-space series.
var freeStorageNameRE = regexp.MustCompile(`(?i)FreeStorageSpace|free_storage_space|filesystem_(?:avail|free)_bytes|volume_stats_available_bytes|disk_(?:free|avail(?:able)?)_bytes|free_bytes`)

// storageStep is a free-space series stepping up: capacity added.
type storageStep struct {
	Metric     string
	At         time.Time
	From, To   float64
	Low        float64 // the least free space before the step
	LowAt      time.Time
	Now        float64
	Allocation string // what the provider reports allocated now
}

// freeStorageStep finds the largest one-step rise of a free-space series
// (at least half again what it was) in the window; ok false when none
// rose so.
func freeStorageStep(sets []MetricSet, w Window) (st storageStep, ok bool) {
	for _, m := range sets {
		if !matchLine(freeStorageNameRE, m.Name) {
			continue
		}
		for _, s := range m.Series {
			ps := s.Points
			for i := 1; i < len(ps); i++ {
				a, b := ps[i-1].V, ps[i].V
				if a <= 0 || b < 1.5*a || (!w.Start.IsZero() && ps[i].T.Before(w.Start)) {
					continue
				}
				if ok && b-a <= st.To-st.From {
					continue
				}
				st = storageStep{Metric: m.Name, At: ps[i].T, From: a, To: b, Low: a, LowAt: ps[i-1].T, Now: ps[len(ps)-1].V}
				ok = true
			}
		}
	}
	return st, ok
}

// allocatedStorage reads the allocated size the provider reports: an
// `aws rds describe-db-instances` answer in JSON ("AllocatedStorage": 240)
// or in text whose --query lists the columns.
func allocatedStorage(cmds []evidence.CommandOutput) string {
	jsonRE := regexp.MustCompile(`"(AllocatedStorage|MaxAllocatedStorage)"\s*:\s*(\d+)`)
	for _, c := range cmds {
		text := strings.Join(c.Lines, "\n")
		if m := findAllSubmatch(jsonRE, text, -1); len(m) > 0 {
			var parts []string
			for _, x := range m {
				parts = append(parts, x[1]+" "+x[2]+" GiB")
			}
			return strings.Join(parts, ", ")
		}
		q := queryColumns(c.Command)
		if !slices.Contains(q, "AllocatedStorage") {
			continue
		}
		for _, l := range c.Lines {
			f := strings.Fields(l)
			if len(f) != len(q) {
				continue
			}
			var parts []string
			for i, k := range q {
				if _, err := strconv.Atoi(f[i]); err == nil && strings.Contains(k, "AllocatedStorage") {
					parts = append(parts, k+" "+f[i]+" GiB")
				}
			}
			if len(parts) > 0 {
				return strings.Join(parts, ", ")
			}
		}
	}
	return ""
}

// queryColumnsRE finds a JMESPath multiselect list in a --query.
var queryColumnsRE = regexp.MustCompile(`\[([A-Za-z][A-Za-z0-9_.]*(?:\s*,\s*[A-Za-z][A-Za-z0-9_.]*)+)\]`)

// queryColumns lists the columns a command's --query selects, in order.
func queryColumns(cmd string) []string {
	i := strings.Index(cmd, "--query")
	if i < 0 {
		return nil
	}
	m := findSubmatch(queryColumnsRE, cmd[i:])
	if m == nil {
		return nil
	}
	var out []string
	for _, k := range strings.Split(m[1], ",") {
		out = append(out, strings.TrimSpace(k))
	}
	return out
}

// storageGrowLines are the provider's lines that storage was grown, from
// command outputs, logs and Kubernetes events.
func storageGrowLines(ev *Gathered) []timedLine {
	out := eventLines(ev, storageGrowRE)
	for _, e := range ev.K8s.Events {
		if matchLine(storageGrowRE, e.Reason) || matchLine(storageGrowRE, e.Message) {
			t := e.LastTimestamp.Time
			if t.IsZero() {
				t = e.EventTime.Time
			}
			out = append(out, timedLine{Time: t, Text: e.Reason + ": " + e.Message, From: "event " + e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// storageAlertAbout picks the resolved storage alert the question is
// about (named by it, or labelled with a subject), or any resolved storage
// alert when the question names none.
func storageAlertAbout(alerts []evidence.Alert, sc Scope) (evidence.Alert, bool) {
	for _, a := range alerts {
		if !alertResolved(a, sc.Window.End) {
			continue
		}
		text := a.Name
		for _, v := range a.Annotations {
			text += " " + v
		}
		if !matchLine(storageAlertRE, text) {
			continue
		}
		if alertAbout(a, sc.Subjects(), sc.Alert) || sc.Alert == "" {
			return a, true
		}
	}
	return evidence.Alert{}, false
}

// answerStorageGrown turns a result that identified no cause into
// "healthy: the storage alert auto-resolved when the storage grew".
func answerStorageGrown(res *finding.Result, ev *Gathered, alerts []evidence.Alert) bool {
	if res == nil || res.Verdict == finding.VerdictIdentified {
		return false
	}
	a, ok := storageAlertAbout(alerts, ev.Scope)
	if !ok {
		return false
	}
	// A subject whose own errors go on is not healthy, whatever cleared
	// the alert.
	if b, ok := subjectErrorBurst(ev.Logs, ev.Scope.Subjects()); ok && !failureOver(b, ev.Window.End) {
		return false
	}
	grew := storageGrowLines(ev)
	step, stepped := freeStorageStep(ev.Metrics, ev.Window)
	if len(grew) == 0 && !stepped {
		return false
	}
	step.Allocation = allocatedStorage(ev.Commands)
	resource := alertResource(a)
	what := strings.Join(ev.Scope.Subjects(), ", ")
	if what == "" {
		what = resource
	}
	hm := func(t time.Time) string { return t.UTC().Format("15:04") }
	var b strings.Builder
	fmt.Fprintf(&b, "%s is healthy and not affected: alert %s on %s fired at %s and self-resolved at %s UTC because storage autoscaling grew %s's storage", what, a.Name, resource, hm(a.StartsAt), hm(a.EndsAt), resource)
	var evid []string
	if len(grew) > 0 {
		fmt.Fprintf(&b, " (%s at %s UTC)", strings.TrimSuffix(grew[0].Text, "."), hm(grew[0].Time))
		for _, l := range grew {
			evid = append(evid, fmt.Sprintf("%s: %s %s", l.From, l.Time.UTC().Format(time.RFC3339), l.Text))
			res.Timeline = append(res.Timeline, finding.TimelineEvent{Timestamp: l.Time.UTC().Format(time.RFC3339), Event: l.Text})
		}
	}
	if stepped {
		fmt.Fprintf(&b, "; %s stepped up from %s to %s at %s UTC", step.Metric, sizeWord(step.From), sizeWord(step.To), hm(step.At))
		evid = append(evid, fmt.Sprintf("%s fell to %s at %s UTC, then stepped up to %s at %s UTC (%s now)", step.Metric, sizeWord(step.Low), hm(step.LowAt), sizeWord(step.To), hm(step.At), sizeWord(step.Now)))
		res.Timeline = append(res.Timeline, finding.TimelineEvent{Timestamp: step.At.UTC().Format(time.RFC3339), Event: fmt.Sprintf("%s steps up from %s to %s", step.Metric, sizeWord(step.From), sizeWord(step.To))})
	}
	if step.Allocation != "" {
		fmt.Fprintf(&b, "; now %s", step.Allocation)
		evid = append(evid, "allocated storage now: "+step.Allocation)
	}
	b.WriteString(". The free space fell while work wrote to it and the platform added capacity; no action is needed on " + what + ".")
	evid = append(evid, fmt.Sprintf("alert %s resolved at %s UTC (fired %s UTC)", a.Name, hm(a.EndsAt), hm(a.StartsAt)))
	res.Timeline = append(res.Timeline,
		finding.TimelineEvent{Timestamp: a.StartsAt.UTC().Format(time.RFC3339), Event: "alert " + a.Name + " fires"},
		finding.TimelineEvent{Timestamp: a.EndsAt.UTC().Format(time.RFC3339), Event: "alert " + a.Name + " resolved"})
	sort.SliceStable(res.Timeline, func(i, j int) bool { return res.Timeline[i].Timestamp < res.Timeline[j].Timestamp })
	expl := b.String()
	if prev := strings.TrimSpace(res.RootCause.Description); prev != "" && res.Verdict != finding.VerdictHealthy {
		// What the reasoning weighed, kept as another finding.
		res.RuledOut = append([]finding.RuledOut{{Hypothesis: prev, Reason: "not a fault of " + what + ": it coincided with the storage alert and nothing of " + what + " failed"}}, res.RuledOut...)
	}
	res.Summary = expl
	res.RootCause.Description = expl
	res.RootCause.Evidence = evid
	res.Verdict = finding.VerdictHealthy
	conf := 60.0
	if len(grew) > 0 && stepped {
		conf = 70
	}
	res.RootCause.Confidence = conf
	res.Recommendations = append([]finding.Recommendation{
		{Priority: finding.PriorityLow, Action: fmt.Sprintf("No action needed on %s; the alert cleared when %s's storage grew", what, resource)},
		{Priority: finding.PriorityLow, Action: fmt.Sprintf("Check %s's maximum allocated storage leaves room for further growth, and alert on free space as a share of it rather than a fixed size so autoscaling does not page", resource)},
	}, nil...)
	res.Normalize()
	return true
}

// failingElsewhere lists the failing containers of pods outside the
// subjects' namespace (crash-looping, OOM-killed, failing to pull): other
// findings, unrelated to the alert, reported apart.
func failingElsewhere(pods []corev1.Pod, ns string) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.Namespace == "" || p.Namespace == ns {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			var why []string
			if w := c.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				why = append(why, w.Reason)
			}
			if t := c.LastTerminationState.Terminated; t != nil && t.Reason != "" && t.Reason != "Completed" {
				why = append(why, "last terminated "+t.Reason)
			}
			if len(why) == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("%s/%s container %s: %s, %d restarts", p.Namespace, p.Name, c.Name, strings.Join(why, ", "), c.RestartCount))
		}
	}
	return out
}

// alertResource is what an alert's labels name as its resource.
func alertResource(a evidence.Alert) string {
	for _, k := range []string{"dbinstance_identifier", "DBInstanceIdentifier", "db_instance", "database", "instance", "persistentvolumeclaim", "volume", "resource", "pod", "service"} {
		if v := a.Labels[k]; v != "" {
			return v
		}
	}
	return "the resource"
}

// sizeWord renders a byte count.
func sizeWord(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.1f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f", v)
}
