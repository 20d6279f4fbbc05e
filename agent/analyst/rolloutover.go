package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A question whether a workload is fine now ("alert X fired for W around
// 03:10: is it real, is W ok now?") is answered by the workload's present
// state when its Deployment has every replica available and updated: the
// alert was real but is over. When its available replicas dipped below
// the desired count while a rolling update replaced its pods (the
// rollout's maxUnavailable, its minReadySeconds), that dip is what a
// replicas alert saw, transient by design. A louder failure of another
// workload nearby stays a finding nearby, not the answer.

// okNowAskRE matches a question about whether a subject is fine now, or
// whether its alert was real.
var okNowAskRE = regexp.MustCompile(`(?i)\b(?:is|are)\s+(?:[\w.-]+\s+){0,3}(?:ok|okay|fine|healthy|good|back to normal|running normally)\s+now\b|\bis (?:it|this|that|the alert) (?:a )?real\b|\bfalse (?:alarm|positive)\b|\bstill (?:a problem|an issue|happening|going on|down|broken|failing)\b`)

// transientKinds are what a rolling update shows on its own workload for
// a while: pods not ready yet, a rollout in progress, restarts of old pods.
var transientKinds = []string{string(KindProbeFailure), string(KindRolloutStuck), string(KindRestarts), string(KindNoEndpoints)}

// replicaDip is a time the available replicas were below the desired.
type replicaDip struct {
	from, to     time.Time
	low, desired float64
	back         bool
}

// availableSubject is the Deployment of one of the subjects (the last
// listed, in the question's namespace when it names one) with its
// state, when all its replicas are available now.
func (g *gatherer) availableSubject(subjects []string) (*appsv1.Deployment, string, bool) {
	var dep *appsv1.Deployment
	for i := range g.k8s.Deployments {
		if d := &g.k8s.Deployments[i]; containsFold(subjects, d.Name) && (g.sc.Namespace == "" || d.Namespace == "" || d.Namespace == g.sc.Namespace) {
			dep = d
		}
	}
	if dep == nil {
		return nil, "", false
	}
	state, ok := fullyAvailable(dep)
	return dep, state, ok
}

// fullyAvailable reports whether a Deployment has all its replicas
// available and updated now, with no condition saying otherwise.
func fullyAvailable(d *appsv1.Deployment) (string, bool) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if want == 0 || st.AvailableReplicas < want || st.UnavailableReplicas > 0 || st.UpdatedReplicas > 0 && st.UpdatedReplicas < want {
		return "", false
	}
	for _, c := range st.Conditions {
		if (c.Type == appsv1.DeploymentAvailable || c.Type == appsv1.DeploymentProgressing) && c.Status == corev1.ConditionFalse {
			return "", false
		}
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return "", false
		}
	}
	return fmt.Sprintf("%d of %d replicas available", st.AvailableReplicas, want), true
}

// dipOf reads when a deployment's available replicas were below the desired
// from kube-state-metrics' series, and whether they are back.
func dipOf(avail, desired []evidence.Series, name string) (replicaDip, bool) {
	pick := func(ss []evidence.Series) *evidence.Series {
		for i := range ss {
			if ss[i].Labels["deployment"] == name && len(ss[i].Points) > 0 {
				return &ss[i]
			}
		}
		return nil
	}
	a, d := pick(avail), pick(desired)
	if a == nil || d == nil {
		return replicaDip{}, false
	}
	want := map[int64]float64{}
	for _, p := range d.Points {
		want[p.T.Unix()] = p.V
	}
	var dip replicaDip
	found := false
	for _, p := range a.Points {
		w, ok := want[p.T.Unix()]
		if !ok {
			continue
		}
		if p.V < w {
			if !found {
				dip.from, dip.low, dip.desired = p.T, p.V, w
				found = true
			}
			dip.low = min(dip.low, p.V)
			dip.to = p.T
			dip.back = false
		} else if found && !dip.back {
			dip.back = true
			dip.to = p.T
		}
	}
	return dip, found
}

// answerRolloutOver turns an answer about something else (or about its own
// rollout's passing signs) into "healthy now" for a subject whose
// Deployment is fully available, when the question asks whether it is fine
// now. It reads the dip of its available replicas from the metrics source
// and the rollout from the changes.
func (g *gatherer) answerRolloutOver(ctx context.Context, res *finding.Result) bool {
	if res == nil || res.Verdict == finding.VerdictHealthy || !matchLine(okNowAskRE, g.sc.Message+" "+g.sc.Hint) {
		return false
	}
	subjects := g.sc.Subjects()
	dep, state, ok := g.availableSubject(subjects)
	if !ok {
		return false
	}
	// The answer found is about another workload, or only about the
	// subject's own rollout in passing.
	for _, c := range res.Candidates {
		if strings.EqualFold(c.Subject, dep.Name) && !slices.Contains(transientKinds, c.Kind) && c.Score >= healthyBar*100 {
			return false
		}
	}
	now := g.sc.Window.End
	var dip replicaDip
	haveDip := false
	if g.src != nil && g.src.Metrics != nil && !now.IsZero() {
		from := g.sc.Window.BaselineStart
		if from.IsZero() || now.Sub(from) < 12*time.Hour {
			from = now.Add(-12 * time.Hour)
		}
		avail, err1 := g.src.Metrics.QueryRange(ctx, "kube_deployment_status_replicas_available", from, now, time.Minute)
		desired, err2 := g.src.Metrics.QueryRange(ctx, "kube_deployment_spec_replicas", from, now, time.Minute)
		if err1 == nil && err2 == nil {
			dip, haveDip = dipOf(avail, desired, dep.Name)
		}
	}
	if haveDip && !dip.back {
		return false // still below the desired count in the metrics
	}
	var rollout *evidence.Change
	for i := range g.changes {
		c := &g.changes[i]
		if strings.EqualFold(c.Service, dep.Name) && c.Kind == "deploy" && (!haveDip || !c.Timestamp.After(dip.from.Add(5*time.Minute)) && c.Timestamp.After(dip.from.Add(-time.Hour))) {
			rollout = c
		}
	}
	what := dep.Name
	hm := func(t time.Time) string { return t.UTC().Format("15:04") }
	expl := fmt.Sprintf("%s is healthy now: its Deployment has %s, all on the current revision", what, state)
	var ev []string
	ev = append(ev, fmt.Sprintf("deployment %s/%s: %s, %d updated, %d unavailable", orWord(dep.Namespace, g.sc.Namespace), dep.Name, state, dep.Status.UpdatedReplicas, dep.Status.UnavailableReplicas))
	if haveDip {
		expl += fmt.Sprintf(". The alert was real but is over: available replicas fell to %.0f of %.0f from %s to %s UTC and are back", dip.low, dip.desired, hm(dip.from), hm(dip.to))
		ev = append(ev, fmt.Sprintf("kube_deployment_status_replicas_available{deployment=%q}: %.0f of %.0f desired from %s to %s UTC, %.0f since", dep.Name, dip.low, dip.desired, hm(dip.from), hm(dip.to), dip.desired))
	} else {
		expl += ". The alert is over"
	}
	if rollout != nil {
		expl += fmt.Sprintf(", while the rolling update to %s (%s UTC) replaced its pods", orWord(rollout.Revision, "the new revision"), hm(rollout.Timestamp))
		if s := dep.Spec.Strategy.RollingUpdate; s != nil && s.MaxUnavailable != nil {
			expl += fmt.Sprintf(" %s at a time (maxUnavailable %s", map[bool]string{true: "one", false: "several"}[s.MaxUnavailable.String() == "1"], s.MaxUnavailable.String())
			if dep.Spec.MinReadySeconds > 0 {
				expl += fmt.Sprintf(", minReadySeconds %d", dep.Spec.MinReadySeconds)
			}
			expl += ")"
		}
		expl += ": a transient dip by design of the rollout, not a fault"
		ev = append(ev, fmt.Sprintf("deploy of %s at %s: %q", dep.Name, rollout.Timestamp.UTC().Format(time.RFC3339), rollout.Description))
	}
	expl += "."
	nearby := strings.TrimSpace(res.RootCause.Description)
	res.RootCause.Description = expl
	if len(res.Candidates) > 0 && !strings.EqualFold(res.Candidates[0].Subject, dep.Name) {
		res.RootCause.Description += fmt.Sprintf(" A failure nearby, not of %s: %s", what, clip(nearby, 400))
	}
	res.Summary = expl
	res.Verdict = finding.VerdictHealthy
	res.RootCause.Confidence = 60
	res.RootCause.Evidence = append(ev, res.RootCause.Evidence...)
	if haveDip {
		res.Timeline = append(res.Timeline, finding.TimelineEvent{Timestamp: dip.to.UTC().Format(time.RFC3339), Event: fmt.Sprintf("%s back to %.0f of %.0f available replicas", what, dip.desired, dip.desired)})
	}
	res.AffectedSystems = []string{dep.Name}
	res.Recommendations = append([]finding.Recommendation{{Priority: finding.PriorityLow,
		Action: fmt.Sprintf("No action needed on %s; to keep a rollout from paging, alert on available replicas below desired for longer than the rollout takes (for: > progressDeadlineSeconds) or only when no rollout is in progress", what)}},
		res.Recommendations...)
	res.Normalize()
	return true
}
