package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A workload's replicas missing for a while because the node under them
// was taken away (the cluster autoscaler's or Karpenter's scale-down of an
// underutilised node, a consolidation, a drain): its pods were evicted,
// their replacements waited Pending until a node with room joined, and
// a replicas alert (KubeDeploymentReplicasMismatch, available below
// desired) fired meanwhile and resolved. Asked later whether it is still a
// problem, the answer is the present (every replica available) and that
// history: which node went, why, which pods were evicted, how long the
// replacements waited and for what. It is read from the autoscaler's own
// log (klog lines handed over in a transcript or read from its pod:
// "Scale-down: removing node …, pods to reschedule: …", "Draining node …:
// evicting pods …", "Successfully evicted …", "Pod … is unschedulable",
// "Disabling scale-up … errorClass=OutOfResource", "Node … ready,
// registered … after scale-up"), Karpenter's JSON ("disrupting nodeclaim …
// reason underutilized") and the pods' ScaleDown and FailedScheduling
// events.

var (
	// nodeRemovalRE is a line of a node taken away with pods on it.
	nodeRemovalRE = regexp.MustCompile(`(?i)scale-?down:? (?:removing|deleting|remove) (?:empty )?node ([\w.-]+)|draining node ([\w.-]+)|disrupting (?:node ?claim|node)\S*.*?\b((?:ip-[\w.-]+)|[\w-]+-[a-z0-9]{5})\b|deleting pod for node scale down|marked the node as toBeDeleted`)
	// evictedPodsRE lists the pods a removal evicted or must reschedule.
	evictedPodsRE = regexp.MustCompile(`(?i)(?:pods to reschedule|evicting pods?|successfully evicted|evicted pod)[: ]+((?:[\w-]+/[\w.-]+(?:,\s*)?)+)`)
	// nodeReasonRE is why the autoscaler removed a node.
	nodeReasonRE = regexp.MustCompile(`(?i)(underutili[sz]ed|consolidat\w*|empty node|drift\w*|expired|unneeded)`)
	nodeUtilRE   = regexp.MustCompile(`(?i)(?:cpu|memory) requested is ([\d.]+%) of allocatable|utilization: \{([\d.]+)`)
	// waitRE is a replacement waiting for a node: unschedulable, a
	// scale-up refused for lack of capacity.
	waitRE        = regexp.MustCompile(`(?i)pod ([\w-]+/[\w.-]+) is unschedulable|FailedScheduling|Insufficient (?:cpu|memory)`)
	scaleUpFailRE = regexp.MustCompile(`(?i)disabling scale-up for node group (\S+) until .*?errorClass=(\w+)|failed to (?:launch|create) (?:node ?claim|instance)\S*[^"]*?(InsufficientInstanceCapacity|\w*Capacity\w*|quota)`)
	nodeJoinedRE  = regexp.MustCompile(`(?i)node ([\w.-]+) ready, registered ([\w.]+) after scale-up|registered node ?claim\S*.*?\b(ip-[\w.-]+)`)
	// plannedDrainRE is a planned drain read from a change (removalSources
	// writes it): the node and the change's own words.
	plannedDrainRE = regexp.MustCompile(`^planned drain of node (\S+): (.*)$`)
	// drainChangeRE is a change that drains or cordons a node.
	drainChangeRE = regexp.MustCompile(`(?i)\bdrain(?:s|ed|ing)?\b|\bcordon(?:s|ed|ing)?\b|\bnode (?:roll|rotation|replacement)|\bpatch window\b`)
	// nodeNameRE is a node's name in a change's words, when the nodes were
	// not listed.
	nodeNameRE = regexp.MustCompile(`\b(ip-\d+-\d+-\d+-\d+[\w.-]*[\w]|gke-[\w-]+|aks-[\w-]+-vmss[\w]+)\b`)
	// stoppedPodRE is a pod's container stopped (its Killing event), read
	// as an eviction shortly after a planned drain began.
	stoppedPodRE = regexp.MustCompile(`^stopped pod ([\w-]+/[\w.-]+)$`)
	// scaleUpTriggeredRE is the autoscaler's TriggeredScaleUp event.
	scaleUpTriggeredRE = regexp.MustCompile(`(?i)pod triggered scale-up: \[\{([\w.-]+) (\d+->\d+)`)
	// assignedRE is a pod's Scheduled event.
	assignedRE = regexp.MustCompile(`Successfully assigned ([\w-]+/[\w.-]+) to ([\w.-]+)`)
)

// nodeRemoval is what the lines say of a node removed under a workload.
type nodeRemoval struct {
	node, reason, util string
	at                 time.Time
	evicted            []string
	waited             time.Time // the last line of a replacement waiting
	scaleUpFail        string
	joined             string
	joinedAt           time.Time
	lines              []string
	// planned: a change drained the node (maintenance, an image roll), not
	// the autoscaler; scaleUp: the node group the autoscaler grew for the
	// replacements.
	planned, scaleUp string
}

// removalLines reads the lines of the commands handed over, the pods'
// raw lines and the events for a node removal that evicted pods of the
// workload.
func readNodeRemoval(lines []evidence.LogLine, workload, ns string) (*nodeRemoval, bool) {
	var r nodeRemoval
	mine := func(pod string) bool {
		n, p, ok := strings.Cut(pod, "/")
		if !ok {
			p, n = n, ""
		}
		return (n == "" || ns == "" || n == ns) && strings.EqualFold(workloadOfName(p), workload)
	}
	found := false
	for _, l := range lines {
		t := l.Text
		if m := findSubmatch(plannedDrainRE, t); m != nil {
			if !found {
				found = true
				r.at, r.node, r.planned, r.reason = l.Time, m[1], m[2], "planned drain"
				r.lines = append(r.lines, m[2])
			}
			continue
		}
		// The workload's pods stopped in the first minutes of a planned
		// drain are the drain's evictions.
		if m := findSubmatch(stoppedPodRE, t); m != nil {
			if found && r.planned != "" && mine(m[1]) && !l.Time.Before(r.at) && l.Time.Sub(r.at) <= 15*time.Minute && !containsFold(r.evicted, m[1]) {
				r.evicted = append(r.evicted, m[1])
			}
			continue
		}
		if m := findSubmatch(scaleUpTriggeredRE, t); m != nil {
			if found {
				r.scaleUp = m[1] + " " + m[2]
			}
			continue
		}
		if m := findSubmatch(assignedRE, t); m != nil {
			if found && r.scaleUp != "" && r.joined == "" && mine(m[1]) && !l.Time.Before(r.at) {
				r.joined, r.joinedAt = m[2], l.Time
			}
			continue
		}
		if m := findSubmatch(nodeRemovalRE, t); m != nil {
			pods := findSubmatch(evictedPodsRE, t)
			var own []string
			if pods != nil {
				for _, p := range strings.Split(pods[1], ",") {
					if p = strings.TrimSpace(p); mine(p) {
						own = append(own, p)
					}
				}
			}
			if len(own) > 0 || found && r.node != "" && strings.Contains(t, r.node) {
				if !found {
					r.at = l.Time
					r.node = strings.TrimSpace(m[1] + m[2] + m[3])
					found = true
					r.lines = append(r.lines, ReadableLine(t))
				}
				for _, p := range own {
					if !containsFold(r.evicted, p) {
						r.evicted = append(r.evicted, p)
					}
				}
				if mm := findSubmatch(nodeUtilRE, t); mm != nil && r.util == "" {
					r.util = mm[1] + mm[2]
				}
			}
			continue
		}
		if m := findSubmatch(evictedPodsRE, t); m != nil && found {
			for _, p := range strings.Split(m[1], ",") {
				if p = strings.TrimSpace(p); mine(p) && !containsFold(r.evicted, p) {
					r.evicted = append(r.evicted, p)
				}
			}
			continue
		}
		// Before the removal: why the node was to go.
		if r.node == "" || strings.Contains(t, r.node) {
			if m := findSubmatch(nodeReasonRE, t); m != nil && r.reason == "" {
				r.reason = strings.ToLower(m[1])
			}
			if m := findSubmatch(nodeUtilRE, t); m != nil && r.util == "" {
				r.util = m[1] + m[2]
			}
		}
		if !found {
			continue
		}
		if m := findSubmatch(waitRE, t); m != nil && (m[1] == "" || mine(m[1])) {
			r.waited = l.Time
		}
		if m := findSubmatch(scaleUpFailRE, t); m != nil {
			r.scaleUpFail = strings.TrimSpace(m[2] + m[3])
		}
		if m := findSubmatch(nodeJoinedRE, t); m != nil && r.joined == "" && !l.Time.Before(r.at) {
			r.joined, r.joinedAt = m[1]+m[3], l.Time
			r.lines = append(r.lines, ReadableLine(t))
		}
	}
	if !found || len(r.evicted) == 0 {
		return nil, false
	}
	return &r, true
}

// removalSources gathers the lines a node removal shows in: the outputs of
// commands handed over (an autoscaler's log), the raw lines kept of
// logs, and the events, each placed at its time.
func (g *gatherer) removalSources() []evidence.LogLine {
	ref := g.sc.Window.End
	var out []evidence.LogLine
	for _, c := range g.commands {
		for _, l := range c.Lines {
			t, _ := evidence.LineTime([]byte(l), ref)
			out = append(out, evidence.LogLine{Time: t, Text: l})
		}
	}
	for _, s := range g.logSets {
		out = append(out, s.Lines...)
	}
	// A change that drained a node, by name.
	for _, c := range g.changes {
		if !matchLine(drainChangeRE, c.Description) {
			continue
		}
		node := ""
		for _, n := range g.k8s.Nodes {
			if n.Name != "" && strings.Contains(c.Description, n.Name) {
				node = n.Name
			}
		}
		if node == "" {
			node = findString(nodeNameRE, c.Description)
		}
		if node != "" {
			out = append(out, evidence.LogLine{Time: c.Timestamp, Text: fmt.Sprintf("planned drain of node %s: %s change of %s at %s: %q", node, orWord(c.Kind, "a"), orWord(c.Service, "the cluster"), c.Timestamp.UTC().Format("15:04"), c.Description)})
		}
	}
	for _, e := range g.k8s.Events {
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		text := e.Message
		switch {
		case e.Reason == "ScaleDown" && e.InvolvedObject.Kind == "Pod":
			text = "Scale-down: deleting pod for node scale down; evicted pod " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		case e.Reason == "FailedScheduling" || e.Reason == "Evicted" || e.Reason == "ScaleDown" || e.Reason == "TriggeredScaleUp":
		case e.Reason == "Scheduled":
			// A Scheduled event's time is its first: when the pod was
			// placed.
			if !e.FirstTimestamp.IsZero() {
				t = e.FirstTimestamp.Time
			}
		case e.Reason == "Killing" && e.InvolvedObject.Kind == "Pod" && strings.HasPrefix(e.Message, "Stopping container"):
			text = "stopped pod " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		default:
			continue
		}
		out = append(out, evidence.LogLine{Time: t, Text: text})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// answerNodeRemovedOver answers a question about a workload whose
// replicas went missing when their node was removed and are all back:
// healthy now, with what happened. It leaves the result as it is when the
// workload is not fully available, when no removal evicted its pods, or
// when the answer found a fault of the workload's own.
func (g *gatherer) answerNodeRemovedOver(ctx context.Context, res *finding.Result, alerts []evidence.Alert) bool {
	if res == nil {
		return false
	}
	subjects := g.sc.Subjects()
	asked := matchLine(presentAskRE, g.sc.Message+" "+g.sc.Hint) || matchLine(okNowAskRE, g.sc.Message+" "+g.sc.Hint)
	var resolved *evidence.Alert
	for i := range alerts {
		if alertResolved(alerts[i], g.sc.Window.End) && alertAbout(alerts[i], subjects, g.sc.Alert) {
			resolved = &alerts[i]
		}
	}
	if !asked && resolved == nil {
		return false
	}
	dep, state, ok := g.availableSubject(subjects)
	if !ok {
		return false
	}
	r, ok := readNodeRemoval(g.removalSources(), dep.Name, orWord(dep.Namespace, g.sc.Namespace))
	if !ok {
		return false
	}
	// Did users notice? The workload's own error and latency series,
	// since the node went, against their range before it.
	flat, impact := subjectSeriesFlat(g.metricSets, dep.Name, r.at)
	for _, c := range res.Candidates {
		if !strings.EqualFold(c.Subject, dep.Name) || slices.Contains(transientKinds, c.Kind) || c.Kind == string(KindLoadSurge) || c.Score < healthyBar*100 {
			continue
		}
		// The replacements' wait for a node is the removal's own story;
		// an error or latency shift that stayed within its usual range
		// is no fault of the workload.
		if c.Kind == string(KindUnschedulable) || flat && (c.Kind == string(KindErrorRate) || c.Kind == string(KindLatency)) {
			continue
		}
		return false
	}
	var dip replicaDip
	haveDip := false
	if now := g.sc.Window.End; g.src != nil && g.src.Metrics != nil && !now.IsZero() {
		from := now.Add(-24 * time.Hour)
		avail, err1 := g.src.Metrics.QueryRange(ctx, "kube_deployment_status_replicas_available", from, now, time.Minute)
		desired, err2 := g.src.Metrics.QueryRange(ctx, "kube_deployment_spec_replicas", from, now, time.Minute)
		if err1 == nil && err2 == nil {
			dip, haveDip = dipOf(avail, desired, dep.Name)
		}
	}
	if haveDip && !dip.back {
		return false
	}
	hm := func(t time.Time) string { return t.UTC().Format("15:04") }
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	pods := make([]string, 0, len(r.evicted))
	for _, p := range r.evicted {
		_, n, _ := strings.Cut(p, "/")
		pods = append(pods, orWord(n, p))
	}
	alertWord := "the alert"
	if resolved != nil {
		alertWord = "the " + resolved.Name + " alert"
	} else if g.sc.Alert != "" {
		alertWord = "the " + g.sc.Alert + " alert"
	}
	expl := fmt.Sprintf("%s is healthy now and %s is over: its Deployment has %s. It was caused by a node scale-down: at %s UTC the cluster autoscaler removed %s", dep.Name, alertWord, state, hm(r.at), orWord(prefixed("node ", r.node), "their node"))
	if r.planned != "" {
		expl = fmt.Sprintf("%s is healthy now and %s is no incident: its Deployment has %s. It fired during a planned node drain: at %s UTC node %s was cordoned and drained (%s)", dep.Name, alertWord, state, hm(r.at), r.node, r.planned)
	} else if r.reason != "" || r.util != "" {
		expl += " (" + strings.TrimSpace(strings.Join(nonEmpty(r.reason, utilWord(r.util)), ", ")) + ")"
	}
	expl += fmt.Sprintf(" and evicted %d of its pods (%s)", len(pods), strings.Join(pods, ", "))
	switch {
	case !r.joinedAt.IsZero() && r.scaleUp != "":
		expl += fmt.Sprintf("; the replacement stayed Pending with no node to fit it until the cluster autoscaler added one (node group %s) and it was scheduled on the new node %s at %s UTC, %d min after the eviction", r.scaleUp, r.joined, hm(r.joinedAt), int(r.joinedAt.Sub(r.at).Minutes()))
	case !r.joinedAt.IsZero():
		expl += "; their replacements stayed Pending with no node to fit them"
		if r.scaleUpFail != "" {
			expl += fmt.Sprintf(" (a scale-up failed: %s)", r.scaleUpFail)
		}
		expl += fmt.Sprintf(" until node %s joined at %s UTC, %d min after the eviction", r.joined, hm(r.joinedAt), int(r.joinedAt.Sub(r.at).Minutes()))
	case !r.waited.IsZero():
		expl += fmt.Sprintf("; their replacements waited Pending for a node until at least %s UTC", hm(r.waited))
	}
	if haveDip {
		expl += fmt.Sprintf(". Available replicas were %.0f of %.0f from %s to %s UTC and are back", dip.low, dip.desired, hm(dip.from), hm(dip.to))
	}
	pdb, held := budgetOf(&g.k8s, g.commands, dep)
	if pdb != "" {
		expl += fmt.Sprintf("; its PodDisruptionBudget (%s) held its availability", pdb)
		if held != "" {
			expl += ": " + held
		}
	}
	if flat && impact != "" {
		expl += ". No user impact: " + impact
	}
	if r.planned != "" {
		expl += ". Working as expected: nothing to fix on the workload; the alert fired because the replacement waited for capacity longer than its 'for' duration."
	} else {
		expl += ". Nothing to fix on the workload; the gap is capacity the autoscaler gave up with pods on it."
	}
	ev := []string{fmt.Sprintf("deployment %s/%s: %s", orWord(dep.Namespace, g.sc.Namespace), dep.Name, state)}
	for _, l := range r.lines {
		if r.planned != "" {
			ev = append(ev, "planned drain: "+l)
			continue
		}
		ev = append(ev, "cluster autoscaler: "+quote(l, 300))
	}
	if r.scaleUp != "" && r.joined != "" {
		ev = append(ev, fmt.Sprintf("cluster-autoscaler TriggeredScaleUp %s; the replacement was scheduled on the new node %s at %s UTC", r.scaleUp, r.joined, hm(r.joinedAt)))
	}
	if pdb != "" {
		ev = append(ev, "PodDisruptionBudget "+pdb)
	}
	if flat && impact != "" {
		ev = append(ev, impact)
	}
	if haveDip {
		ev = append(ev, fmt.Sprintf("kube_deployment_status_replicas_available{deployment=%q}: %.0f of %.0f desired from %s to %s UTC, %.0f since", dep.Name, dip.low, dip.desired, hm(dip.from), hm(dip.to), dip.desired))
	}
	if resolved != nil {
		ev = append(ev, fmt.Sprintf("alert %s resolved at %s UTC (fired %s UTC)", resolved.Name, hm(resolved.EndsAt), hm(resolved.StartsAt)))
	}
	nearby := strings.TrimSpace(res.RootCause.Description)
	otherFault := len(res.Candidates) > 0 && !strings.EqualFold(res.Candidates[0].Subject, dep.Name) && res.Verdict != finding.VerdictHealthy
	res.RootCause.Description = expl
	if otherFault {
		res.RootCause.Description += fmt.Sprintf(" A failure nearby, not of %s: %s", dep.Name, clip(nearby, 300))
	}
	res.Summary = expl
	res.Verdict = finding.VerdictHealthy
	res.RootCause.Confidence = 65
	res.RootCause.Evidence = ev
	tl := []finding.TimelineEvent{{Timestamp: rfc(r.at), Event: fmt.Sprintf("cluster autoscaler removes %s, evicting %s", orWord(prefixed("node ", r.node), "their node"), strings.Join(pods, ", "))}}
	if r.planned != "" {
		tl[0].Event = fmt.Sprintf("planned drain of node %s evicts %s", r.node, strings.Join(pods, ", "))
	}
	if !r.joinedAt.IsZero() {
		tl = append(tl, finding.TimelineEvent{Timestamp: rfc(r.joinedAt), Event: fmt.Sprintf("node %s joins; the Pending replacements are scheduled", r.joined)})
	}
	if haveDip {
		tl = append(tl, finding.TimelineEvent{Timestamp: rfc(dip.to), Event: fmt.Sprintf("%s back to %.0f of %.0f available replicas", dep.Name, dip.desired, dip.desired)})
	}
	if resolved == nil {
		for _, a := range alerts {
			if alertAbout(a, subjects, g.sc.Alert) && !a.StartsAt.IsZero() {
				tl = append(tl, finding.TimelineEvent{Timestamp: rfc(a.StartsAt), Event: "alert " + a.Name + " fires"})
				break
			}
		}
	}
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].Timestamp < tl[j].Timestamp })
	res.Timeline = tl
	res.AffectedSystems = []string{dep.Name}
	res.Recommendations = append([]finding.Recommendation{
		{Priority: finding.PriorityLow, Action: noActionWords(dep.Name, pdb)},
		{Priority: finding.PriorityLow, Action: "Keep headroom for replacements (a low-priority placeholder deployment, or a scale-down utilization threshold and delay the cluster autoscaler respects) so evicted pods do not wait for a new node"},
	}, res.Recommendations...)
	res.Normalize()
	return true
}

// noActionWords is the first recommendation of a workload back to full
// availability after a node went: nothing to do, and the budget it has or
// should have.
func noActionWords(workload, pdb string) string {
	if pdb != "" {
		return fmt.Sprintf("No action needed on %s now: its PodDisruptionBudget (%s) already keeps a drain or scale-down from taking several of its replicas at once; spread its pods over nodes (topologySpreadConstraints) so one node holds few of them", workload, pdb)
	}
	return fmt.Sprintf("No action needed on %s now. To keep a scale-down from taking several of its replicas at once, give it a PodDisruptionBudget (minAvailable) and spread its pods over nodes (topologySpreadConstraints)", workload)
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func utilWord(u string) string {
	if u == "" {
		return ""
	}
	if !strings.HasSuffix(u, "%") {
		return "utilization " + u
	}
	return u + " of its CPU requested"
}

// subjectSeriesFlat reports whether a workload's error and latency series
// stayed within their range before since (their peak after it no higher
// than the highest before), and says so; false when none was gathered.
func subjectSeriesFlat(sets []MetricSet, subject string, since time.Time) (bool, string) {
	var words []string
	for _, ms := range sets {
		if ms.Class != MetricErrors && ms.Class != MetricLatency {
			continue
		}
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			before, after, nb, na := 0.0, 0.0, 0, 0
			for _, p := range s.Points {
				if p.T.Before(since) {
					before, nb = max(before, p.V), nb+1
				} else {
					after, na = max(after, p.V), na+1
				}
			}
			if nb < 5 || na < 3 {
				continue
			}
			if after > before*1.1 && after-before > 1e-9 {
				return false, ""
			}
			words = append(words, fmt.Sprintf("%s stayed within its usual range (at most %s since %s UTC, %s before)", ms.Name, formatValue(after, ms.Unit), since.UTC().Format("15:04"), formatValue(before, ms.Unit)))
		}
	}
	if len(words) == 0 {
		return false, ""
	}
	return true, strings.Join(words, "; ")
}

// budgetOf names the PodDisruptionBudget of a workload and what it held:
// "search-api: minAvailable 3, 1 disruption allowed, 4 pods healthy (3
// required)". It is read from the budgets gathered (get pdb rows, describe
// pages, YAML or JSON: the one whose selector matches the workload's pod
// labels, or, a table row having no selector, the one named after it), else
// from a get pdb row kept as text.
func budgetOf(k *K8sEvidence, cmds []evidence.CommandOutput, dep *appsv1.Deployment) (words, held string) {
	if b := workloadBudget(k, dep); b != nil {
		return budgetWords(b), budgetHeld(ruleOf(b))
	}
	for _, c := range cmds {
		if !strings.Contains(strings.ToLower(c.Command), "pdb") && !strings.Contains(strings.ToLower(c.Command), "poddisruptionbudget") {
			continue
		}
		for _, l := range c.Lines {
			r := findSubmatch(pdbRowRE, strings.TrimSpace(l))
			if r == nil || !strings.EqualFold(r[2], dep.Name) {
				continue
			}
			b := "maxUnavailable " + r[4]
			if r[3] != "N/A" {
				b = "minAvailable " + r[3]
			}
			return fmt.Sprintf("%s: %s, %s allowed", r[2], b, plural(atoiOr(r[5]), "disruption", "disruptions")), budgetHeld(b)
		}
	}
	return "", ""
}

// budgetHeld says what a budget's rule ("minAvailable 3", "maxUnavailable
// 25%") let a drain do.
func budgetHeld(rule string) string {
	if v, ok := strings.CutPrefix(rule, "minAvailable "); ok {
		return "the drain could evict a replica only while at least " + v + " stayed available"
	}
	if v, ok := strings.CutPrefix(rule, "maxUnavailable "); ok {
		return "the drain could evict a replica only while no more than " + v + " were unavailable"
	}
	return ""
}

// ruleOf is a budget's rule: "minAvailable 3", "maxUnavailable 1".
func ruleOf(b *policyv1.PodDisruptionBudget) string {
	switch {
	case b.Spec.MinAvailable != nil:
		return "minAvailable " + b.Spec.MinAvailable.String()
	case b.Spec.MaxUnavailable != nil:
		return "maxUnavailable " + b.Spec.MaxUnavailable.String()
	}
	return ""
}

// workloadBudget is the budget of dep among those gathered: its selector
// matches the labels of dep's pod template or of one of its pods; a budget
// read from a table row (no selector) counts when named after dep.
func workloadBudget(k *K8sEvidence, dep *appsv1.Deployment) *policyv1.PodDisruptionBudget {
	var sets []labels.Set
	if len(dep.Spec.Template.Labels) > 0 {
		sets = append(sets, dep.Spec.Template.Labels)
	}
	for i := range k.Pods {
		if p := &k.Pods[i]; len(p.Labels) > 0 && WorkloadOfPod(p) == dep.Name && (dep.Namespace == "" || p.Namespace == "" || p.Namespace == dep.Namespace) {
			sets = append(sets, p.Labels)
		}
	}
	for i := range k.PodDisruptionBudgets {
		b := &k.PodDisruptionBudgets[i]
		if dep.Namespace != "" && b.Namespace != "" && b.Namespace != dep.Namespace {
			continue
		}
		if b.Spec.Selector == nil {
			if strings.EqualFold(b.Name, dep.Name) || strings.EqualFold(strings.TrimSuffix(b.Name, "-pdb"), dep.Name) {
				return b
			}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		for _, l := range sets {
			if sel.Matches(l) {
				return b
			}
		}
	}
	return nil
}

// budgetWords says what a budget requires and allows now: "search-api:
// minAvailable 3, 1 disruption allowed, 4 pods healthy (3 required)".
func budgetWords(b *policyv1.PodDisruptionBudget) string {
	parts := nonEmpty(ruleOf(b), plural(int(b.Status.DisruptionsAllowed), "disruption", "disruptions")+" allowed")
	if st := b.Status; st.CurrentHealthy > 0 || st.DesiredHealthy > 0 {
		parts = append(parts, fmt.Sprintf("%s healthy (%d required)", plural(int(st.CurrentHealthy), "pod", "pods"), st.DesiredHealthy))
	}
	return b.Name + ": " + strings.Join(parts, ", ")
}
