package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A cloud load balancer's target group whose targets fail its health
// check. An ALB or NLB (and a GCP backend service, an Azure backend pool)
// marks a target unhealthy when its health check does not get the answer
// it expects: a status code the matcher does not accept (AWS:
// Target.ResponseCodeMismatch, "Health checks failed with these codes:
// [404]" for a health path the targets do not serve), no answer in time
// (Target.Timeout: a security group or network ACL dropping the checks
// from the load balancer's subnets, or a port nobody listens on), a
// refused or reset connection (Target.FailedHealthChecks). The answer is
// what the target group's own health says: how many of its targets are
// unhealthy and which (draining and initial targets are neither healthy
// nor unhealthy: a deregistration or a registration in progress), the
// reason the load balancer gives, the zone they share, the check's path
// and port, and the change that set them or the network rule in front of
// them. It is read from `aws elbv2 describe-target-health` (JSON, table
// and text output), `describe-target-groups`, an instance listing with
// zones (describe-instances), curl of the health path, and UnHealthyHostCount
// per zone from CloudWatch.

// KindTargetsUnhealthy is a target group whose targets fail its health
// check.
const KindTargetsUnhealthy Kind = "targets_unhealthy"

var targetsUnhealthy = &mechanism{
	kind:   KindTargetsUnhealthy,
	class:  classCause,
	label:  "load balancer targets failing the target group's health check",
	detect: detectTargetsUnhealthy,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		if strings.Contains(t, strings.ToLower(h.Subject)) {
			return true
		}
		if h.fact("reason_class") == "code" {
			return matchLine(healthCheckChangeRE, t)
		}
		return matchLine(healthCheckChangeRE, t) || matchLine(networkRuleChangeRE, t)
	},
	strictTriggers: true,
	describe:       describeTargetsUnhealthy,
	recommend:      recommendTargetsUnhealthy,
}

var (
	// targetStateRE is a target's health state as describe-target-health
	// prints it.
	targetStateRE = regexp.MustCompile(`^(healthy|unhealthy|initial|draining|unused|unavailable|unhealthy\.draining)$`)
	// targetReasonRE is the reason code the load balancer gives.
	targetReasonRE = regexp.MustCompile(`^(?:Target|Elb)\.[A-Za-z]+$`)
	// targetIDRE is a target's id: an instance, an IP address, a Lambda
	// function's ARN.
	targetIDRE = regexp.MustCompile(`^(?:i-[0-9a-f]{8,17}|\d{1,3}(?:\.\d{1,3}){3}|arn:aws:lambda:\S+)$`)
	// tgJSONFieldRE is one `"Key": "value"` field of a JSON output.
	tgJSONFieldRE = regexp.MustCompile(`"(\w+)"\s*:\s*"?([^",]*)"?,?\s*$`)
	// tgZoneRE is an availability zone (eu-west-1c, us-central1-a, or Azure's
	// numbered zones are not read).
	tgZoneRE = regexp.MustCompile(`^[a-z]{2}-[a-z]+-?\d[a-z]$|^[a-z]+-[a-z]+\d-[a-z]$`)
	// tgNameRE is a target group's name in a command or output: its ARN,
	// or --names.
	tgNameRE = regexp.MustCompile(`targetgroup/([\w-]+)|--names?\s+"?([\w-]+)`)
	// healthCheckChangeRE is a change that sets a health check.
	healthCheckChangeRE = regexp.MustCompile(`(?i)health[_ -]?check|health_path|healthcheckpath|matcher|target[_ -]?group`)
	// networkRuleChangeRE is a change to a network rule in front of
	// targets.
	networkRuleChangeRE = regexp.MustCompile(`(?i)network_acl|\bnacl\b|network acl|security[_ -]?group|\bsg-[0-9a-f]+|firewall|ingress rule|cidr`)
	// curlCodeRE is the status code curl printed with -w '%{http_code}'.
	curlCodeRE = regexp.MustCompile(`^\s*(\d{3})\s*$|^HTTP/[\d.]+ (\d{3})`)
)

// lbTarget is one target of a target group and its health.
type lbTarget struct {
	id, state, reason, description, zone string
}

// targetGroupHealth is what the evidence says of one target group.
type targetGroupHealth struct {
	name                string
	targets             []lbTarget
	path, port, matcher string
	source              string
}

// readTargetHealthOutputs reads every describe-target-health output into
// target groups with their targets, in the order they were handed over.
func readTargetHealthOutputs(cmds []evidence.CommandOutput) []*targetGroupHealth {
	var groups []*targetGroupHealth
	byName := map[string]*targetGroupHealth{}
	group := func(name string) *targetGroupHealth {
		g := byName[strings.ToLower(name)]
		if g == nil {
			g = &targetGroupHealth{name: name}
			byName[strings.ToLower(name)] = g
			groups = append(groups, g)
		}
		return g
	}
	for _, c := range cmds {
		cmd := strings.ToLower(c.Command)
		name := ""
		if m := findSubmatch(tgNameRE, c.Command); m != nil {
			name = orWord(m[1], m[2])
		}
		switch {
		case strings.Contains(cmd, "describe-target-health") && name != "":
			if strings.Contains(cmd, "--targets") {
				continue // one target asked again: its row is in the listing
			}
			g := group(name)
			if g.source == "" {
				g.source = c.Command
			}
			for _, t := range parseTargetHealth(c.Lines) {
				if !slices.ContainsFunc(g.targets, func(x lbTarget) bool { return x.id == t.id }) {
					g.targets = append(g.targets, t)
				}
			}
		case strings.Contains(cmd, "describe-target-groups"):
			readHealthCheckSettings(c.Lines, name, group)
		}
	}
	zones := readTargetZones(cmds)
	for _, g := range groups {
		for i := range g.targets {
			if g.targets[i].zone == "" {
				g.targets[i].zone = zones[g.targets[i].id]
			}
		}
	}
	return groups
}

// parseTargetHealth reads the targets of one describe-target-health
// output: JSON (TargetHealthDescriptions), a table (--output table, with
// or without --query columns) or text (TARGET and TARGETHEALTH rows).
func parseTargetHealth(lines []string) []lbTarget {
	var out []lbTarget
	var cur *lbTarget
	flush := func() {
		if cur != nil && cur.id != "" && cur.state != "" {
			out = append(out, *cur)
		}
		cur = nil
	}
	lastID := ""
	for _, l := range lines {
		if m := findSubmatch(tgJSONFieldRE, strings.TrimSpace(l)); m != nil && strings.HasPrefix(strings.TrimSpace(l), `"`) {
			switch m[1] {
			case "Id":
				flush()
				cur = &lbTarget{id: m[2]}
			case "AvailabilityZone":
				if cur != nil {
					cur.zone = m[2]
				}
			case "State":
				if cur != nil {
					cur.state = strings.ToLower(m[2])
				}
			case "Reason":
				if cur != nil {
					cur.reason = m[2]
				}
			case "Description":
				if cur != nil {
					cur.description = m[2]
				}
			}
			continue
		}
		// Table and text rows.
		var cells []string
		if strings.Contains(l, "|") {
			for _, x := range strings.Split(l, "|") {
				cells = append(cells, strings.TrimSpace(x))
			}
		} else {
			cells = strings.Split(l, "\t")
			if len(cells) == 1 {
				cells = strings.Fields(l)
			}
		}
		t := lbTarget{}
		for _, x := range cells {
			switch {
			case matchLine(targetIDRE, x) && t.id == "":
				t.id = x
			case matchLine(targetStateRE, strings.ToLower(x)) && t.state == "":
				t.state = strings.ToLower(x)
			case matchLine(targetReasonRE, x):
				t.reason = x
			case matchLine(tgZoneRE, x):
				t.zone = x
			case len(x) > 12 && strings.Contains(x, " ") && t.description == "":
				t.description = x
			}
		}
		if len(cells) > 0 && strings.EqualFold(cells[0], "TARGET") && t.id != "" {
			lastID = t.id
			continue
		}
		if t.state == "" {
			continue
		}
		if t.id == "" {
			t.id = lastID
		}
		if t.id != "" {
			flush()
			out = append(out, t)
		}
	}
	flush()
	return out
}

// readHealthCheckSettings reads a target group's health check path, port
// and matcher from describe-target-groups (JSON or text).
func readHealthCheckSettings(lines []string, name string, group func(string) *targetGroupHealth) {
	var g *targetGroupHealth
	if name != "" {
		g = group(name)
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		m := findSubmatch(tgJSONFieldRE, t)
		if m == nil {
			continue
		}
		switch m[1] {
		case "TargetGroupName":
			g = group(m[2])
		case "HealthCheckPath":
			if g != nil {
				g.path = m[2]
			}
		case "HealthCheckPort":
			if g != nil {
				g.port = m[2]
			}
		case "HttpCode", "GrpcCode":
			if g != nil {
				g.matcher = m[2]
			}
		}
	}
}

// readTargetZones reads each instance's availability zone from instance
// listings (describe-instances as a table, text or JSON).
func readTargetZones(cmds []evidence.CommandOutput) map[string]string {
	zones := map[string]string{}
	for _, c := range cmds {
		if !strings.Contains(strings.ToLower(c.Command), "describe-instances") {
			continue
		}
		lastID := ""
		for _, l := range c.Lines {
			if m := findSubmatch(tgJSONFieldRE, strings.TrimSpace(l)); m != nil && strings.HasPrefix(strings.TrimSpace(l), `"`) {
				switch m[1] {
				case "InstanceId":
					lastID = m[2]
					if z := zones["\x00"+m[2]]; z != "" {
						zones[m[2]] = z
					}
				case "AvailabilityZone":
					if lastID != "" {
						zones[lastID] = m[2]
					}
				}
				continue
			}
			id, zone := "", ""
			for _, x := range strings.FieldsFunc(l, func(r rune) bool { return r == '|' || r == '\t' || r == ' ' }) {
				switch {
				case matchLine(targetIDRE, x) && strings.HasPrefix(x, "i-") && id == "":
					id = x
				case matchLine(tgZoneRE, x):
					zone = x
				}
			}
			if id != "" && zone != "" {
				zones[id] = zone
			}
		}
	}
	return zones
}

// curlOfPath is what a curl of a path printed: its status code.
func curlOfPath(cmds []evidence.CommandOutput, path string) (code string, cmd string) {
	if path == "" {
		return "", ""
	}
	for _, c := range cmds {
		run := c.Run
		if run == "" {
			run = c.Command
		}
		if !strings.Contains(run, "curl") {
			continue
		}
		for _, w := range strings.Fields(run) {
			w = strings.Trim(w, `'"`)
			i := strings.Index(w, "://")
			if i < 0 {
				continue
			}
			p := w[i+3:]
			if j := strings.Index(p, "/"); j >= 0 {
				p = p[j:]
			} else {
				p = "/"
			}
			if q := strings.IndexAny(p, "?#"); q >= 0 {
				p = p[:q]
			}
			if p != path {
				continue
			}
			for _, l := range c.Lines {
				if m := findSubmatch(curlCodeRE, l); m != nil {
					return orWord(m[1], m[2]), run
				}
			}
		}
	}
	return "", ""
}

// reasonClass sorts the load balancer's reason: a status code it did not
// accept, no answer in time, or another.
func reasonClass(t lbTarget) string {
	r := strings.ToLower(t.reason + " " + t.description)
	switch {
	case strings.Contains(r, "responsecodemismatch") || strings.Contains(r, "failed with these codes"):
		return "code"
	case strings.Contains(r, "timeout") || strings.Contains(r, "timed out"):
		return "timeout"
	case strings.Contains(r, "failedhealthchecks") || strings.Contains(r, "refused") || strings.Contains(r, "reset"):
		return "refused"
	}
	return "other"
}

// detectTargetsUnhealthy finds target groups with unhealthy targets in
// the describe-target-health outputs handed over.
func detectTargetsUnhealthy(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for _, g := range readTargetHealthOutputs(ev.Commands) {
		var unhealthy, draining, initial, healthy []lbTarget
		for _, t := range g.targets {
			switch t.state {
			case "unhealthy":
				unhealthy = append(unhealthy, t)
			case "draining", "unhealthy.draining":
				draining = append(draining, t)
			case "initial":
				initial = append(initial, t)
			case "healthy":
				healthy = append(healthy, t)
			}
		}
		if len(unhealthy) == 0 {
			continue
		}
		// The commonest reason of the unhealthy targets.
		reasons := map[string]int{}
		for _, t := range unhealthy {
			reasons[strings.TrimSpace(t.reason+"|"+t.description)]++
		}
		top := unhealthy[0]
		for _, t := range unhealthy {
			if reasons[t.reason+"|"+t.description] > reasons[top.reason+"|"+top.description] {
				top = t
			}
		}
		// A failed or refused check (an NLB's checks of a node port,
		// Target.FailedHealthChecks) has too many causes to name from the
		// target health alone; a status code or a timeout says which.
		if c := reasonClass(top); c != "code" && c != "timeout" {
			continue
		}
		ids := make([]string, 0, len(unhealthy))
		uz := map[string]int{}
		for _, t := range unhealthy {
			ids = append(ids, t.id+map[bool]string{true: " (" + t.zone + ")", false: ""}[t.zone != ""])
			if t.zone != "" {
				uz[t.zone]++
			}
		}
		onset, rose := unhealthyOnset(ev.Metrics, g.name)
		if onset.IsZero() {
			onset = ev.Window.Start
		}
		f := Finding{Kind: KindTargetsUnhealthy, Subject: g.name, Object: "target group " + g.name, Namespace: ev.Scope.Namespace,
			Time: onset, Severity: SevCritical, Weight: 0.9, Source: "aws elbv2 describe-target-health"}
		all := len(g.targets)
		f.setFact("unhealthy", fmt.Sprint(len(unhealthy)))
		f.setFact("total", fmt.Sprint(all))
		f.setFact("ids", strings.Join(ids, ", "))
		f.setFact("reason", top.reason)
		f.setFact("reason_text", top.description)
		f.setFact("reason_class", reasonClass(top))
		f.setFact("healthy", fmt.Sprint(len(healthy)))
		var notCounted []string
		for _, t := range draining {
			notCounted = append(notCounted, t.id+" draining ("+orWord(t.reason, "deregistration in progress")+")")
		}
		for _, t := range initial {
			notCounted = append(notCounted, t.id+" initial ("+orWord(t.reason, "registration in progress")+")")
		}
		f.setFact("not_counted", strings.Join(notCounted, ", "))
		// One zone holding every unhealthy target, while the others' are
		// healthy, points at what differs in that zone (its subnet's
		// network ACL or route).
		if len(uz) == 1 && uz[unhealthy[0].zone] == len(unhealthy) {
			z := unhealthy[0].zone
			inZone := 0
			for _, t := range healthy {
				if t.zone == z {
					inZone++
				}
			}
			if inZone == 0 {
				f.setFact("zone", z)
			}
		}
		if g.path != "" {
			f.setFact("path", g.path)
			f.setFact("port", g.port)
			f.setFact("matcher", g.matcher)
			if code, run := curlOfPath(ev.Commands, g.path); code != "" {
				f.setFact("curl", fmt.Sprintf("%s answers %s", clip(run, 160), code))
			}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %d of %d targets unhealthy (%s: %s): %s", clip(g.source, 160), len(unhealthy), all,
			orWord(top.reason, "no reason given"), orWord(top.description, "-"), strings.Join(ids, ", ")))
		if rose != "" {
			f.Evidence = append(f.Evidence, rose)
		}
		if len(notCounted) > 0 {
			f.Evidence = append(f.Evidence, "not unhealthy: "+strings.Join(notCounted, ", "))
		}
		if g.path != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("describe-target-groups %s: HealthCheckPath %s, HealthCheckPort %s, matcher %s", g.name, g.path, orWord(g.port, "-"), orWord(g.matcher, "-")))
		}
		if c := f.fact("curl"); c != "" {
			f.Evidence = append(f.Evidence, c)
		}
		f.Summary = fmt.Sprintf("target group %s: %d of %d targets unhealthy (%s)", g.name, len(unhealthy), all, orWord(top.reason, top.description))
		out = append(out, f)
	}
	return out
}

// unhealthyOnset is when the group's UnHealthyHostCount rose from zero,
// from CloudWatch series labelled with the group (its TargetGroup
// dimension, per zone or not): the earliest rise of any.
func unhealthyOnset(sets []MetricSet, group string) (time.Time, string) {
	var at time.Time
	word := ""
	for _, set := range sets {
		if !strings.HasSuffix(strings.ToLower(set.Name), "unhealthyhostcount") {
			continue
		}
		for _, s := range set.Series {
			named := false
			for _, v := range s.Labels {
				named = named || strings.EqualFold(v, group) || strings.Contains(strings.ToLower(v), "targetgroup/"+strings.ToLower(group)+"/")
			}
			if !named || len(s.Points) < 2 {
				continue
			}
			pts := slices.Clone(s.Points)
			slices.SortFunc(pts, func(a, b evidence.Point) int { return a.T.Compare(b.T) })
			for i := 1; i < len(pts); i++ {
				if pts[i-1].V == 0 && pts[i].V > 0 {
					if at.IsZero() || pts[i].T.Before(at) {
						at = pts[i].T
						word = fmt.Sprintf("CloudWatch UnHealthyHostCount of %s rose from 0 to %.0f at %s", group, pts[i].V, hm(pts[i].T))
					}
					break
				}
			}
		}
	}
	return at, word
}

func describeTargetsUnhealthy(h *Hypothesis, sc Scope) string {
	n, all := h.fact("unhealthy"), h.fact("total")
	d := fmt.Sprintf("%s of %s targets of target group %s are unhealthy: %s", n, all, h.Subject, h.fact("ids"))
	if z := h.fact("zone"); z != "" {
		d += fmt.Sprintf(", all in %s, where no target is healthy", z)
	}
	if nc := h.fact("not_counted"); nc != "" {
		d += fmt.Sprintf("; not unhealthy but out of rotation for now: %s (neither is a failing health check)", nc)
	}
	if hh := h.fact("healthy"); hh != "" && hh != "0" {
		d += fmt.Sprintf("; %s healthy", hh)
	}
	reason := h.fact("reason")
	if t := h.fact("reason_text"); t != "" {
		reason = strings.TrimSpace(reason + " (" + t + ")")
	}
	switch h.fact("reason_class") {
	case "code":
		d += fmt.Sprintf(". The load balancer's health check gets a status code its matcher does not accept, %s", reason)
		if p := h.fact("path"); p != "" {
			d += fmt.Sprintf(": the health check path is %s (matcher %s)", p, orWord(h.fact("matcher"), "200"))
			if c := h.fact("curl"); c != "" {
				d += ", and " + c
			}
			d += ", a path the targets do not serve, so they are marked unhealthy while the application itself may serve users"
		}
	case "timeout":
		d += fmt.Sprintf(". The health checks get no answer in time, %s: the load balancer's checks do not reach the targets' port (a network ACL or security group in front of them dropping them) or nothing answers there", reason)
	case "refused":
		d += fmt.Sprintf(". The health checks are refused or fail, %s: nothing accepts the check on the health check port", reason)
	default:
		if reason != "" {
			d += ". The load balancer's reason: " + reason
		}
	}
	if t := h.Trigger; t != nil {
		d += fmt.Sprintf("; set by the change of %s at %s (%s)", t.Subject, hm(t.Time), truncate(t.fact("description"), 200))
	}
	return d
}

func recommendTargetsUnhealthy(h *Hypothesis, sc Scope, r *recommender) {
	tg := h.Subject
	switch h.fact("reason_class") {
	case "code":
		r.high("Point the health check of %s at a path the targets serve (or serve %s in the application), or revert the change that set it; do not roll back the application for this", tg, orWord(h.fact("path"), "the checked path"))
	case "timeout":
		if z := h.fact("zone"); z != "" {
			r.high("Restore what lets the load balancer's health checks reach the targets in %s: the network ACL and security group rules of that zone's subnets must allow the load balancer's subnets on the target port", z)
		} else {
			r.high("Let the load balancer's health checks reach the targets of %s: its subnets must be allowed on the target port by the targets' security group and their subnets' network ACLs", tg)
		}
	default:
		r.high("Make the targets of %s answer the health check on its port and path, or correct the check", tg)
	}
	if t := h.Trigger; t != nil {
		r.high("Revert or fix %s (%s)", orWord(t.fact("revision"), t.Subject), truncate(t.fact("description"), 120))
	}
	r.med("Test the load balancer's health check settings (path, port, matcher) against the application's health endpoint in the pipeline that changes either")
	r.low("Alert on UnHealthyHostCount per availability zone, and on a target group with fewer than two healthy targets in a zone")
}
