package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A rollout whose strategy takes every pod down at once: a Deployment
// with rollingUpdate maxUnavailable at or above its replica count (100%,
// often copied from a worker's values where it is harmless) or with the
// Recreate strategy. At a deploy the controller scales the old ReplicaSet
// to zero in one step ("Scaled down replica set web-6c8f to 0 from 8")
// while the new pods are still starting, so the service has no ready
// endpoint until they pass readiness: a full outage for as long as they
// take to start, whatever the release. Read from the Deployment (describe's
// RollingUpdateStrategy / StrategyType, or its spec) and the deployment
// controller's ScalingReplicaSet event of that one-step scale-down, while
// the Deployment is fully available now (the new version serves): the
// release is innocent. A new version that fails to become ready is its own
// cause, not this.

// KindRolloutAllAtOnce is an outage during a rollout whose strategy let
// every old pod go down at once.
const KindRolloutAllAtOnce Kind = "rollout_all_at_once"

var rolloutAllAtOnce = &mechanism{
	kind:   KindRolloutAllAtOnce,
	class:  classCause,
	label:  "a rollout strategy that takes every pod down at once",
	detect: func(ev *Gathered, found []Finding) []Finding { return detectRolloutAllAtOnce(ev) },
	related: func(h *Hypothesis, f *Finding) bool {
		if !strings.EqualFold(f.Subject, h.Subject) {
			return false
		}
		switch f.Kind {
		case KindErrorRate, KindNoEndpoints, KindProbeFailure, KindRolloutStuck, KindTargetDown, KindLatency, KindLogErrors:
			return true
		}
		return false
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject) && (c.Kind == KindDeploy || c.Kind == KindConfigChange)
	},
	describe:  describeRolloutAllAtOnce,
	recommend: recommendRolloutAllAtOnce,
}

// allAtOnceScaledRE reads the deployment controller's ScalingReplicaSet
// message of a scale-down: "Scaled down replica set X to 0 from 8"
// (Kubernetes 1.26 and later), "Scaled down replica set X to 0" (older)
// and the "from 8 to 0" wording some tools print.
var allAtOnceScaledRE = regexp.MustCompile(`(?i)\bScaled down replica set (\S+?)(?: to (\d+)(?: from (\d+))?| from (\d+) to (\d+))\b`)

// scaleDown is one scale-down of a ReplicaSet by its Deployment.
type scaleDown struct {
	rs       string
	to, from int // from is -1 when the message does not say
	at       time.Time
}

// scaleDowns reads the scale-downs the events of a Deployment record.
func scaleDowns(ev *Gathered, d *appsv1.Deployment) []scaleDown {
	var out []scaleDown
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.Reason != "ScalingReplicaSet" || e.InvolvedObject.Name != d.Name || e.InvolvedObject.Kind != "" && e.InvolvedObject.Kind != "Deployment" ||
			e.Namespace != "" && d.Namespace != "" && e.Namespace != d.Namespace {
			continue
		}
		m := allAtOnceScaledRE.FindStringSubmatch(e.Message)
		if m == nil {
			continue
		}
		s := scaleDown{rs: m[1], from: -1}
		if m[2] != "" {
			s.to, _ = strconv.Atoi(m[2])
			if m[3] != "" {
				s.from, _ = strconv.Atoi(m[3])
			}
		} else {
			s.from, _ = strconv.Atoi(m[4])
			s.to, _ = strconv.Atoi(m[5])
		}
		_, s.at = eventTime(e)
		out = append(out, s)
	}
	return out
}

// allAtOnceStrategy says how a Deployment's strategy takes all its
// replicas down at once, or "" when it does not.
func allAtOnceStrategy(d *appsv1.Deployment, desired int32) string {
	st := d.Spec.Strategy
	if st.Type == appsv1.RecreateDeploymentStrategyType {
		return "strategy Recreate"
	}
	if st.RollingUpdate == nil || st.RollingUpdate.MaxUnavailable == nil {
		return ""
	}
	mu := st.RollingUpdate.MaxUnavailable
	n, err := intstr.GetScaledValueFromIntOrPercent(mu, int(desired), false)
	if err != nil || n < int(desired) {
		return ""
	}
	return fmt.Sprintf("rollingUpdate maxUnavailable %s of %d replicas", mu.String(), desired)
}

func detectRolloutAllAtOnce(ev *Gathered) []Finding {
	var out []Finding
	for i := range ev.K8s.Deployments {
		d := &ev.K8s.Deployments[i]
		desired := valueOr(d.Spec.Replicas, 1)
		if desired < 2 {
			continue
		}
		how := allAtOnceStrategy(d, desired)
		if how == "" {
			continue
		}
		state, ok := fullyAvailable(d)
		if !ok {
			continue
		}
		// The one-step scale-down of the old ReplicaSet to zero, with no
		// partial scale-down of that ReplicaSet read (an older
		// controller's message does not say from how many).
		downs := scaleDowns(ev, d)
		var drop *scaleDown
		for j := range downs {
			s := &downs[j]
			if s.to != 0 || !s.at.IsZero() && !ev.Window.covers(s.at) {
				continue
			}
			if (s.from >= 2 || s.from < 0) && !partiallyScaled(downs, s.rs) {
				drop = s
			}
		}
		if drop == nil {
			continue
		}
		obj := "deployment " + d.Namespace + "/" + d.Name
		f := Finding{Kind: KindRolloutAllAtOnce, Subject: d.Name, Namespace: d.Namespace, Object: obj, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: drop.at}
		f.setFact("how", how)
		f.setFact("old_rs", drop.rs)
		f.setFact("desired", strconv.Itoa(int(desired)))
		f.setFact("state", state)
		from := "every replica"
		if drop.from > 0 {
			from = strconv.Itoa(drop.from)
		}
		f.setFact("from", from)
		if rd := readinessDelay(d); rd > 0 {
			f.setFact("readiness_delay", fmt.Sprintf("%ds", rd))
		}
		f.Evidence = []string{
			fmt.Sprintf("%s rolls out with %s: every old pod may go down before a new one is ready", obj, how),
			fmt.Sprintf("at %s the deployment controller scaled the old ReplicaSet %s down to 0 from %s in one step", hm(drop.at), drop.rs, from),
			fmt.Sprintf("%s now has %s: the new version serves", obj, state),
		}
		if c := strategyChange(ev, d.Name); c != "" {
			f.setFact("set_by", c)
			f.Evidence = append(f.Evidence, "the strategy likely came with "+c)
		}
		f.Summary = fmt.Sprintf("%s took every pod down at once in its rollout (%s)", obj, how)
		out = append(out, f)
	}
	return out
}

// partiallyScaled reports whether a ReplicaSet was scaled down to a
// count above zero: it went down in steps.
func partiallyScaled(downs []scaleDown, rs string) bool {
	for _, s := range downs {
		if s.rs == rs && s.to > 0 {
			return true
		}
	}
	return false
}

// readinessDelay is the readiness probe's initial delay of a
// Deployment's first container, in seconds.
func readinessDelay(d *appsv1.Deployment) int32 {
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 && cs[0].ReadinessProbe != nil {
		return cs[0].ReadinessProbe.InitialDelaySeconds
	}
	return 0
}

// strategyChangeRE matches a change's text that speaks of a rollout
// strategy: the strategy itself, its fields, or the values block that
// holds them.
var strategyChangeRE = regexp.MustCompile(`(?i)\b(?:max[ _-]?unavailable|rolling[ _-]?update|recreate|strategy|rollout (?:block|settings|values|config))\b`)

// strategyChange is the latest change of a workload (in the window or the
// month before) that speaks of its rollout strategy, worded.
func strategyChange(ev *Gathered, subject string) string {
	var out string
	for _, cs := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for _, c := range cs {
			if strings.EqualFold(c.Service, subject) && strategyChangeRE.MatchString(c.Description) {
				out = fmt.Sprintf("the change of %s at %s: %s", c.Service, c.Timestamp.UTC().Format(time.RFC3339), quote(c.Description, 160))
			}
		}
	}
	return out
}

func describeRolloutAllAtOnce(h *Hypothesis, sc Scope) string {
	s := fmt.Sprintf("the rollout strategy of the Deployment %s takes every pod down at once (%s): at the rollout the controller scaled the old ReplicaSet %s down to 0 from %s in one step, all old pods at once, while the new pods were not ready yet",
		h.Subject, h.fact("how"), h.fact("old_rs"), h.fact("from"))
	if rd := h.fact("readiness_delay"); rd != "" {
		s += " (readiness probe delay " + rd + ")"
	}
	s += ", so the service had no ready endpoint until they were: a full outage for as long as the new pods took to start"
	s += fmt.Sprintf("; the release itself is not at fault: %s now", h.fact("state"))
	s += h.clause("; the strategy likely came with ", "set_by")
	return s
}

func recommendRolloutAllAtOnce(h *Hypothesis, sc Scope, r *recommender) {
	ns := orWord(sc.Namespace, "<namespace>")
	r.high("Set a safe rollout strategy on deployment/%s: rollingUpdate maxUnavailable 0 (or 25%%) with maxSurge 25%%, e.g. kubectl patch deployment %s -n %s -p '{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":0,\"maxSurge\":\"25%%\"}}}}', and fix it in the chart values so the next deploy keeps it", h.Subject, h.Subject, ns)
	r.med("Do not roll back the release for this outage: the new version is healthy; with a safe strategy its slow start (readiness, warm-up) only slows the rollout down")
	r.low("Check rollout settings in chart migrations and shared presets (a worker's maxUnavailable 100%% is wrong for a service behind a load balancer); alert on a Service with no ready endpoints")
}
