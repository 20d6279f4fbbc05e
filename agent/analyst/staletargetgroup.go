package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A "no healthy targets" alert (an ALB or NLB target group's
// HealthyHostCount at 0, aws_applicationelb_healthy_host_count_minimum ==
// 0) about a target group that is left over: its owner, the Service a
// TargetGroupBinding ties it to (or the Service or Ingress its
// ingress.k8s.aws/stack or service.k8s.aws/stack tag names), was
// decommissioned on purpose (a change deleted its workload) or has no
// workload any more, and the group has no targets registered
// (describe-target-health lists none). The live service behind the same
// load balancer is healthy. The answer is a stale alert: which target
// group, whose it was, the change that removed it, and the cleanup left to
// do (the binding, the Service and Ingress, the alert), not an outage.
// The group is read from the alert's TargetGroup label (CloudWatch's
// dimension as exported, targetgroup/NAME/ID, or a full ARN) or its
// description; its owner from the commands handed over (kubectl get
// targetgroupbindings, its YAML's serviceRef, aws elbv2 describe-tags);
// its targets from aws elbv2 describe-target-health and the CloudWatch
// HealthyHostCount series of each TargetGroup.

var (
	// noTargetsAlertRE is an alert about a target group without healthy
	// targets.
	noTargetsAlertRE = regexp.MustCompile(`(?i)no ?healthy ?(?:targets?|hosts?|backends?|members?)|healthy_?host_?count|unhealthy_?host|target ?group|backend ?(?:health|unhealthy)`)
	// targetGroupRE is a target group's name in an ARN, a CloudWatch
	// dimension (targetgroup/NAME/ID) or words ("target group NAME").
	targetGroupRE = regexp.MustCompile(`(?i)targetgroup/([\w-]+)(?:/[0-9a-f]+)?|target[ -]?group:? ([a-z0-9][\w-]*-[\w-]*)`)
	// removalChangeRE is a change that takes a workload away on purpose.
	removalChangeRE = regexp.MustCompile(`(?i)\b(?:decommission\w*|delet(?:e|ed|es|ing)|remov(?:e|ed|es|ing)|retir(?:e|ed|es|ing)|sunset\w*|tear(?:s|ing)? down|torn down|scal(?:e|ed) (?:it )?(?:down )?to (?:0|zero)|uninstall\w*)\b`)
	// stackTagRE is the AWS Load Balancer Controller's tag naming the
	// Service or Ingress a target group belongs to ("namespace/name").
	stackTagRE = regexp.MustCompile(`(?i)(?:ingress|service)\.k8s\.aws/stack"?\s*[,:=]?\s*(?:"Value"\s*:\s*)?"?([\w.-]+)/([\w.-]+)"?`)
	// serviceRefRE is a TargetGroupBinding spec's serviceRef name.
	serviceRefNameRE = regexp.MustCompile(`^\s*name:\s*"?([\w.-]+)"?\s*$`)
	healthStateRE    = regexp.MustCompile(`(?i)\b(healthy|unhealthy|initial|draining|unused|unavailable)\b`)
)

// leftoverGroup is what the evidence says of one target group.
type leftoverGroup struct {
	name, owner, ownedBy string // ownedBy: where the owner was read
	targetsRead          bool   // describe-target-health was handed over
	targets, healthy     int
	metricZero           string // the HealthyHostCount reading at zero
}

// alertTargetGroup names the target group a no-healthy-targets alert is
// about.
func alertTargetGroup(a evidence.Alert) string {
	text := a.Name + " " + a.Annotations["summary"] + " " + a.Annotations["description"] + " " + a.Annotations["message"]
	for k, v := range a.Labels {
		if strings.Contains(strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k)), "targetgroup") {
			if m := findSubmatch(targetGroupRE, "targetgroup/"+strings.TrimPrefix(v[strings.LastIndex(v, ":")+1:], "targetgroup/")); m != nil {
				return m[1]
			}
		}
		text += " " + v
	}
	if !matchLine(noTargetsAlertRE, text) {
		return ""
	}
	if m := findSubmatch(targetGroupRE, text); m != nil {
		return orWord(m[1], m[2])
	}
	return ""
}

// readTargetGroupOwners reads which Service or Ingress owns each target
// group from the commands handed over: a TargetGroupBinding table (NAME
// ... SERVICE-NAME), a TargetGroupBinding's YAML (targetGroupARN and
// serviceRef.name), the controller's stack tag in describe-tags.
func readTargetGroupOwners(cmds []evidence.CommandOutput) map[string][2]string {
	out := map[string][2]string{}
	for _, c := range cmds {
		cmd := strings.ToLower(c.Command)
		nameCol, svcCol := -1, -1
		for _, l := range c.Lines {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			if nameCol < 0 {
				for i, h := range f {
					switch strings.ToUpper(h) {
					case "NAME":
						nameCol = i
					case "SERVICE-NAME", "SERVICE", "SERVICENAME":
						svcCol = i
					}
				}
				if nameCol < 0 || svcCol < 0 || !strings.Contains(cmd, "targetgroupbinding") && !strings.Contains(strings.ToUpper(l), "TARGET-TYPE") {
					nameCol, svcCol = -1, -1
				}
				continue
			}
			if len(f) > nameCol && len(f) > svcCol {
				out[strings.ToLower(f[nameCol])] = [2]string{f[svcCol], "TargetGroupBinding " + f[nameCol] + " → Service " + f[svcCol]}
			}
		}
		// YAML of TargetGroupBindings: a group's ARN and its serviceRef.
		if strings.Contains(cmd, "targetgroupbinding") {
			var tg, svc string
			inRef := false
			flush := func() {
				if tg != "" && svc != "" {
					out[strings.ToLower(tg)] = [2]string{svc, "TargetGroupBinding of " + tg + ": serviceRef " + svc}
				}
				tg, svc = "", ""
			}
			for _, l := range c.Lines {
				t := strings.TrimSpace(l)
				if strings.HasPrefix(t, "- apiVersion") || t == "---" || strings.HasPrefix(l, "apiVersion:") {
					flush()
				}
				if strings.Contains(t, "targetGroupARN") {
					if m := findSubmatch(targetGroupRE, t); m != nil {
						tg = m[1]
					}
				}
				if strings.HasPrefix(t, "serviceRef:") {
					inRef = true
					continue
				}
				if inRef {
					if m := findSubmatch(serviceRefNameRE, l); m != nil {
						svc, inRef = m[1], false
					} else if !strings.HasPrefix(t, "port") {
						inRef = false
					}
				}
			}
			flush()
		}
		// describe-tags of a target group: the controller's stack tag.
		if strings.Contains(cmd, "describe-tags") {
			if m := findSubmatch(targetGroupRE, c.Command); m != nil && m[1] != "" {
				if s := findSubmatch(stackTagRE, strings.Join(c.Lines, " ")); s != nil {
					out[strings.ToLower(m[1])] = [2]string{s[2], "tag " + strings.TrimSpace(s[0])}
				}
			}
		}
	}
	return out
}

// readTargetHealth reads describe-target-health of a target group: how
// many targets it lists and how many are healthy.
func readTargetHealth(cmds []evidence.CommandOutput, group string) (targets, healthy int, read bool) {
	for _, c := range cmds {
		if !strings.Contains(strings.ToLower(c.Command), "describe-target-health") || !strings.Contains(strings.ToLower(c.Command), strings.ToLower(group)) {
			continue
		}
		read = true
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if strings.Contains(t, `"State"`) || strings.Contains(strings.ToLower(t), "state:") || !strings.ContainsAny(t, `{}[]":`) {
				if m := findSubmatch(healthStateRE, t); m != nil {
					targets++
					if strings.EqualFold(m[1], "healthy") {
						healthy++
					}
				}
			}
		}
	}
	return targets, healthy, read
}

// healthyHostZero reports the group's HealthyHostCount at zero now, with
// the time it fell, from CloudWatch series labelled by TargetGroup.
func healthyHostZero(sets []MetricSet, group string) string {
	for _, set := range sets {
		if !strings.HasSuffix(strings.ToLower(set.Name), "healthyhostcount") || strings.Contains(strings.ToLower(set.Name), "unhealthy") {
			continue
		}
		for _, s := range set.Series {
			tg := ""
			for k, v := range s.Labels {
				if strings.EqualFold(k, "TargetGroup") || strings.EqualFold(k, "target_group") || strings.EqualFold(k, "dimension_TargetGroup") {
					tg = v
				}
			}
			if m := findSubmatch(targetGroupRE, tg); m == nil || !strings.EqualFold(m[1], group) || len(s.Points) == 0 {
				continue
			}
			pts := append([]evidence.Point(nil), s.Points...)
			sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			if pts[len(pts)-1].V != 0 {
				continue
			}
			var fell time.Time
			before := 0.0
			for i := len(pts) - 1; i >= 0 && pts[i].V == 0; i-- {
				fell = pts[i].T
				if i > 0 {
					before = pts[i-1].V
				}
			}
			if before > 0 {
				return fmt.Sprintf("CloudWatch HealthyHostCount of TargetGroup %s fell from %.0f to 0 at %s and stays 0", group, before, hm(fell))
			}
			return fmt.Sprintf("CloudWatch HealthyHostCount of TargetGroup %s is 0", group)
		}
	}
	return ""
}

// hasWorkload reports whether a Deployment or StatefulSet of the name was
// gathered.
func hasWorkload(k *K8sEvidence, name string) bool {
	for _, d := range k.Deployments {
		if strings.EqualFold(d.Name, name) {
			return true
		}
	}
	for _, s := range k.StatefulSets {
		if strings.EqualFold(s.Name, name) {
			return true
		}
	}
	return false
}

// removalOf finds the change that took the owner away on purpose.
func removalOf(changes []evidence.Change, owner string) *evidence.Change {
	for i := range changes {
		c := &changes[i]
		if (strings.EqualFold(c.Service, owner) || strings.Contains(strings.ToLower(c.Description), strings.ToLower(owner))) && matchLine(removalChangeRE, c.Description) {
			return c
		}
	}
	return nil
}

// answerStaleTargetGroup answers a no-healthy-targets alert about a
// target group left over by a decommissioned owner: a stale alert, not an
// outage of the live service. It leaves the result as it is unless the
// alert names a group, the group's owner is read, the group has no
// targets (none registered, or HealthyHostCount at 0), and its owner is
// gone on purpose (a change removed it) or, being another service than
// the one asked about, has no workload.
func (g *gatherer) answerStaleTargetGroup(res *finding.Result, alerts []evidence.Alert) bool {
	if res == nil || len(g.commands) == 0 {
		return false
	}
	owners := readTargetGroupOwners(g.commands)
	if len(owners) == 0 {
		return false
	}
	subjects := g.sc.Subjects()
	for _, a := range alerts {
		name := alertTargetGroup(a)
		if name == "" {
			continue
		}
		own, ok := owners[strings.ToLower(name)]
		if !ok {
			continue
		}
		sg := leftoverGroup{name: name, owner: own[0], ownedBy: own[1]}
		sg.targets, sg.healthy, sg.targetsRead = readTargetHealth(g.commands, name)
		sg.metricZero = healthyHostZero(g.metricSets, name)
		if !(sg.targetsRead && sg.targets == 0) && sg.metricZero == "" {
			continue
		}
		removal := removalOf(append(append([]evidence.Change(nil), g.changes...), g.earlier...), sg.owner)
		asked := false
		for _, s := range subjects {
			asked = asked || strings.EqualFold(s, sg.owner)
		}
		// No workload of the owner counts only where workloads were listed.
		gone := len(g.k8s.Deployments)+len(g.k8s.StatefulSets) > 0 && !hasWorkload(&g.k8s, sg.owner)
		if removal == nil && (asked || !gone) {
			continue
		}
		if removal == nil && !sg.targetsRead {
			continue
		}
		g.writeStaleTargetGroup(res, a, sg, removal, owners, subjects)
		return true
	}
	return false
}

func (g *gatherer) writeStaleTargetGroup(res *finding.Result, a evidence.Alert, sg leftoverGroup, removal *evidence.Change, owners map[string][2]string, subjects []string) {
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	alertWord := "the " + orWord(a.Name, "no-healthy-targets") + " alert"
	targets := "has no healthy targets"
	if sg.targetsRead && sg.targets == 0 {
		targets = "has no targets registered at all"
	}
	expl := fmt.Sprintf("No outage: %s is about a leftover target group, %s, which belongs to %s (%s), not to the live service; the group %s", alertWord, sg.name, sg.owner, sg.ownedBy, targets)
	if removal != nil {
		expl += fmt.Sprintf(" because %s was decommissioned on purpose: the %s of %s at %s (%q) removed its workload", sg.owner, removal.Kind, orWord(removal.Service, sg.owner), hm(removal.Timestamp), clip(removal.Description, 200))
	} else {
		expl += fmt.Sprintf(" because %s has no workload left behind it", sg.owner)
	}
	expl += ", and the target group, its TargetGroupBinding and the alert on it were left behind. A stale alert"
	ev := []string{fmt.Sprintf("alert %s on TargetGroup %s", orWord(a.Name, "no healthy targets"), sg.name), sg.ownedBy}
	if sg.targetsRead {
		ev = append(ev, fmt.Sprintf("aws elbv2 describe-target-health of %s: %d targets (%d healthy)", sg.name, sg.targets, sg.healthy))
	}
	if sg.metricZero != "" {
		ev = append(ev, sg.metricZero)
	}
	if removal != nil {
		ev = append(ev, fmt.Sprintf("%s of %s at %s: %s", removal.Kind, orWord(removal.Service, sg.owner), rfc(removal.Timestamp), removal.Description))
	}
	if !hasWorkload(&g.k8s, sg.owner) {
		ev = append(ev, fmt.Sprintf("no Deployment or StatefulSet %s", sg.owner))
	}
	// The live service's own group: healthy targets.
	live := ""
	for tg, o := range owners {
		for _, s := range subjects {
			if !strings.EqualFold(o[0], s) || strings.EqualFold(tg, sg.name) {
				continue
			}
			if n, h, ok := readTargetHealth(g.commands, tg); ok && n > 0 {
				live = fmt.Sprintf("%s's own target group %s has %d of %d targets healthy", s, tg, h, n)
				ev = append(ev, live)
			}
		}
	}
	if live != "" {
		expl += "; " + live
	}
	expl += "."
	nearby := strings.TrimSpace(res.RootCause.Description)
	if nearby != "" && res.Verdict != finding.VerdictHealthy {
		expl += " Unrelated to the alert: " + clip(nearby, 300)
	}
	conf := 65.0
	if removal != nil && sg.targetsRead && sg.targets == 0 {
		conf = 80 // the binding, the empty group and the change that emptied it are read directly
	}
	res.Summary = expl
	res.RootCause.Description = expl
	res.RootCause.Confidence = conf
	res.RootCause.Evidence = ev
	res.Verdict = finding.VerdictHealthy
	res.AffectedSystems = []string{sg.owner, sg.name}
	var tl []finding.TimelineEvent
	if removal != nil {
		tl = append(tl, finding.TimelineEvent{Timestamp: rfc(removal.Timestamp), Event: fmt.Sprintf("%s decommissioned: %s", sg.owner, clip(removal.Description, 200))})
	}
	if !a.StartsAt.IsZero() {
		tl = append(tl, finding.TimelineEvent{Timestamp: rfc(a.StartsAt), Event: fmt.Sprintf("alert %s fires on the leftover target group %s", a.Name, sg.name)})
	}
	res.Timeline = tl
	res.Recommendations = append([]finding.Recommendation{
		{Priority: finding.PriorityMedium, Action: fmt.Sprintf("Finish decommissioning %s: delete its Service and Ingress (or the TargetGroupBinding %s) so the load balancer controller removes the target group, or silence %s on that target group until then", sg.owner, sg.name, orWord(a.Name, "the alert"))},
		{Priority: finding.PriorityLow, Action: "Alert on a target group with no healthy targets only while it has registered targets or receives requests (HealthyHostCount == 0 and RequestCount > 0), so a group left empty on purpose does not page"},
	}, res.Recommendations...)
	res.Normalize()
}
