package analyst

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// A rollout whose new pods never become ready (ProgressDeadlineExceeded):
// a symptom of what keeps them from starting or passing their probes.
var rolloutStuck = &mechanism{
	kind:  KindRolloutStuck,
	class: classSymptom,
	label: "rollout stuck",
	objects: func(ev *K8sEvidence, w Window) []Finding {
		return DetectDeployments(ev.Deployments, ev.ReplicaSets, w)
	},
	event: func(e *corev1.Event) (float64, bool) {
		return 0.8, e.Reason == "ProgressDeadlineExceeded"
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the rollout of %s is stuck: new pods do not become ready", s)
		if h.fact("available") != "" && h.fact("desired") != "" {
			d += fmt.Sprintf(" (%s of %s replicas available)", h.fact("available"), h.fact("desired"))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}

// DetectDeployments finds stuck or degraded rollouts: ProgressDeadlineExceeded,
// fewer available replicas than desired, and a new ReplicaSet failing while
// the old one still serves.
func DetectDeployments(deps []appsv1.Deployment, rss []appsv1.ReplicaSet, w Window) []Finding {
	var out []Finding
	for i := range deps {
		d := &deps[i]
		desired := int32(1)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		if desired == 0 {
			continue
		}
		obj := "deployment " + d.Namespace + "/" + d.Name
		f := Finding{Kind: KindRolloutStuck, Subject: d.Name, Object: obj, Namespace: d.Namespace, Source: SrcKubernetes, Severity: SevWarning, Weight: 0.6}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
				f.Weight, f.Severity = 0.85, SevCritical
				f.Time = c.LastTransitionTime.Time
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: Progressing=False, ProgressDeadlineExceeded since %s: %s", obj, ts(c.LastTransitionTime.Time), quote(c.Message, 200)))
			}
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionFalse {
				f.Time = earliest(f.Time, c.LastTransitionTime.Time)
			}
		}
		avail := d.Status.AvailableReplicas
		if avail < desired {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s has %d of %d replicas available (%d updated, %d unavailable)", obj, avail, desired, d.Status.UpdatedReplicas, d.Status.UnavailableReplicas))
			if avail == 0 {
				f.Severity = SevCritical
			}
		}
		owned := ownedBy(d, rss)
		if n := len(owned); n >= 2 {
			nw, old := owned[n-1], owned[n-2]
			if nw.Status.ReadyReplicas < valueOr(nw.Spec.Replicas, 0) && old.Status.ReadyReplicas > 0 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("new ReplicaSet %s (revision %d) has %d of %d pods ready while old ReplicaSet %s (revision %d) still serves %d",
					nw.Name, revisionOf(nw), nw.Status.ReadyReplicas, valueOr(nw.Spec.Replicas, 0), old.Name, revisionOf(old), old.Status.ReadyReplicas))
				f.Time = earliest(f.Time, nw.CreationTimestamp.Time)
				f.setFact("revision", strconv.Itoa(revisionOf(nw)))
				f.setFact("previous_revision", strconv.Itoa(revisionOf(old)))
			}
		}
		if len(f.Evidence) == 0 {
			continue
		}
		f.Summary = fmt.Sprintf("%s degraded: %d of %d replicas available", obj, avail, desired)
		f.setFact("desired", strconv.Itoa(int(desired)))
		f.setFact("available", strconv.Itoa(int(avail)))
		out = append(out, f)
	}
	return out
}
