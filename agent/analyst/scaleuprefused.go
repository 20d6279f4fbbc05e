package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A node scale-up the cloud refused. Pending pods make the cluster
// autoscaler (or Karpenter) grow a node group; the cloud provider then
// refuses the instances: the account's vCPU quota for the instance family
// is used up (EC2 VcpuLimitExceeded), the zone has no capacity of the type
// (InsufficientInstanceCapacity, GCE ZONE_RESOURCE_POOL_EXHAUSTED), a
// project quota is exceeded (QUOTA_EXCEEDED, "GCE quota exceeded"). (A
// group at its maximum size is no refusal: the scheduler's reason stays
// the cause.) The autoscaler reports it on the pods (FailedScaleUp,
// then NotTriggerScaleUp "in backoff after failed scale-up") and backs the
// group off: the pods stay Pending. FailedScheduling says only that no
// node fits; the refusal is why no node was added, and what uses up a
// quota is a change of capacity elsewhere (a new node group, a fleet), not
// a change to the pending workload's replica count.

// KindScaleUpRefused is a node scale-up the cloud provider refused.
const KindScaleUpRefused Kind = "scaleup_refused"

var scaleUpRefused = &mechanism{
	kind:          KindScaleUpRefused,
	class:         classCause,
	label:         "node scale-up refused by the cloud provider",
	event:         scaleUpRefusedEvent,
	eventCritical: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		if code, words := scaleUpRefusal(e.Message); code != "" {
			f.setFact("code", code)
			f.setFact("refusal", words)
		}
		if m := findSubmatch(nodeGroupRE, e.Message); m != nil && f.fact("group") == "" {
			f.setFact("group", m[1])
		}
	},
	detect: func(ev *Gathered, found []Finding) []Finding {
		// The quota as the cloud's CLI reports it names what is used up.
		q := cloudQuotaSaid(ev)
		var said []timedLine
		for i := range found {
			f := &found[i]
			if f.Kind != KindScaleUpRefused {
				continue
			}
			// The backoff event does not say why the scale-up failed; the
			// autoscaler's log or the cloud's record of the launch (an
			// auto scaling group's activities) does.
			if f.fact("code") == "" {
				if said == nil {
					said = eventLines(ev, cloudRefusalTextRE)
				}
				for _, l := range said {
					if code, words := scaleUpRefusal(l.Text); code != "" {
						f.setFact("code", code)
						f.setFact("refusal", words)
						f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", l.From, quote(l.Text, 240)))
						break
					}
				}
			}
			if q != "" {
				f.setFact("quota", q)
				f.Evidence = append(f.Evidence, "quota: "+q)
			}
			// The group the scale-up grew, from its TriggeredScaleUp.
			if f.fact("group") == "" {
				if g, plan := scaleUpPlan(ev.K8s.Events, f.Object); g != "" {
					f.setFact("group", g)
					f.setFact("plan", plan)
				}
			}
		}
		return nil
	},
	related: func(h *Hypothesis, f *Finding) bool {
		// The pods that stay Pending are what the refusal leaves.
		return f.Kind == KindUnschedulable && f.Subject == h.Subject
	},
	strictTriggers: true,
	fitsChange:     changeSays(capacityChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		who := "the cluster autoscaler"
		if strings.Contains(strings.ToLower(h.fact("message")), "karpenter") || strings.Contains(strings.ToLower(h.fact("message")), "nodeclaim") {
			who = "Karpenter"
		}
		d := fmt.Sprintf("%s pods stay Pending because the nodes they need cannot be added: %s tried to scale up", h.Subject, who)
		if g := h.fact("group"); g != "" {
			d += " node group " + g
			d += h.wrapped(" (", "plan", ")")
		}
		d += fmt.Sprintf(" and the cloud provider refused it (%s)", quote(h.fact("message"), 200))
		d += h.clause(": ", "refusal")
		d += h.wrapped(" (", "quota", ")")
		d += "; the group is backed off and retried, so the pods stay unschedulable"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch h.fact("code") {
		case "VcpuLimitExceeded", "InstanceLimitExceeded", "QUOTA_EXCEEDED", "QuotaExceeded":
			r.high("Request a service quota increase for the instance family (aws service-quotas request-service-quota-increase; the cloud console's quotas page), or free quota: scale down or remove what else uses it")
		case "InsufficientInstanceCapacity", "ZONE_RESOURCE_POOL_EXHAUSTED", "SkuNotAvailable":
			r.high("Let the node group use other instance types or zones (a mixed-instances group, a Karpenter NodePool with several types), or use a capacity reservation")
		default:
			r.high("Fix what the cloud refuses in the scale-up (%s) and let the autoscaler retry", truncate(h.fact("message"), 120))
		}
		if t := h.Trigger; t != nil {
			r.med("Review %s (%s): it uses the capacity the scale-up needs", t.Subject, truncate(t.fact("description"), 100))
		}
		r.low("Alert on FailedScaleUp events and on cluster_autoscaler_failed_scale_ups_total, and on service quota usage above 80%%")
	},
}

var (
	// nodeGroupRE reads the group a scale-up names ("[{eks-gpu-… 4->10
	// (max: 16)}]", "node group eks-…").
	nodeGroupRE = regexp.MustCompile(`\[\{([A-Za-z0-9][\w.-]+) (\d+->\d+(?: \(max: \d+\))?)`)
	// capacityChangeRE is a change that takes or limits capacity in the
	// account or the cluster: a node group or pool, a fleet, instances, a
	// quota.
	capacityChangeRE = regexp.MustCompile(`(?i)node ?group|node ?pool|\bfleet\b|instance type|\d+ x [a-z]+\d|\bquota\b|auto ?scaling group|\basg\b|capacity reservation|karpenter|\bmachine ?set\b`)
	// cloudRefusalRE is a cloud's refusal of instances in an autoscaler's
	// or a provisioner's message.
	quotaRowRE   = regexp.MustCompile(`^([A-Za-z][^\t]*?[A-Za-z)])(?:\t|\s{2,}|\s+)(\d+(?:\.\d+)?)$`)
	quotaNameRE  = regexp.MustCompile(`"QuotaName":\s*"([^"]+)"`)
	quotaValueRE = regexp.MustCompile(`"Value":\s*([\d.]+)`)
	// cloudRefusalTextRE is the cloud's refusal as its own records or an
	// autoscaler's log say it in words: EC2's launch failure ("We
	// currently do not have sufficient c6i.4xlarge capacity in the
	// Availability Zone you requested (eu-west-1a)"), GCE's ("does not
	// have enough resources available to fulfill the request"), Azure's
	// AllocationFailed, or a code.
	cloudRefusalTextRE = regexp.MustCompile(`(?i)do not have sufficient \S+ capacity|not have enough resources available|AllocationFailed|` + cloudRefusalRE.String()[4:])
	// ec2CapacityRE reads the type and the zone of EC2's capacity refusal.
	ec2CapacityRE  = regexp.MustCompile(`(?i)do not have sufficient (\S+) capacity in the availability zone you requested \(([\w-]+)\)`)
	cloudRefusalRE = regexp.MustCompile(`(?i)VcpuLimitExceeded|InstanceLimitExceeded|InsufficientInstanceCapacity|InsufficientCapacity|ZONE_RESOURCE_POOL_EXHAUSTED|QUOTA_EXCEEDED|QuotaExceeded|quota exceeded|out of resources|Quota '[^']+' exceeded|SkuNotAvailable|vCPU limit`)
)

// scaleUpRefusedEvent claims the autoscaler's failed scale-ups
// (FailedScaleUp; the backoff after one) and a provisioner's failed
// launches whose message names a cloud refusal.
func scaleUpRefusedEvent(e *corev1.Event) (float64, bool) {
	switch {
	case e.Reason == "FailedScaleUp":
		return 0.92, true
	case e.Reason == "NotTriggerScaleUp" && strings.Contains(e.Message, "backoff after failed scale-up"):
		return 0.8, true
	case e.Type == corev1.EventTypeWarning && e.Reason != "FailedScheduling" && matchLine(cloudRefusalRE, e.Message) &&
		regexp.MustCompile(`(?i)launch|nodeclaim|scale.?up|creating instance`).MatchString(e.Message):
		return 0.85, true
	}
	return 0, false
}

// scaleUpRefusal names the cloud's refusal in a message and says it in
// words.
func scaleUpRefusal(msg string) (code, words string) {
	m := strings.ToLower(msg)
	if c := findSubmatch(ec2CapacityRE, msg); c != nil {
		return "InsufficientInstanceCapacity", fmt.Sprintf("EC2 has insufficient %s capacity in the availability zone %s (InsufficientInstanceCapacity): the zone has no instance of that type to give the group", c[1], c[2])
	}
	switch {
	case strings.Contains(m, "vcpulimitexceeded") || strings.Contains(m, "vcpu limit"):
		return "VcpuLimitExceeded", "EC2 VcpuLimitExceeded — the account's vCPU service quota for the instance family is used up, so no instance of it can be launched"
	case strings.Contains(m, "instancelimitexceeded"):
		return "InstanceLimitExceeded", "EC2 InstanceLimitExceeded — the account's instance quota for the type is used up"
	case strings.Contains(m, "insufficientinstancecapacity") || strings.Contains(m, "insufficientcapacity"):
		return "InsufficientInstanceCapacity", "the cloud has no capacity of that instance type in the zones asked (InsufficientInstanceCapacity)"
	case strings.Contains(m, "allocationfailed"):
		return "SkuNotAvailable", "the region or zone has insufficient capacity for the VM size (AllocationFailed)"
	case strings.Contains(m, "do not have sufficient") && strings.Contains(m, "capacity"):
		return "InsufficientInstanceCapacity", "the cloud has insufficient capacity of that instance type in the zones asked (InsufficientInstanceCapacity)"
	case strings.Contains(m, "zone_resource_pool_exhausted") || strings.Contains(m, "out of resources") || strings.Contains(m, "not have enough resources available"):
		return "ZONE_RESOURCE_POOL_EXHAUSTED", "the zone has no capacity of that machine type (ZONE_RESOURCE_POOL_EXHAUSTED)"
	case strings.Contains(m, "quota_exceeded") || strings.Contains(m, "quotaexceeded") || strings.Contains(m, "quota exceeded") || regexp.MustCompile(`quota '[^']+' exceeded`).MatchString(m):
		return "QUOTA_EXCEEDED", "a cloud quota of the project or account is used up"
	case strings.Contains(m, "skunotavailable"):
		return "SkuNotAvailable", "the VM size is not available in the region or zone (SkuNotAvailable)"
	}
	return "", ""
}

// cloudQuotaSaid is what a cloud CLI's quota output says ("aws
// service-quotas get-service-quota": the quota's name and value), "" when
// none was handed over.
func cloudQuotaSaid(ev *Gathered) string {
	for _, c := range ev.Commands {
		cmd := strings.ToLower(c.Command)
		if !strings.Contains(cmd, "service-quota") && !strings.Contains(cmd, "quotas") {
			continue
		}
		for _, l := range c.Lines {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "}") {
				continue
			}
			// --output text: the name, then the value, tab-separated.
			if m := findSubmatch(quotaRowRE, l); m != nil {
				return fmt.Sprintf("quota %q is %s", strings.TrimSpace(m[1]), strings.TrimSuffix(m[2], ".0"))
			}
		}
		text := strings.Join(c.Lines, "\n")
		if m := findSubmatch(quotaNameRE, text); m != nil {
			if v := findSubmatch(quotaValueRE, text); v != nil {
				return fmt.Sprintf("quota %q is %s", m[1], strings.TrimSuffix(v[1], ".0"))
			}
		}
	}
	return ""
}

// scaleUpPlan reads the group and the sizes a TriggeredScaleUp event on
// the object names ("[{eks-gpu-… 4->10 (max: 16)}]").
func scaleUpPlan(events []corev1.Event, object string) (group, plan string) {
	for i := range events {
		e := &events[i]
		io := e.InvolvedObject
		if e.Reason != "TriggeredScaleUp" || strings.ToLower(io.Kind)+" "+io.Namespace+"/"+io.Name != object {
			continue
		}
		if m := findSubmatch(nodeGroupRE, e.Message); m != nil {
			return m[1], strings.TrimSuffix(strings.Replace(m[2], " (max: ", ", max ", 1), ")")
		}
	}
	return "", ""
}
