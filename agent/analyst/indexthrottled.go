package analyst

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A secondary index out of write capacity. A DynamoDB table's global
// secondary indexes have their own provisioned capacity, and every write
// to the table that changes an indexed attribute is also a write to the
// index: when an index's consumed write units reach what it is
// provisioned, DynamoDB throttles the writes to the table itself
// (ProvisionedThroughputExceededException "for one or more global
// secondary indexes of the table"), though the table's own capacity is far
// from used. The SDKs retry a throttled write with backoff, so callers see
// slow writes before they see errors. CloudWatch says it per index
// (WriteThrottleEvents and ConsumedWriteCapacityUnits with the
// GlobalSecondaryIndexName dimension; the same through
// yet-another-cloudwatch-exporter as dimension_GlobalSecondaryIndexName),
// describe-table says the index's provisioned units and keys, and the root
// is the writer that started rewriting the indexed attributes (a backfill,
// a migration, a new feature) or the capacity lowered.

// KindIndexThrottled is a table's writes throttled by a secondary index
// out of capacity.
const KindIndexThrottled Kind = "index_throttled"

var indexThrottled = &mechanism{
	kind:   KindIndexThrottled,
	class:  classCause,
	label:  "secondary index out of write capacity, table writes throttled",
	detect: detectIndexThrottled,
	related: func(h *Hypothesis, f *Finding) bool {
		callers := strings.Split(h.fact("callers"), ", ")
		switch f.Kind {
		case KindThrottling:
			return f.Subject == h.Subject || slices.Contains(callers, f.Subject) || strings.Contains(f.fact("line"), h.Subject)
		case KindLatency, KindErrorRate, KindLogErrors, KindTimeout:
			return slices.Contains(callers, f.Subject)
		}
		return f.Subject == h.fact("writer")
	},
	// The change that drove the index's writes: its service is the writer
	// found, or its text names the table, the index or an attribute the
	// index is keyed on.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if w := h.fact("writer"); w != "" && c.Subject == w {
			return true
		}
		return indexChangeNames(changeText(c), h.fact("table"), h.fact("index"), strings.Split(h.fact("keys"), ","))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		table, index := orWord(h.fact("table"), h.Subject), orWord(h.fact("index"), "a global secondary index")
		d := fmt.Sprintf("writes to DynamoDB table %s are throttled by its global secondary index %s: the index is out of write capacity", table, index)
		d += h.wrapped(" (", "capacity", ")")
		d += ", and a write to the table that changes an attribute the index is keyed on"
		if k := h.fact("keys"); k != "" {
			d += " (" + strings.ReplaceAll(k, ",", ", ") + ")"
		}
		d += " must also be written to the index, so DynamoDB throttles the table's writes though the table's own capacity is not used up"
		d += h.wrapped(" (", "table_capacity", ")")
		if w := h.fact("writer"); w != "" {
			d += fmt.Sprintf("; %s drives the index's writes", w)
			d += h.quoteClause(": ", "writer_line", 160)
		}
		if c := h.fact("callers"); c != "" {
			d += fmt.Sprintf("; %s's writes are throttled and retried with backoff, so they are slow before they fail", c)
			d += h.quoteClause(": ", "line", 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		index, table := orWord(h.fact("index"), "the index"), orWord(h.fact("table"), h.Subject)
		if w := h.fact("writer"); w != "" {
			r.high("Pause or slow down %s (its writes to %s rewrite the attributes %s is keyed on) until the index has capacity to spare", w, table, index)
		}
		r.high("Raise the write capacity of %s on %s (aws dynamodb update-table --global-secondary-index-updates, or its auto scaling maximum), or switch the table to on-demand", index, table)
		r.med("Give each index at least the write capacity of the writes that change its keys; run backfills at a rate below the smallest index's spare capacity")
		r.low("Alert on WriteThrottleEvents per GlobalSecondaryIndexName and on ConsumedWriteCapacityUnits near ProvisionedWriteCapacityUnits for every index, not only the table")
	},
}

var (
	// indexLabels name the secondary index of a store's series.
	indexLabels = []string{"GlobalSecondaryIndexName", "dimension_GlobalSecondaryIndexName", "global_secondary_index_name", "globalsecondaryindexname"}
	// tableLabels name its table.
	tableLabels = []string{"TableName", "dimension_TableName", "table_name", "tablename", "table"}
	// indexThrottleLineRE is DynamoDB's throttle reply caused by an index.
	indexThrottleLineRE = regexp.MustCompile(`(?i)throughput for one or more global secondary indexes|under-provisioned global secondary ind`)
	// writeWordRE is a log line of a writer at work.
	writeWordRE = regexp.MustCompile(`(?i)\b(updat\w*|put\w*|writ\w*|insert\w*|backfill\w*|migrat\w*|rewrit\w*|upsert\w*)\b|\bset=`)
)

// metricBase is a series' metric name without its namespace, stat suffix
// or exporter prefix, lower case and without separators
// ("writethrottleevents").
func metricBase(set MetricSet, s evidence.Series) string {
	n := orWord(s.Labels["metric_name"], orWord(s.Labels["__name__"], set.Name))
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	n = strings.ToLower(n)
	n = strings.TrimPrefix(n, "aws_dynamodb_")
	for _, suf := range []string{"_sum", "_average", "_maximum", "_minimum", "_samplecount"} {
		n = strings.TrimSuffix(n, suf)
	}
	return strings.ReplaceAll(n, "_", "")
}

// indexSeries is what the metrics say of one index.
type indexSeries struct {
	table, index   string
	onset          time.Time
	throttles      float64 // the peak of its write throttle events
	consumed, prov float64 // write units a second, at the peak
}

// detectIndexThrottled finds the secondary indexes whose write throttles
// rose in the window, with the capacity they consume and are provisioned,
// the callers whose writes are throttled and the writer that drove them.
func detectIndexThrottled(ev *Gathered, found []Finding) []Finding {
	idx := map[string]*indexSeries{}
	var order []string
	for _, set := range ev.Metrics {
		for _, s := range set.Series {
			index, table := firstLabel(s.Labels, indexLabels...), firstLabel(s.Labels, tableLabels...)
			if index == "" || table == "" || metricBase(set, s) != "writethrottleevents" {
				continue
			}
			sh, ok := seriesShift(s, ev.Window)
			if !ok {
				// An index created within the window has no baseline:
				// its throttles count from its first point.
				sh, ok = throttledFromStart(s, ev.Window)
			}
			if !ok || !sh.up || sh.peak <= 0 {
				continue
			}
			k := table + "/" + index
			if idx[k] == nil {
				idx[k] = &indexSeries{table: table, index: index, onset: sh.start}
				order = append(order, k)
			}
			x := idx[k]
			x.onset = earliest(x.onset, sh.start)
			x.throttles = math.Max(x.throttles, sh.peak)
		}
	}
	var out []Finding
	for _, k := range order {
		x := idx[k]
		x.consumed, x.prov = indexCapacity(ev, x.table, x.index, x.onset)
		desc := describedIndex(ev.Commands, x.table, x.index)
		if x.prov == 0 {
			x.prov = desc.wcu
		}
		f := Finding{Kind: KindIndexThrottled, Subject: x.table, Object: "dynamodb " + x.table + " index " + x.index, Source: SrcCloudWatch,
			Severity: SevCritical, Weight: 0.85, Time: x.onset}
		f.setFact("table", x.table)
		f.setFact("index", x.index)
		f.setFact("keys", strings.Join(desc.keys, ","))
		f.Evidence = append(f.Evidence, fmt.Sprintf("WriteThrottleEvents of %s index %s rose from 0 to %.0f (from %s)", x.table, x.index, x.throttles, ts(x.onset)))
		if x.prov > 0 {
			c := fmt.Sprintf("%.0f write units provisioned", x.prov)
			if x.consumed > 0 {
				c = fmt.Sprintf("%.0f of its %.0f provisioned write units a second consumed", x.consumed, x.prov)
			}
			f.setFact("capacity", c)
			f.Evidence = append(f.Evidence, fmt.Sprintf("index %s of %s: %s", x.index, x.table, c))
			if x.consumed >= 0.8*x.prov {
				f.setFact("why", fmt.Sprintf("index %s consumes %.0f of its %.0f write units a second", x.index, x.consumed, x.prov))
				f.Weight = 0.92
			}
		}
		if desc.tableWCU > 0 {
			f.setFact("table_capacity", fmt.Sprintf("the table is provisioned %.0f write units", desc.tableWCU))
		}
		// The callers whose writes to the table are throttled.
		var callers []string
		for _, t := range found {
			if t.Kind != KindThrottling || t.Subject == x.table || t.fact("line") == "" || !strings.Contains(t.fact("line"), x.table) && !matchLine(indexThrottleLineRE, t.fact("line")) {
				continue
			}
			c := orWord(t.fact("caller"), t.Subject)
			if !slices.Contains(callers, c) {
				callers = append(callers, c)
				f.Related = append(f.Related, c)
			}
			if f.fact("line") == "" || matchLine(indexThrottleLineRE, t.fact("line")) && !matchLine(indexThrottleLineRE, f.fact("line")) {
				f.setFact("line", t.fact("line"))
			}
		}
		f.setFact("callers", strings.Join(callers, ", "))
		if l := f.fact("line"); l != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", strings.Join(callers, ", "), quote(ReadableLine(l), 240)))
		}
		// The writer that drove the index: a change that names the table,
		// the index or its keys near the onset, else a log of another
		// workload writing to the table.
		if c := indexWriterChange(ev.Changes, x, desc.keys); c != nil {
			f.setFact("writer", c.Service)
			f.Related = append(f.Related, c.Service)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s at %s, just before the throttling: %s", changeWord(c.Kind), c.Service, ts(c.Timestamp), truncate(c.Description, 200)))
		}
		if who, line := indexWriterLog(ev.Logs, x.table, callers, f.fact("writer")); who != "" {
			who = orWord(f.fact("writer"), who)
			f.setFact("writer", who)
			f.setFact("writer_line", line)
			if !slices.Contains(f.Related, who) {
				f.Related = append(f.Related, who)
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s writes to %s: %s", who, x.table, quote(ReadableLine(line), 200)))
		}
		f.Summary = fmt.Sprintf("DynamoDB %s: global secondary index %s throttles the table's writes", x.table, x.index)
		if c := f.fact("capacity"); c != "" {
			f.Summary += " (" + c + ")"
		}
		out = append(out, f)
	}
	return out
}

// indexCapacity is the write units a second index consumed at its busiest
// in the window from onset and the units it is provisioned, from their
// series (0 when not read). A Sum series is per period: it is divided by
// the spacing of its points.
func indexCapacity(ev *Gathered, table, index string, onset time.Time) (consumed, prov float64) {
	for _, set := range ev.Metrics {
		for _, s := range set.Series {
			if firstLabel(s.Labels, indexLabels...) != index || firstLabel(s.Labels, tableLabels...) != table {
				continue
			}
			pts := inWindow(s.Points, onset, ev.Window.End)
			if len(pts) == 0 {
				continue
			}
			peak := 0.0
			for _, p := range pts {
				peak = math.Max(peak, p.V)
			}
			switch metricBase(set, s) {
			case "consumedwritecapacityunits":
				stat := strings.ToLower(s.Labels["stat"])
				if matchLine(perSecondLabelRE, s.Labels["label"]) {
					// A query's metric math already divided the sum by its
					// period ("(Sum/60)", "SUM/PERIOD"): units a second.
					consumed = math.Max(consumed, peak)
				} else if stat == "sum" || strings.HasSuffix(strings.ToLower(s.Labels["__name__"]), "_sum") {
					if step := pointSpacing(s.Points); step > 0 {
						consumed = math.Max(consumed, peak/step)
					}
				} else if stat == "" {
					consumed = math.Max(consumed, peak)
				}
			case "provisionedwritecapacityunits":
				prov = math.Max(prov, peak)
			}
		}
	}
	return consumed, prov
}

// perSecondLabelRE is a series label whose statistic a query divided by
// its period: the values are already per second.
var perSecondLabelRE = regexp.MustCompile(`(?i)\(\s*sum\s*/\s*(\d+|period)\s*\)|sum\s*\([^)]*\)\s*/\s*period\(`)

// pointSpacing is the most common spacing of a series' points, in
// seconds.
func pointSpacing(ps []evidence.Point) float64 {
	n := map[float64]int{}
	best := 0.0
	for i := 1; i < len(ps); i++ {
		d := math.Abs(ps[i].T.Sub(ps[i-1].T).Seconds())
		if d <= 0 {
			continue
		}
		n[d]++
		if n[d] > n[best] {
			best = d
		}
	}
	return best
}

// tableDescription is what an aws dynamodb describe-table output says of
// a table and one of its indexes.
type tableDescription struct {
	wcu, tableWCU float64
	keys          []string
}

// describedIndex reads index's provisioned write units and key attributes,
// and the table's own write units, from the describe-table outputs handed
// over (the full output or a --query projection of it).
func describedIndex(cmds []evidence.CommandOutput, table, index string) tableDescription {
	var d tableDescription
	for _, c := range cmds {
		if !strings.Contains(c.Command, "describe-table") || !strings.Contains(c.Command, table) {
			continue
		}
		var v any
		if json.Unmarshal([]byte(strings.Join(c.Lines, "\n")), &v) != nil {
			continue
		}
		walkJSON(v, func(m map[string]any) {
			name, _ := m["IndexName"].(string)
			if name == "" {
				name, _ = m["Name"].(string)
			}
			if name == index {
				d.wcu = math.Max(d.wcu, writeUnits(m))
				d.keys = keyAttributes(m)
				return
			}
			if name == "" {
				if _, isIndexList := m["GlobalSecondaryIndexes"]; isIndexList || m["TableName"] == table || m["Base"] != nil {
					if b, ok := m["Base"].(float64); ok {
						d.tableWCU = b
					} else if pt, ok := m["ProvisionedThroughput"].(map[string]any); ok {
						d.tableWCU = writeUnits(pt)
					}
				}
			}
		})
	}
	return d
}

// walkJSON calls f on every object of a decoded JSON value.
func walkJSON(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, c := range x {
			walkJSON(c, f)
		}
	case []any:
		for _, c := range x {
			walkJSON(c, f)
		}
	}
}

// writeUnits is an object's write capacity units: WriteCapacityUnits, in
// it or its ProvisionedThroughput, or a projection's WCU.
func writeUnits(m map[string]any) float64 {
	for _, k := range []string{"WriteCapacityUnits", "WCU", "Wcu", "wcu"} {
		if v, ok := m[k].(float64); ok {
			return v
		}
	}
	if pt, ok := m["ProvisionedThroughput"].(map[string]any); ok {
		return writeUnits(pt)
	}
	return 0
}

// keyAttributes are the attributes an index is keyed on: its KeySchema's
// AttributeName, or a projection's list of names.
func keyAttributes(m map[string]any) []string {
	var out []string
	for k, v := range m {
		if k != "KeySchema" && k != "Keys" {
			continue
		}
		list, _ := v.([]any)
		for _, e := range list {
			switch x := e.(type) {
			case string:
				out = append(out, x)
			case map[string]any:
				if a, ok := x["AttributeName"].(string); ok {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// indexChangeNames reports whether a change's text names the table, the
// index or one of the attributes the index is keyed on (as a word).
func indexChangeNames(text, table, index string, keys []string) bool {
	text = strings.ToLower(text)
	for _, w := range append([]string{table, index}, keys...) {
		w = strings.ToLower(strings.TrimSpace(w))
		if len(w) < 3 {
			continue
		}
		if regexp.MustCompile(`(^|[^\w])` + regexp.QuoteMeta(w) + `($|[^\w])`).MatchString(text) {
			return true
		}
	}
	return false
}

// indexWriterChange is the change from 15 minutes before the index's
// throttling began to 2 minutes after that names its table, the index or
// its keys: the latest such.
func indexWriterChange(changes []evidence.Change, x *indexSeries, keys []string) *evidence.Change {
	var best *evidence.Change
	for i := range changes {
		c := &changes[i]
		// A change to the table itself (adding the index, say) is the
		// trigger, not a workload writing to it.
		if c.Timestamp.Before(x.onset.Add(-15*time.Minute)) || c.Timestamp.After(x.onset.Add(2*time.Minute)) || c.Service == "" || c.Service == x.table {
			continue
		}
		if !indexChangeNames(c.Description, x.table, x.index, keys) {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// indexWriterLog is a workload other than the throttled callers whose log
// in the window shows it writing to the table (prefer the writer already
// named): who and the line.
func indexWriterLog(sets []LogSet, table string, callers []string, named string) (who, line string) {
	for _, set := range sets {
		s := orWord(set.Subject, subjectOfSource(set.Source))
		if s == "" || slices.Contains(callers, s) || named != "" && s != named && workloadOfName(s) != named && !strings.HasPrefix(s, named+"-") {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range []string{t.Last, t.Example} {
				if t.Incident > 0 && l != "" && strings.Contains(l, table) && matchLine(writeWordRE, l) && !matchLine(indexThrottleLineRE, l) {
					return s, l
				}
			}
		}
	}
	return "", ""
}

// throttledFromStart is the throttling of a series that throttles from
// its first point on, begun after the baseline's start (an index created
// within the window): its first point above zero and its peak.
func throttledFromStart(s evidence.Series, w Window) (shift, bool) {
	if len(s.Points) < 3 || !s.Points[0].T.After(w.BaselineStart) {
		return shift{}, false
	}
	var sh shift
	for _, p := range s.Points {
		if p.V <= 0 {
			continue
		}
		if sh.start.IsZero() {
			sh.start = p.T
		}
		if p.V > sh.peak {
			sh.peak, sh.peakAt = p.V, p.T
		}
	}
	sh.up = true
	return sh, !sh.start.IsZero()
}
