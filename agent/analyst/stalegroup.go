package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KindStaleGroup is a consumer-lag alert on a consumer group nobody
// consumes with any more: the group has no active members, its committed
// offsets are frozen, so its lag grows with every message produced, while
// another group on the same topic (the one the consumer moved to) has
// members and is caught up. Nothing is stuck: the alert watches a retired
// group.
const KindStaleGroup Kind = "stale_group"

var (
	// kafka-consumer-groups.sh --describe, as Kafka prints it.
	noMembersRE   = regexp.MustCompile(`(?i)consumer group '([^']+)' has no active members`)
	groupHeaderRE = regexp.MustCompile(`(?i)^\s*GROUP\s+TOPIC\s+PARTITION\s+CURRENT-OFFSET\s+LOG-END-OFFSET\s+LAG\b`)
	// A consumer's own log line failing: an error level, an exception,
	// an authentication refused or the listener stopped.
	consumerFailRE = regexp.MustCompile(`(?i)\b(ERROR|FATAL|CRITICAL)\b|exception|failed authentication|authentication failed|not authorized|consumer stopped|stopped consuming`)
)

// groupWorkloadRuns reports whether a workload named as the group runs
// (a pod of it Running, crash-looping or Pending): a group whose namesake
// consumer is deployed yet holds no member is one whose consumer cannot
// join (or crashes before it does), not a retired one.
func groupWorkloadRuns(ev *Gathered, group string) bool {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if strings.EqualFold(WorkloadOfPod(p), group) && (p.Status.Phase == "Running" || p.Status.Phase == "Pending" || podRestarting(p)) {
			return true
		}
	}
	return false
}

// groupFailing reports whether a log gathered shows a consumer of group
// failing: a failing line that names the group as its own (the Java
// client's "groupId=NAME", librdkafka's and the Python clients' group.id
// or group_id, a structured "group" field). Such a group is not retired:
// its members are there and cannot consume.
func groupFailing(ev *Gathered, group string) bool {
	g := regexp.QuoteMeta(strings.ToLower(group))
	named := regexp.MustCompile(`(?i)\b(?:groupid|group\.id|group_id|consumer[ _-]?group|group)["']?\s*[=:]\s*["']?` + g + `(?:$|[^\w.-])`)
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if t.Incident == 0 {
				continue
			}
			for _, l := range t.Lines() {
				if matchLine(named, l) && matchLine(consumerFailRE, l) {
					return true
				}
			}
		}
	}
	return false
}

// podRestarting reports whether a pod's container waits to restart or
// ended in failure (CrashLoopBackOff, Error): a deployed consumer that
// cannot start.
func podRestarting(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil || c.State.Terminated != nil && c.State.Terminated.ExitCode != 0 {
			return true
		}
	}
	return false
}

var staleGroup = &mechanism{
	kind:   KindStaleGroup,
	class:  classCause,
	label:  "lag alert on a consumer group with no members (a retired group)",
	detect: detectStaleGroup,
	// Lag and backlog findings of the retired group are what it explains.
	related: func(h *Hypothesis, f *Finding) bool {
		g := strings.ToLower(h.fact("group"))
		return g != "" && (f.Kind == KindBacklog || strings.Contains(strings.ToLower(f.Summary+" "+f.fact("line")), g))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		if h.fact("group") == "" {
			return fmt.Sprintf("the lag alert of %s watches a consumer group with no members (a retired group)", h.Subject)
		}
		return fmt.Sprintf("the lag alert is stale: consumer group %s has no active members (retired), its committed offsets are frozen and its lag of %s on %s only grows with new messages; %s consumes the topic now with %s members and lag %s, so nothing is stuck",
			h.fact("group"), h.fact("lag"), h.fact("topic"), h.fact("successor"), h.fact("successor_members"), h.fact("successor_lag"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Delete the retired consumer group %s (kafka-consumer-groups.sh --delete --group %s) or exclude it from the lag alert; no action is needed for the consumers", h.fact("group"), h.fact("group"))
		r.med("Alert on lag only for groups with active members (or on the group the service is configured with), so a group rename retires its alert with it")
		r.low("When a consumer changes its group id, delete the old group once the new one has caught up")
	},
}

// groupState is one consumer group's lag and members over a topic, read
// from kafka-consumer-groups --describe.
type groupState struct {
	name, topic   string
	lag           int64
	members       map[string]bool
	noMembersSaid bool
}

// detectStaleGroup reads the described groups and reports a group with no
// active members and lag, when another group on the same topic has
// members and a lag under a hundredth of it.
func detectStaleGroup(ev *Gathered, found []Finding) []Finding {
	groups := map[string]*groupState{}
	var order []string
	for _, c := range ev.Commands {
		if !strings.Contains(c.Run+" "+c.Command, "consumer-groups") {
			continue
		}
		header := false
		for _, l := range c.Lines {
			if m := findSubmatch(noMembersRE, l); m != nil {
				g := groups[m[1]]
				if g == nil {
					g = &groupState{name: m[1], members: map[string]bool{}}
					groups[m[1]] = g
					order = append(order, m[1])
				}
				g.noMembersSaid = true
				continue
			}
			if matchLine(groupHeaderRE, l) {
				header = true
				continue
			}
			fs := strings.Fields(l)
			if !header || len(fs) < 7 {
				continue
			}
			lag, err := strconv.ParseInt(fs[5], 10, 64)
			if err != nil {
				continue
			}
			g := groups[fs[0]]
			if g == nil {
				g = &groupState{name: fs[0], members: map[string]bool{}}
				groups[fs[0]] = g
				order = append(order, fs[0])
			}
			g.topic = fs[1]
			g.lag += lag
			if fs[6] != "-" {
				g.members[fs[6]] = true
			}
		}
	}
	sort.Strings(order)
	var out []Finding
	for _, n := range order {
		g := groups[n]
		if len(g.members) > 0 || g.lag <= 0 || g.topic == "" || groupFailing(ev, g.name) || groupWorkloadRuns(ev, g.name) {
			continue
		}
		for _, o := range order {
			s := groups[o]
			if o == n || s.topic != g.topic || len(s.members) == 0 || s.lag*100 > g.lag {
				continue
			}
			subject := orWord(ev.Scope.Service, g.name)
			f := Finding{Kind: KindStaleGroup, Subject: subject, Namespace: ev.Scope.Namespace, Time: ev.Window.Start,
				Severity: 1, Weight: 0.9, Source: "kafka-consumer-groups",
				Summary: fmt.Sprintf("consumer group %s has no active members and lag %d on %s; group %s has %d members and lag %d", g.name, g.lag, g.topic, s.name, len(s.members), s.lag),
				Evidence: []string{
					fmt.Sprintf("Consumer group '%s' has no active members: lag %d on topic %s, no consumer id on any partition", g.name, g.lag, g.topic),
					fmt.Sprintf("consumer group %s on topic %s: %d active members, lag %d", s.name, s.topic, len(s.members), s.lag),
				}}
			f.setFact("group", g.name)
			f.setFact("topic", g.topic)
			f.setFact("lag", strconv.FormatInt(g.lag, 10))
			f.setFact("successor", s.name)
			f.setFact("successor_members", strconv.Itoa(len(s.members)))
			f.setFact("successor_lag", strconv.FormatInt(s.lag, 10))
			f.setFact("why", fmt.Sprintf("group %s has no active members while %s, on the same topic, is caught up", g.name, s.name))
			out = append(out, f)
			break
		}
	}
	return out
}
