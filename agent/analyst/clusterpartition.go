package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A clustered broker cut in two by the network. RabbitMQ's nodes watch
// each other over Erlang distribution; when one cannot reach the others
// for a net tick (packets dropped by a full conntrack table, a flapping
// link, a security-group change), the cluster is partitioned. With
// cluster_partition_handling = pause_minority the node on the smaller side
// pauses itself ("Cluster minority/secondary status detected - awaiting
// recovery"): its listeners close, its readiness probe fails, and the
// classic queues whose home is that node are unavailable ("home node ...
// of durable queue ... is down or inaccessible") until the network heals;
// their consumers stall and their backlog grows. With autoheal the losing
// side restarts; with ignore both sides keep accepting writes (split
// brain). The majority's own log says it too (Mnesia's
// inconsistent_database, running_partitioned_network; "Partial partition
// detected"). It is not a memory or disk alarm: nothing is blocked by a
// watermark, a node is missing.

// KindClusterPartition is a broker cluster partitioned, a node paused or
// cut off.
const KindClusterPartition Kind = "cluster_partition"

var (
	// partitionRE is the partition in a node's own log.
	partitionRE = regexp.MustCompile(`(?i)Cluster minority/secondary status detected|running_partitioned_network|Partial partition (?:detected|disconnect)|Autoheal (?:request|decision)|Network partition detected|partitioned network|\bsplit[- ]brain\b.*\bdetected|SBR took decision`)
	// partitionPausedRE is the node that paused itself (pause_minority,
	// pause_if_all_down).
	partitionPausedRE = regexp.MustCompile(`(?i)Cluster minority/secondary status detected|pause_minority|pause_if_all_down`)
	// partitionPeerRE reads the node on the other side
	// ("running_partitioned_network, 'rabbit@mq-2'", "Partial partition
	// disconnect from rabbit@mq-2").
	partitionPeerRE = regexp.MustCompile(`running_partitioned_network, '?([\w@.-]+)'?|Partial partition (?:detected|disconnect)[^@]*?\b(\w+@[\w.-]+)`)
	// homeNodeDownRE is a client refused a queue whose home node is down.
	homeNodeDownRE = regexp.MustCompile(`home node '([\w@.-]+)' of durable queue '([^']+)'[^"]*?is down or inaccessible`)
	// partitionModeRE is the partition handling mode set.
	partitionModeRE = regexp.MustCompile(`cluster_partition_handling\s*=\s*(\w+)`)
)

var clusterPartition = &mechanism{
	kind:   KindClusterPartition,
	class:  classCause,
	label:  "broker cluster partitioned, a node paused",
	detect: detectClusterPartition,
	// A network partition has no change of its own among deploys and
	// configs: a load that fills a node's tables is its origin, said
	// in the finding.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the %s cluster is partitioned since %s", h.Subject, hm(h.Onset))
		if n := h.fact("node"); n != "" {
			d += fmt.Sprintf(": node %s was cut off from the others", n)
		}
		if h.fact("paused") != "" {
			d += fmt.Sprintf(" and paused itself (%s: the minority side stops until the network heals)", orWord(h.fact("mode"), "pause_minority"))
		}
		if q := h.fact("queues"); q != "" {
			d += fmt.Sprintf("; the queues whose home is that node (%s) are unavailable", q)
		}
		if c := h.fact("clients"); c != "" {
			d += fmt.Sprintf(", so %s cannot consume from them and its backlog grows", c)
		}
		d += h.clause("; the partition began as ", "network")
		d += " — a partition, not a memory or disk alarm"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if w := h.fact("network"); w != "" {
			r.high("Relieve what cut the node off (%s), then let %s rejoin (it resumes by itself under pause_minority once it sees the majority)", truncate(w, 120), orWord(h.fact("node"), "the paused node"))
		} else {
			r.high("Restore the network between the nodes of %s; the paused node %s resumes once it sees the majority", h.Subject, orWord(h.fact("node"), ""))
		}
		r.med("Make the queues that matter replicated (quorum queues), so losing one node does not take them away")
		r.low("Alert on rabbitmq partitions (rabbitmq-diagnostics cluster_status, rabbitmq_erlang_uptime / node down) and on a node's readiness failing")
	},
}

// detectClusterPartition reads a partition from the brokers' logs: the
// node cut off, whether it paused, the queues and clients it took with
// it, and what dropped the packets on its node when a kernel log says
// so.
func detectClusterPartition(ev *Gathered, _ []Finding) []Finding {
	var subject, ns, node string
	var first time.Time
	var evid []string
	paused := false
	for set, t := range incidentTemplates(ev) {
		line := templateLine(t, partitionRE)
		if line == "" {
			continue
		}
		at := earliest(t.FirstSeen, t.FirstIncident)
		if subject == "" {
			subject, ns = set.Subject, set.Namespace
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if matchLine(partitionPausedRE, line) {
			paused = true
		}
		if m := findSubmatch(partitionPeerRE, line); m != nil && node == "" {
			node = firstGroup(m)
		}
		evid = append(evid, fmt.Sprintf("%s logs (%d lines from %s): %s", set.Subject, t.Incident, hm(at), quote(ReadableLine(line), 220)))
	}
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindClusterPartition, Subject: subject, Namespace: ns, Object: "cluster " + subject, Time: first, Severity: SevCritical, Weight: 0.88, Source: SrcLogs, Evidence: evid}
	if paused {
		f.setFact("paused", "true")
	}
	// Clients refused a queue whose home is the node cut off.
	var queues, clients []string
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			m := findSubmatch(homeNodeDownRE, t.Example)
			if t.Incident == 0 || m == nil {
				continue
			}
			if node == "" {
				node = m[1]
			}
			if !strings.Contains(strings.Join(queues, ","), m[2]) {
				queues = append(queues, m[2])
			}
			if set.Subject != subject && !strings.Contains(strings.Join(clients, ","), set.Subject) {
				clients = append(clients, set.Subject)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %d refusals from %s: %s", set.Subject, t.Incident, hm(orTime(t.FirstIncident, t.FirstSeen)), quote(ReadableLine(t.Example), 220)))
			}
		}
	}
	f.setFact("node", shortNode(node))
	f.setFact("queues", strings.Join(queues, ", "))
	f.setFact("clients", strings.Join(clients, ", "))
	f.Related = append(f.Related, clients...)
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(partitionModeRE, l); m != nil {
				f.setFact("mode", m[1])
				if m[1] == "pause_minority" || m[1] == "pause_if_all_down" {
					f.setFact("paused", "true")
				}
			}
		}
	}
	// What dropped the packets: a node's conntrack table full within
	// minutes before the partition.
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			if !matchLine(conntrackFullRE, t.Example) {
				continue
			}
			at := earliest(t.FirstSeen, t.FirstIncident)
			if at.After(first.Add(time.Minute)) || first.Sub(at) > 15*time.Minute {
				continue
			}
			host := set.Subject
			if m := findSubmatch(syslogHostRE, t.Example); m != nil {
				host = m[1]
			}
			w := fmt.Sprintf("the connection-tracking table of node %s full from %s, dropping packets", host, hm(at))
			f.setFact("network", w)
			f.setFact("why", w)
			f.Related = append(f.Related, host)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs (%d lines from %s): %s", set.Subject, t.Incident+t.Baseline, hm(at), quote(ReadableLine(t.Example), 160)))
			break
		}
	}
	if f.fact("why") == "" && node != "" {
		f.setFact("why", "node "+shortNode(node)+" cut off from the cluster")
	}
	f.Summary = fmt.Sprintf("%s partitioned: %s cut off", subject, orWord(shortNode(node), "a node"))
	return []Finding{f}
}

// shortNode is an Erlang node's host label ("rabbit@rabbitmq-server-2.
// rabbitmq-nodes.messaging" is rabbitmq-server-2).
func shortNode(n string) string {
	if _, h, ok := strings.Cut(n, "@"); ok {
		n = h
	}
	h, _, _ := strings.Cut(n, ".")
	return h
}
