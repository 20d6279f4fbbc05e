package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// An Elasticsearch or OpenSearch cluster at its shard limit: every data
// node may hold cluster.max_shards_per_node open shards (1000 by default),
// and an index creation that would exceed the cluster's total is refused
// ("this action would add [2] shards, but this cluster currently has
// [1000]/[1000] maximum normal shards open"). Daily indices are created by
// the first write of the day, so at midnight the shippers' bulk writes
// (Fluent Bit, Logstash, Vector) are rejected with status 400, their
// chunks dropped when retries run out: a hole in the logs until shards are
// freed. What fills the cluster is retention that stopped deleting old
// indices: a curator or cleanup job failing.

// KindShardLimit is a search cluster refusing new indices at its shard
// limit.
const KindShardLimit Kind = "shard_limit"

var (
	// shardLimitRE is the cluster refusing an index for its shard limit
	// (Elasticsearch 7/8 "maximum normal shards open", OpenSearch and
	// older Elasticsearch "maximum shards open").
	shardLimitRE = regexp.MustCompile(`(?i)this action would add \[(\d+)\] (?:total )?shards, but this cluster currently has \[(\d+)\]/\[(\d+)\] maximum (?:normal |frozen )?shards open`)
	// esClusterNameRE is a cluster's name in its health or info output.
	esClusterNameRE = regexp.MustCompile(`"cluster_name"\s*:\s*"([^"]+)"`)
	// retentionJobRE names a job that deletes old indices.
	retentionJobRE = regexp.MustCompile(`(?i)curator|retention|cleanup|clean-up|prune|purge|rollover|\bilm\b|delete-?indices|housekeep`)
)

var shardLimit = &mechanism{
	kind:   KindShardLimit,
	class:  classCause,
	label:  "search cluster at its shard limit, new indices refused",
	detect: detectShardLimit,
	// The shippers whose writes are refused, and the retention job that
	// stopped freeing shards.
	related: func(h *Hypothesis, f *Finding) bool {
		return ofListed(f, h.fact("clients"), ", ") || h.fact("cleanup") != "" && strings.EqualFold(f.Subject, h.fact("cleanup"))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the search cluster %s is at its shard limit: it has %s/%s shards open (cluster.max_shards_per_node times its data nodes), so it refuses to create new indices from %s UTC", h.Subject, h.fact("open"), h.fact("max"), h.fact("from"))
		d += fmt.Sprintf(" (%s); the writes of %s to the new (daily) indices are rejected and their logs dropped", quote(h.fact("line"), 200), orWord(h.fact("clients"), "its clients"))
		if c := h.fact("cleanup"); c != "" {
			d += fmt.Sprintf(". The shards piled up because old indices are no longer deleted: the retention job %s fails (%s)", c, quote(h.fact("cleanup_why"), 160))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if c := h.fact("cleanup"); c != "" {
			r.high("Fix the retention job %s and delete the indices past retention on %s (DELETE /<old-index>), so that shards are freed and new indices can be created", c, h.Subject)
		} else {
			r.high("Free shards on %s: delete or close indices past retention, or shrink/merge small indices (DELETE /<old-index>, _shrink)", h.Subject)
		}
		r.med("Manage retention inside the cluster with an ILM/ISM policy (delete phase) instead of an external job, and use fewer primary shards per daily index")
		r.low("Alert on the shard count against cluster.max_shards_per_node times the data nodes (and on the shippers' rejected bulk writes)")
	},
}

// detectShardLimit finds a cluster refusing index creation for its shard
// limit in its clients' logs.
func detectShardLimit(ev *Gathered, found []Finding) []Finding {
	var clients []string
	var line string
	var from time.Time
	var open, limit string
	for m := range incidentMatches(ev, shardLimitRE) {
		name := orWord(m.set.Subject, subjectOfSource(m.set.Source))
		if !slices.Contains(clients, name) {
			clients = append(clients, name)
		}
		at := firstOf(m.t.FirstIncident, m.t.FirstSeen)
		if line == "" || at.Before(from) {
			sm := findSubmatch(shardLimitRE, m.line)
			line, open, limit = sm[0], sm[2], sm[3]
			from = at
		}
	}
	if line == "" {
		return nil
	}
	cluster := ""
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(esClusterNameRE, l); m != nil && cluster == "" {
				cluster = m[1]
			}
		}
	}
	if cluster == "" {
		cluster = "elasticsearch"
	}
	f := Finding{Kind: KindShardLimit, Subject: cluster, Object: "cluster " + cluster, Source: SrcLogs, Time: from, Severity: SevCritical, Weight: 0.95}
	f.setFact("clients", strings.Join(clients, ", "))
	f.setFact("line", line)
	f.setFact("open", open)
	f.setFact("max", limit)
	f.setFact("from", from.UTC().Format("15:04"))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", strings.Join(clients, ", "), quote(line, 200)))
	// The retention job that stopped deleting old indices, and why it
	// fails (its own error before the Job's bare failure).
	for pass := 0; pass < 2 && f.fact("cleanup") == ""; pass++ {
		for i := range found {
			g := &found[i]
			if !matchLine(retentionJobRE, g.Subject) || g.Severity == SevInfo || len(g.Evidence) == 0 {
				continue
			}
			if pass == 0 && (g.Kind == KindJobFailed || g.Kind == KindCrashLoop) {
				continue
			}
			f.setFact("cleanup", g.Subject)
			f.setFact("cleanup_why", g.Evidence[0])
			break
		}
	}
	if c := f.fact("cleanup"); c != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the retention job %s fails: %s", c, quote(f.fact("cleanup_why"), 200)))
	}
	f.Summary = fmt.Sprintf("cluster %s at its shard limit (%s/%s), new indices refused", cluster, open, limit)
	return []Finding{f}
}
