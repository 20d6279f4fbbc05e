package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A search cluster whose primary shards are unassigned. Elasticsearch and
// OpenSearch keep each shard's primary on one data node and its replicas
// on others; when a data node leaves (drained, evicted, its host
// replaced) the master promotes a replica. An index with no replicas
// (number_of_replicas 0, common during a bulk reindex) has nothing to
// promote: its primaries on that node stay UNASSIGNED, the cluster turns
// red, and every search touching them fails ("all shards failed",
// no_shard_available_action_exception, 503) until the node comes back. A
// StatefulSet data node whose volume is bound to one zone cannot come
// back when no schedulable node is left in that zone (FailedScheduling:
// "volume node affinity conflict"). Solr says the same with "no servers
// hosting shard". Older errors of the cluster (a circuit breaker's 429s
// in the morning) are not this cause.

// KindShardsUnassigned is a search cluster's primary shards unassigned.
const KindShardsUnassigned Kind = "shards_unassigned"

var (
	// shardsUnassignedRE is the cluster's own word for it (its master's
	// log, its health) or its clients' (no copy of a shard answers).
	shardsUnassignedRE = regexp.MustCompile(`(?i)primary shard is unassigned|no_shard_available_action_exception|NoShardAvailableActionException|No shard available for|Cluster health status changed from \[\w+\] to \[RED\]|no servers hosting shard`)
	// shardClusterRE is the cluster's own log of it (not a client's).
	shardClusterRE = regexp.MustCompile(`(?i)primary shard is unassigned|Cluster health status changed from \[\w+\] to \[RED\]`)
	// shardIndexRE reads the index and shard ("[products-v7][1]").
	shardIndexRE = regexp.MustCompile(`\[([\w.-]+)\]\[(\d+)\]`)
	// nodeLeftRE reads the data node that left and why
	// ("node-left[{es-data-2}{Qm2v...} reason: disconnected]", the
	// health change's "reason: [{es-data-2} reason: disconnected]").
	nodeLeftRE = regexp.MustCompile(`(?i)node-left\[\{([\w.-]+)\}.*?reason: ([\w -]+?)\]|\{([\w.-]+)\} reason: ([\w -]+?)\]`)
	// unassignedRowRE is a _cat/shards row of an unassigned primary.
	unassignedRowRE = regexp.MustCompile(`^([\w.-]+)\s+(\d+)\s+p\s+UNASSIGNED\b`)
	// healthRedRE is _cluster/health's status.
	healthRedRE = regexp.MustCompile(`"status"\s*:\s*"red"`)
	// healthNameRE is _cluster/health's cluster name.
	healthNameRE = regexp.MustCompile(`"cluster_name"\s*:\s*"([\w.-]+)"`)
	// catHealthRedRE is a _cat/health row of a red cluster ("1794638400
	// 08:00:00 es-logs red 5 4 311 598 0 0 26 0 - 95.8%"): its name.
	catHealthRedRE = regexp.MustCompile(`^\d{9,}\s+\d{2}:\d{2}:\d{2}\s+([\w.-]+)\s+red\b`)
	// explainFieldRE reads _cluster/allocation/explain's fields: the
	// shard's index, number and state, why it is unassigned and since
	// when, and whether a copy can be allocated.
	explainFieldRE = regexp.MustCompile(`^"(index|shard|current_state|reason|at|can_allocate)"\s*:\s*"?([\w.:-]+)"?,?$`)
	// zeroReplicasRE is an index with no replicas (its settings, a change
	// that says so).
	zeroReplicasRE = regexp.MustCompile(`(?i)number_of_replicas"?\s*[:=]\s*"?0\b|replicas\s*[:=]\s*0\b|0 replicas`)
	// volumeZoneRE is a scheduler refusing a pod for its volume's zone.
	volumeZoneRE = regexp.MustCompile(`(?i)volume node affinity conflict|had no available volume zone|node\(s\) didn't match PersistentVolume's node affinity`)
	// zoneValueRE reads the zone a volume is bound to (a PV's node
	// affinity).
	zoneValueRE = regexp.MustCompile(`(?i)"key":"[\w./-]*zone"[^}]*"values":\["([\w-]+)"`)
	// dataNodeChangeRE is a change to the nodes (a drain, a consolidation, a
	// replacement).
	dataNodeChangeRE = regexp.MustCompile(`(?i)\bdrain|\bcordon|karpenter|nodepool|node ?group|consolidat|\bAMI\b|node (?:upgrade|replacement|rotation)|\bnodes?\b.*\b(?:replace|upgrade|rotate|remov)`)
)

var shardsUnassigned = &mechanism{
	kind:   KindShardsUnassigned,
	class:  classCause,
	label:  "search cluster red: primary shards unassigned",
	detect: detectShardsUnassigned,
	// A data node leaves with a drain, a consolidation, a node
	// replacement; a deploy of a client or a flag does not unassign
	// shards.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && c.Kind != KindFeatureFlag && matchLine(dataNodeChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the search cluster %s is red since %s: primary shards", h.Subject, hm(h.Onset))
		d += h.clause(" ", "shards")
		d += " are unassigned, so searches that need them fail (no_shard_available_action_exception, all shards failed)"
		if n := h.fact("node"); n != "" {
			d += fmt.Sprintf("; their only copy lived on the data node %s, which left the cluster (%s)", n, orWord(h.fact("left_reason"), "left"))
			d += h.clause(" and cannot come back: ", "node_state")
		}
		if c := h.fact("no_copy"); c != "" && h.fact("zero_replicas") == "" {
			d += "; " + c
		}
		if h.fact("zero_replicas") != "" {
			d += "; the index has 0 replicas, so no replica could be promoted"
			if c := h.fact("replicas_change"); c != "" {
				d += fmt.Sprintf(" (%s)", quote(c, 140))
			}
		}
		d += h.wrapped("; ", "clients", " fail their searches since")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if n := h.fact("node"); n != "" {
			if strings.Contains(h.fact("node_state"), "zone") || strings.Contains(h.fact("node_state"), "affinity") {
				r.high("Bring %s back: give its volume's zone a schedulable node again (uncordon, or add capacity in that zone), so its shards are assigned", n)
			} else {
				r.high("Bring the data node %s back so that its shards are assigned again", n)
			}
		} else {
			r.high("Find why the primaries are unassigned (GET _cluster/allocation/explain) and bring their node back")
		}
		r.med("Give the index at least one replica (number_of_replicas 1) once it is green, so losing one data node no longer loses its shards")
		r.low("Alert on cluster health red and unassigned primary shards; drain data nodes one zone at a time, with a PodDisruptionBudget")
	},
}

// detectShardsUnassigned reads, from the cluster's own log, its health
// and shard tables and its clients' errors, which primaries are
// unassigned, since when, which data node left, why it does not come
// back and whether the index has replicas.
func detectShardsUnassigned(ev *Gathered, _ []Finding) []Finding {
	var cluster string
	var first time.Time
	var evid []string
	var node, reason string
	shards := map[string]bool{}
	var clients []string
	for set, t := range incidentTemplates(ev) {
		for _, line := range t.Lines() {
			if m := findSubmatch(nodeLeftRE, line); m != nil && node == "" && (strings.Contains(line, "node-left") || matchLine(shardClusterRE, line)) {
				node, reason = firstGroup(m), strings.TrimSpace(orWord(m[2], m[4]))
			}
		}
		line := templateLine(t, shardsUnassignedRE)
		if line == "" {
			continue
		}
		at := orTime(t.FirstIncident, t.FirstSeen)
		if m := findSubmatch(shardIndexRE, line); m != nil {
			shards[m[1]+"]["+m[2]] = true
		}
		if matchLine(shardClusterRE, line) {
			if cluster == "" {
				cluster = set.Subject
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
			evid = append(evid, fmt.Sprintf("%s logs: %s", set.Subject, quote(ReadableLine(line), 240)))
			continue
		}
		if !strings.Contains(strings.Join(clients, ","), set.Subject) {
			clients = append(clients, set.Subject)
			evid = append(evid, fmt.Sprintf("%s logs %d failed searches from %s: %s", set.Subject, t.Incident, hm(at), quote(ReadableLine(line), 240)))
		}
		if first.IsZero() {
			first = at
		}
	}
	// The cluster's health and shard table, as handed over.
	red := false
	own := cluster != ""
	zero := false
	nodeState := ""
	var explain []string
	for _, c := range ev.Commands {
		name := ""
		x := map[string]string{}
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := findSubmatch(healthNameRE, t); m != nil {
				name = m[1]
			}
			if m := findSubmatch(explainFieldRE, t); m != nil && x[m[1]] == "" {
				x[m[1]] = m[2]
			}
			if m := findSubmatch(catHealthRedRE, t); m != nil && !red {
				red, name = true, m[1]
				evid = append(evid, "cluster health: "+quote(t, 80)+" ("+c.Command+")")
			}
			if matchLine(healthRedRE, t) && !red {
				red = true
				evid = append(evid, "cluster health: "+quote(t, 60)+" ("+c.Command+")")
			}
			if m := findSubmatch(unassignedRowRE, t); m != nil {
				if !shards[m[1]+"]["+m[2]] {
					shards[m[1]+"]["+m[2]] = true
				}
				if !strings.Contains(strings.Join(evid, "\n"), "UNASSIGNED") {
					evid = append(evid, "shard table: "+quote(t, 120))
				}
			}
			if strings.Contains(c.Command, "replicas") && matchLine(zeroReplicasRE, t) {
				zero = true
			}
			if node != "" && strings.Contains(c.Command, node) && matchLine(volumeZoneRE, t) && nodeState == "" {
				nodeState = "its pod is Pending, the scheduler finds " + findString(volumeZoneRE, t)
				evid = append(evid, fmt.Sprintf("%s: %s", node, quote(t, 200)))
			}
		}
		// The cluster's own health names it.
		if red && cluster == "" && name != "" {
			cluster, own = name, true
		}
		// An unassigned primary explained: which, why, since when.
		if strings.EqualFold(x["current_state"], "unassigned") && x["index"] != "" && x["shard"] != "" {
			shards[x["index"]+"]["+x["shard"]] = true
			d := fmt.Sprintf("[%s][%s] unassigned", x["index"], x["shard"])
			if r := x["reason"]; r != "" {
				d += " (" + r + ")"
			}
			if at, err := time.Parse(time.RFC3339, x["at"]); err == nil {
				d += " since " + hm(at)
				if first.IsZero() || at.Before(first) {
					first = at
				}
			}
			if a := x["can_allocate"]; a != "" {
				d += ", can_allocate: " + a
				if a == "no_valid_shard_copy" {
					explain = append(explain, "no valid copy of its data is left in the cluster (no_valid_shard_copy)")
				}
			}
			evid = append(evid, "allocation explain: "+d)
		}
	}
	if node != "" && nodeState == "" {
		for _, f := range ev.K8s.Events {
			if strings.Contains(f.InvolvedObject.Name, node) && matchLine(volumeZoneRE, f.Message) {
				nodeState = "its pod is Pending, the scheduler finds " + findString(volumeZoneRE, f.Message)
				evid = append(evid, fmt.Sprintf("%s: %s %s", node, f.Reason, quote(f.Message, 200)))
				break
			}
		}
	}
	if nodeState != "" {
		// The zone its volume is bound to.
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if m := findSubmatch(zoneValueRE, l); m != nil && strings.Contains(c.Command, "pv") {
					nodeState += fmt.Sprintf(" (its volume is bound to zone %s)", m[1])
					break
				}
			}
		}
	}
	if cluster == "" && !red || len(shards) == 0 && !red {
		return nil
	}
	if cluster == "" {
		cluster = "search cluster"
	}
	f := Finding{Kind: KindShardsUnassigned, Subject: cluster, Object: "cluster " + cluster, Time: first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs, Evidence: evid}
	var ss []string
	for s := range shards {
		ss = append(ss, "["+s+"]")
	}
	sort.Strings(ss)
	f.setFact("shards", strings.Join(ss, ", "))
	if node != "" {
		f.setFact("node", node)
		f.setFact("left_reason", reason)
		f.Related = append(f.Related, node)
		f.setFact("why", fmt.Sprintf("data node %s left (%s)", node, reason))
	}
	f.setFact("node_state", nodeState)
	if len(explain) > 0 {
		f.setFact("no_copy", explain[0])
	}
	// What the cluster says of itself (its log, its health) is its own
	// state, whoever else it reaches.
	if own {
		f.setFact("caller", cluster)
	}
	for _, c := range append(ev.Earlier, ev.Changes...) {
		if matchLine(zeroReplicasRE, c.Description) {
			zero = true
			f.setFact("replicas_change", c.Timestamp.UTC().Format("15:04")+" UTC: "+c.Description)
		}
	}
	if zero {
		f.setFact("zero_replicas", "true")
	}
	f.Related = append(f.Related, clients...)
	f.setFact("clients", strings.Join(clients, ", "))
	f.Summary = fmt.Sprintf("%s red: primary shards %s unassigned", cluster, strings.Join(ss, ", "))
	return []Finding{f}
}
