package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A hot key: the requests of a partitioned store (DynamoDB, Kinesis,
// Cosmos DB) concentrate on one partition key, and one partition serves a
// fixed rate whatever the table's capacity (DynamoDB: 1,000 write and
// 3,000 read units a second per partition, on-demand tables too). The
// calls on that key are refused with the store's throttle reply
// (ProvisionedThroughputExceededException, "Request rate is large") while
// the table as a whole is far below its capacity, so raising capacity or
// switching to on-demand does not help: the key must be spread (write
// sharding) or its traffic cut (caching, batching). The store's own
// Contributor Insights report names the key; so do the throttled calls'
// log lines when they all name the same item.

// KindHotKey is a partitioned store throttling the calls on one key.
const KindHotKey Kind = "hot_key"

var hotKey = &mechanism{
	kind:   KindHotKey,
	class:  classCause,
	label:  "hot partition key throttled",
	detect: detectHotKeys,
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind != KindThrottling && f.Kind != KindErrorRate && f.Kind != KindLogErrors {
			return false
		}
		return fromCaller(h, f) || f.Subject == h.Subject
	},
	// A change of a caller that sends its traffic to the table (a deploy
	// naming it, a feature flag of the caller) concentrates it.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if t := h.fact("table"); t != "" && strings.Contains(changeText(c), strings.ToLower(t)) {
			return true
		}
		return c.Kind == KindFeatureFlag && slices.Contains(strings.Split(h.fact("callers"), ", "), c.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		store := orWord(h.fact("store"), "the store")
		what := "table"
		if store == "Kinesis" {
			what = "stream"
		}
		d := fmt.Sprintf("hot key on %s %s %s: the throttled requests go to one partition key, %s", store, what, h.Subject, orWord(h.fact("key"), "the same item"))
		d += h.wrapped(" (", "share", ")")
		d += fmt.Sprintf(", and one partition serves a fixed request rate whatever the %s's capacity%s, so the calls on that item are throttled (%s) while the rest of the %s is served", what, partitionLimit(store), orWord(h.fact("reply"), "throttled"), what)
		if h.fact("on_demand") != "" {
			d += "; the table is on-demand (PAY_PER_REQUEST): its capacity mode is not the limit, the single partition is"
		}
		d += h.clause(". Its callers fail: ", "callers")
		d += h.quoteClause(" — ", "line", 160)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		key := orWord(h.fact("key"), "the hot key")
		r.high("Spread the writes of %s over several keys (write sharding: %s#0..N, summed on read) or cut them (aggregate the updates in memory or a queue and apply them in batches)", key, key)
		r.high("Make %s fail soft on the throttled item (bounded retries with backoff and jitter, a clear 'try again' to the client) instead of answering 500", orWord(h.fact("callers"), "the caller"))
		r.med("Cache reads of %s (DAX, an in-process cache) so only writes reach its partition; raising the table's capacity does not help a single partition", key)
		r.low("Alert on the share of the top key in Contributor Insights and on throttled requests per table, before a launch or sale")
	},
}

// partitionLimit is what one partition of a store serves, when known.
func partitionLimit(store string) string {
	switch store {
	case "DynamoDB":
		return " (1,000 write and 3,000 read units a second per partition)"
	case "Kinesis":
		return " (1 MB or 1,000 records a second written per shard)"
	}
	return ""
}

var (
	// partitionedStores are the cloud APIs whose throttle is per partition.
	partitionedStores = []string{"DynamoDB", "Kinesis", "Cosmos DB"}
	// keyFieldRE is an item's key in a log line: "sku":"X", key=X,
	// partitionKey: 'X'.
	keyFieldRE = regexp.MustCompile(`(?i)["']?\b(sku|key|pk|partition_?key|hash_?key|item_?id|product_?id|shard_?id|(?:for )?shard)["']?\s*[:= ]\s*["']?((?:shardId-)?[^\s"',}]{2,120})`)
	// tableFieldRE is a table a line or a command names.
	tableFieldRE = regexp.MustCompile(`(?i)(?:"TableName"\s*:\s*"|\b[Tt]able(?:_?[Nn]ame)?\s*[=:]\s*"?|--table-name\s+|\bin stream\s+|"StreamName"\s*:\s*"|--stream-name\s+)([A-Za-z0-9_.-]{3,255})`)
	onDemandRE   = regexp.MustCompile(`\bPAY_PER_REQUEST\b`)
	// contribRE is a row of a Contributor Insights report in table or
	// text output: a key and its count.
	contribRowRE = regexp.MustCompile(`^\s*\|?\s*(\S+?)\s*[|\t ]\s*([0-9][0-9.,]*(?:[eE]\+?\d+)?)\s*\|?\s*$`)
)

// detectHotKeys finds the throttle replies of a partitioned store that
// concentrate on one key: the Contributor Insights report handed over
// (aws cloudwatch get-insight-rule-report) or the throttled lines naming
// the same item. One finding per table, its callers related.
func detectHotKeys(ev *Gathered, found []Finding) []Finding {
	byTable := map[string]*Finding{}
	var order []string
	key, share, top := contributorKey(ev.Commands)
	onDemand := false
	for _, c := range ev.Commands {
		if slices.ContainsFunc(c.Lines, onDemandRE.MatchString) {
			onDemand = true
		}
	}
	for i := range found {
		t := &found[i]
		store := t.fact("cloud")
		if t.Kind != KindThrottling || !slices.Contains(partitionedStores, store) || t.fact("line") == "" {
			continue
		}
		k, why := key, share
		if k == "" {
			k = lineKey(ev, t)
			if k == "" {
				continue
			}
			why = "the first and the last of the throttled calls name it"
		}
		table := throttledTable(ev, t, found)
		f := byTable[table]
		if f == nil {
			f = &Finding{Kind: KindHotKey, Subject: orWord(table, store), Namespace: t.Namespace, Source: t.Source, Object: t.Object,
				Time: t.Time, Severity: SevCritical, Weight: 0.85}
			if top > 0 {
				f.Weight = 0.95
			}
			f.setFact("store", store)
			f.setFact("table", table)
			f.setFact("key", k)
			f.setFact("share", why)
			f.setFact("reply", throttleReply(t.fact("line")))
			f.setFact("line", t.fact("line"))
			if onDemand {
				f.setFact("on_demand", "true")
			}
			byTable[table] = f
			order = append(order, table)
		}
		f.Time = earliest(f.Time, t.Time)
		caller := t.fact("caller")
		if caller != "" && !slices.Contains(strings.Split(f.fact("callers"), ", "), caller) {
			if f.fact("callers") == "" {
				f.setFact("callers", caller)
			} else {
				f.Facts["callers"] += ", " + caller
			}
			f.Related = appendNew(f.Related, caller)
		}
		f.Evidence = appendNew(f.Evidence, fmt.Sprintf("%s: %s", t.Summary, quote(ReadableLine(t.fact("line")), 200)))
		if top > 0 && len(f.Evidence) == 1 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("Contributor Insights of %s: key %s %s", orWord(table, store), k, share))
		}
	}
	var out []Finding
	for _, tb := range order {
		f := byTable[tb]
		f.Summary = fmt.Sprintf("%s throttles the calls on one key, %s (from %s)", f.Subject, f.fact("key"), hm(f.Time))
		out = append(out, *f)
	}
	return out
}

// contributorKey reads the top key of a Contributor Insights report in
// the commands handed over (aws cloudwatch get-insight-rule-report, table,
// text or JSON output): the key, its share of the listed requests, and
// its count (0 when no report names a key with most of them).
func contributorKey(cmds []evidence.CommandOutput) (key, share string, top float64) {
	for _, c := range cmds {
		if !strings.Contains(strings.ToLower(c.Command), "insight-rule-report") {
			continue
		}
		type row struct {
			k string
			v float64
		}
		var rows []row
		jsonKey, inKeys := "", false
		for _, l := range c.Lines {
			if m := findSubmatch(jsonKeysRE, l); m != nil {
				jsonKey, inKeys = m[1], m[1] == ""
				continue
			}
			if inKeys {
				// "Keys": [ on its own line, the key on the next.
				if m := findSubmatch(jsonItemRE, l); m != nil {
					jsonKey, inKeys = m[1], false
				}
				continue
			}
			if m := findSubmatch(jsonValueRE, l); m != nil && jsonKey != "" {
				v, _ := strconv.ParseFloat(m[1], 64)
				rows = append(rows, row{jsonKey, v})
				jsonKey = ""
				continue
			}
			m := findSubmatch(contribRowRE, l)
			if m == nil || strings.Contains(l, `"`) || strings.Trim(m[1], "|-+") == "" {
				continue
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
			if err != nil {
				continue
			}
			rows = append(rows, row{m[1], v})
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].v > rows[j].v })
		total := 0.0
		for _, r := range rows {
			total += r.v
		}
		if len(rows) == 0 || total == 0 || rows[0].v/total < 0.5 {
			continue
		}
		return rows[0].k, fmt.Sprintf("%.0f%% of the requests of the top %d keys Contributor Insights lists: %s of %s", 100*rows[0].v/total, len(rows), compactCount(rows[0].v), compactCount(total)), rows[0].v
	}
	return "", "", 0
}

var (
	jsonKeysRE  = regexp.MustCompile(`"Keys"\s*:\s*\[\s*(?:"([^"]+)")?`)
	jsonItemRE  = regexp.MustCompile(`^\s*"([^"]+)"\s*,?\s*$`)
	jsonValueRE = regexp.MustCompile(`"ApproximateAggregateValue"\s*:\s*([0-9.eE+]+)`)
)

// lineKey is the item key that both the first and the last of a throttle
// finding's lines name ("" when they do not name the same one).
func lineKey(ev *Gathered, t *Finding) string {
	for _, set := range ev.Logs {
		if set.Subject != t.fact("caller") {
			continue
		}
		for _, tp := range set.Templates {
			if tp.Incident < 3 || tp.Template != t.fact("template") || tp.Last == "" || tp.Last == tp.Example {
				continue
			}
			a, b := findAllSubmatch(keyFieldRE, tp.Example, -1), findAllSubmatch(keyFieldRE, tp.Last, -1)
			for _, x := range a {
				for _, y := range b {
					if strings.EqualFold(x[1], y[1]) && x[2] == y[2] {
						return x[2]
					}
				}
			}
		}
	}
	return ""
}

// throttledTable names the table a throttle finding is about: the line's
// table, the table whose throttle metric rose (a finding from its
// TableName series), or the one a command describes.
func throttledTable(ev *Gathered, t *Finding, found []Finding) string {
	if m := findSubmatch(tableFieldRE, t.fact("line")); m != nil {
		return m[1]
	}
	for _, f := range found {
		if f.Kind == KindThrottling && f.fact("line") == "" && f.Subject != t.Subject && strings.Contains(f.Summary, t.fact("cloud")) {
			return f.Subject
		}
	}
	for _, ms := range ev.Metrics {
		if !strings.Contains(ms.Name, "DynamoDB") || !strings.Contains(strings.ToLower(ms.Name), "throttl") {
			continue
		}
		for _, s := range ms.Series {
			if n := s.Labels["TableName"]; n != "" && len(s.Points) > 0 && slices.ContainsFunc(s.Points, func(p evidence.Point) bool { return p.V > 0 }) {
				return n
			}
		}
	}
	for _, c := range ev.Commands {
		if m := findSubmatch(tableFieldRE, c.Command); m != nil {
			return m[1]
		}
	}
	return ""
}
