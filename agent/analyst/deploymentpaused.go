package analyst

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A Deployment left paused: `kubectl rollout pause` (during an incident, to
// batch edits) sets spec.paused, and while it is set the controller makes
// no new ReplicaSet for a changed template. A deploy then updates the
// template (kubectl set image, a pipeline's apply), nothing fails, the
// old pods keep serving the old version, and whatever waits for the
// rollout (kubectl rollout status, a pipeline step) times out with "0 out
// of N new replicas have been updated". Read from the Deployment: its
// Progressing condition with reason DeploymentPaused (Unknown, "Deployment
// is paused"), or spec.paused: true, while no replica is updated to the
// template, or (the ReplicaSets read) no ReplicaSet with pods runs its image.
// A rollout paused half-way (both versions serve) is this only when the
// new version's pods are all ready: otherwise what fails there is the new
// version's, not the pause.

// KindDeploymentPaused is a rollout that never starts because the
// Deployment is paused.
const KindDeploymentPaused Kind = "deployment_paused"

var deploymentPaused = &mechanism{
	kind:    KindDeploymentPaused,
	class:   classCause,
	label:   "the Deployment is paused: its new template never rolls out",
	objects: func(ev *K8sEvidence, w Window) []Finding { return detectDeploymentPaused(ev, w) },
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind == KindRolloutStuck
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.Contains(strings.ToLower(c.Summary+" "+strings.Join(c.Evidence, " ")), "pause")
	},
	describe:  describeDeploymentPaused,
	recommend: recommendDeploymentPaused,
}

// templateImage is the image of a pod template's first container.
func pausedTemplateImage(t corev1.PodTemplateSpec) string {
	if len(t.Spec.Containers) == 0 {
		return ""
	}
	return t.Spec.Containers[0].Image
}

func detectDeploymentPaused(ev *K8sEvidence, w Window) []Finding {
	var out []Finding
	for i := range ev.Deployments {
		d := &ev.Deployments[i]
		paused, reason := d.Spec.Paused, ""
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "DeploymentPaused" {
				paused, reason = true, fmt.Sprintf("Progressing %s DeploymentPaused", c.Status)
			}
		}
		if !paused {
			continue
		}
		desired := valueOr(d.Spec.Replicas, 1)
		image := pausedTemplateImage(d.Spec.Template)
		// What serves: the ReplicaSets of the Deployment with pods, and
		// whether one runs the template's image.
		var serving []string
		templateRuns, known, templateReady := false, false, false
		for _, rs := range ownedBy(d, ev.ReplicaSets) {
			if valueOr(rs.Spec.Replicas, 0) == 0 && rs.Status.Replicas == 0 {
				continue
			}
			img := pausedTemplateImage(rs.Spec.Template)
			if img == "" {
				continue
			}
			known = true
			serving = append(serving, fmt.Sprintf("%s (%s, %d pods)", rs.Name, img, max(valueOr(rs.Spec.Replicas, 0), rs.Status.Replicas)))
			if image != "" && img == image {
				templateRuns = true
				n := max(valueOr(rs.Spec.Replicas, 0), rs.Status.Replicas)
				templateReady = n > 0 && rs.Status.ReadyReplicas >= n
			}
		}
		// Only a template that has not started rolling out: a rollout
		// paused half-way runs both versions, and what fails there is
		// the new one's, not the pause.
		behind := d.Status.UpdatedReplicas == 0 && d.Status.Replicas > 0
		if known {
			behind = image != "" && !templateRuns
		}
		// Or paused half-way with nothing failing on the new version:
		// its pods are all ready, so the pause alone holds the rest.
		halfway := false
		if !behind && d.Status.UpdatedReplicas > 0 && d.Status.UpdatedReplicas < desired {
			if known {
				halfway = templateReady
			} else {
				halfway = d.Status.UnavailableReplicas == 0 && d.Status.AvailableReplicas >= desired
			}
		}
		if !(behind || halfway) || desired == 0 {
			continue
		}
		obj := "deployment " + d.Namespace + "/" + d.Name
		f := Finding{Kind: KindDeploymentPaused, Subject: d.Name, Namespace: d.Namespace, Object: obj, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: w.Start}
		how := "spec.paused: true"
		if reason != "" {
			how = reason
		}
		f.setFact("how", how)
		f.setFact("image", image)
		f.setFact("updated", strconv.Itoa(int(d.Status.UpdatedReplicas)))
		f.setFact("desired", strconv.Itoa(int(desired)))
		f.setFact("serving", strings.Join(serving, ", "))
		if halfway {
			f.setFact("halfway", "true")
		}
		f.Evidence = []string{fmt.Sprintf("%s is paused (%s): %d of %d replicas updated to its template", obj, how, d.Status.UpdatedReplicas, desired)}
		if image != "" && halfway {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s's template (%s) are ready, but the old ones are not replaced: %s", d.Name, image, f.Facts["serving"]))
		} else if image != "" {
			e := fmt.Sprintf("the template of %s runs %s", d.Name, image)
			if len(serving) > 0 {
				e += ", but the pods that serve are of " + f.Facts["serving"] + ": no new ReplicaSet was created for it"
			}
			f.Evidence = append(f.Evidence, e)
		}
		f.Summary = fmt.Sprintf("%s is paused: its new template never rolls out", obj)
		out = append(out, f)
	}
	return out
}

func describeDeploymentPaused(h *Hypothesis, sc Scope) string {
	if h.fact("halfway") != "" {
		s := fmt.Sprintf("the Deployment %s is paused mid-rollout (%s, a kubectl rollout pause, e.g. a pipeline's canary step, never resumed): %s of %s replicas run its template", h.Subject, h.fact("how"), h.fact("updated"), h.fact("desired"))
		if img := h.fact("image"); img != "" {
			s += " (" + img + ")"
		}
		s += " and are ready; while paused the controller replaces no more old pods, so the rest keep serving the old version"
		if sv := h.fact("serving"); sv != "" {
			s += " (" + sv + ")"
		}
		s += "; nothing fails on the new version, and whatever waits for the rollout (kubectl rollout status, a pipeline step) waits until it is resumed"
		return s
	}
	s := fmt.Sprintf("the Deployment %s is paused (%s, left by a kubectl rollout pause or a spec.paused in the manifest, never resumed): while paused the controller creates no new ReplicaSet for a changed template, so its template", h.Subject, h.fact("how"))
	if img := h.fact("image"); img != "" {
		s += " (" + img + ")"
	}
	s += fmt.Sprintf(" never rolls out, %s of %s replicas are updated", h.fact("updated"), h.fact("desired"))
	if sv := h.fact("serving"); sv != "" {
		s += " and the old pods keep serving: " + sv
	}
	s += "; nothing fails, and whatever waits for the rollout (kubectl rollout status, a pipeline step) times out"
	return s
}

func recommendDeploymentPaused(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Resume the rollout: kubectl rollout resume deployment/%s -n %s (check first that the template holds only what should ship), then watch kubectl rollout status", h.Subject, orWord(sc.Namespace, "<namespace>")))
	r.add(finding.PriorityMedium, "Make the deploy pipeline fail fast on a paused Deployment (check spec.paused before applying) instead of timing out")
	r.add(finding.PriorityLow, "Record a rollout pause in the incident's follow-ups and alert on Deployments paused for more than a day")
}
