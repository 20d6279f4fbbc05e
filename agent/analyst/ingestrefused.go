package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A telemetry store refusing what is sent to it at one of its limits: Loki
// answers a push 429 or 400 and counts the lines in
// loki_discarded_samples_total by reason (per_stream_rate_limit,
// rate_limited, stream_limit, too_far_in_future,
// greater_than_max_sample_age, line_too_long), Mimir and Cortex refuse new
// series above a tenant's series limit (err-mimir-max-series-per-user) or
// rate. The store is up and answers; the shipper (Promtail, Fluent Bit,
// Vector, Alloy, Prometheus' remote_write) logs the refusal in the store's
// own words, and the data is missing from dashboards and searches. What
// made the store refuse is upstream: one application's stream logging far
// more (a debug log level), a label with a value per request (a raw path)
// that multiplies series, or a shipper reading local times as UTC so every
// entry lies hours in the future. The refusal names the stream or series,
// so the source is read from it; the count comes from the discard counter
// (or the operator's query of it).

// KindIngestRefused is a telemetry store refusing writes at a limit.
const KindIngestRefused Kind = "ingest_refused"

// refusalRule is one wording of a store's refusal, with the reason it
// counts it under.
type refusalRule struct {
	re     *regexp.Regexp
	reason string
}

var refusalRules = []refusalRule{
	{regexp.MustCompile(`(?i)per stream rate limit exceeded|per_stream_rate_limit`), "per_stream_rate_limit"},
	{regexp.MustCompile(`(?i)ingestion rate limit exceeded|exceeded the ingestion rate limit|err-mimir-tenant-max-ingestion-rate|reason[=:" ]+rate_limited`), "rate_limited"},
	{regexp.MustCompile(`(?i)maximum active stream limit exceeded|reason[=:" ]+stream_limit`), "stream_limit"},
	{regexp.MustCompile(`(?i)has timestamp too new|too far in(?:to)? the future|too_far_in_future|sample-timestamp-too-new`), "too_far_in_future"},
	{regexp.MustCompile(`(?i)has timestamp too old|greater_than_max_sample_age|entry too far behind|sample-timestamp-too-old`), "too_old"},
	{regexp.MustCompile(`(?i)max entry size '?\d+'? bytes exceeded|line_too_long`), "line_too_long"},
	{regexp.MustCompile(`(?i)per-user series limit(?: of \d+)? exceeded|err-mimir-max-series-per-user|per_user_series_limit`), "per_user_series_limit"},
	{regexp.MustCompile(`(?i)per-metric series limit(?: of \d+)? exceeded|err-mimir-max-series-per-metric|per_metric_series_limit`), "per_metric_series_limit"},
}

var (
	// refusalContextRE is what makes a line a store's refusal of a push
	// rather than a line that merely names a limit: a push, an HTTP
	// status, a sink or a discard.
	refusalContextRE = regexp.MustCompile(`(?i)\b(?:429|400)\b|push|send|batch|ingest|discard|drop|reject|sink|remote|exceed|loki|mimir|cortex`)
	// streamSelectorRE is the stream or series a refusal names:
	// stream '{app="ledger-sync", ...}', series {__name__="...", ...}.
	streamSelectorRE = regexp.MustCompile(`(?:stream|series)\s*'?(\{[^}]*\})`)
	selectorLabelRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"`)
	// tooNewAtRE is the entry's own time in a "timestamp too new/old"
	// refusal: "has timestamp too new: 2026-11-27 15:01:40.914 +0000 UTC".
	tooNewAtRE = regexp.MustCompile(`timestamp too (?:new|old):\s*(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?)`)
	// refusalLimitRE is the limit a refusal states.
	refusalLimitRE = regexp.MustCompile(`(?i)\(limit: ([^)]+)\)|series limit of (\d+)|limit,? set to ([0-9][^ ,]*(?: [a-z/]+)?)`)
	// tenantRE is the tenant a refusal names.
	tenantRE = regexp.MustCompile(`(?i)(?:user|tenant)[= ]"?([a-zA-Z0-9_-]+)`)
	// discardCountRE is a reason with its count in a query's output:
	// ["fake","per_stream_rate_limit","18240"], {reason="rate_limited"} 1234.
	discardCountRE = regexp.MustCompile(`([a-z_]+)"?[,}\s=:]+"?\s*([0-9]+(?:\.[0-9]+)?)"?\s*\]?\s*$`)
	// timestampStageRE is a shipper's stage setting an entry's time from
	// the line: Promtail's timestamp stage, Alloy's stage.timestamp,
	// Fluent Bit's Time_Key/Time_Format, Vector's parse_timestamp.
	timestampStageRE = regexp.MustCompile(`(?i)^\s*-?\s*(?:timestamp:|stage\.timestamp|time_format\b|time_key\b|parse_timestamp)`)
	timeLocationRE   = regexp.MustCompile(`(?i)\blocation\s*[:=]|time_offset|time_zone|timezone|%z|Z07:00|-0700|MST`)
	// appTimeZoneRE is a process' time zone set by its environment.
	appTimeZoneRE = regexp.MustCompile(`(?:\bTZ=|"name":\s*"TZ",\s*"value":\s*")([A-Za-z]+/[A-Za-z_]+)`)
	// highCardinalityLabelRE is a TSDB status' label with its count of
	// values: {"name":"path","value":89418}.
	labelCountRE = regexp.MustCompile(`\{"name":"([^"]+)","value":(\d+)\}`)
	// shipperNames are the log and metric shippers, by the name their pods
	// and releases carry.
	shipperNames = []string{"promtail", "fluent-bit", "fluentbit", "fluentd", "vector", "alloy", "grafana-agent", "otel-collector", "opentelemetry-collector", "prometheus", "filebeat", "logstash"}
	// storeNames are the stores that refuse.
	storeNames = []string{"loki", "mimir", "cortex", "thanos"}
)

// refusalChange is the kind of change that makes a store refuse for each
// reason: the timestamps' parsing, a source's volume, the labels.
var refusalChange = map[string]*regexp.Regexp{
	"too_far_in_future":       regexp.MustCompile(`(?i)timestamp|time ?zone|\btz\b|\btime\b|pipeline|stage|parse`),
	"too_old":                 regexp.MustCompile(`(?i)timestamp|time ?zone|\btz\b|\btime\b|pipeline|stage|parse|backfill|replay`),
	"per_stream_rate_limit":   regexp.MustCompile(`(?i)log.?level|debug|verbose|\btrace\b|logging|log volume`),
	"line_too_long":           regexp.MustCompile(`(?i)log.?level|debug|verbose|logging|multiline|payload|body`),
	"rate_limited":            regexp.MustCompile(`(?i)log.?level|debug|verbose|logging|ingestion|rate|limit`),
	"stream_limit":            regexp.MustCompile(`(?i)label|cardinality|stream`),
	"per_user_series_limit":   regexp.MustCompile(`(?i)label|metric|tag|path|cardinality|histogram|instrument|series`),
	"per_metric_series_limit": regexp.MustCompile(`(?i)label|metric|tag|path|cardinality|histogram|instrument|series`),
}

var ingestRefused = &mechanism{
	kind:           KindIngestRefused,
	class:          classCause,
	label:          "a telemetry store refusing writes at a limit",
	detect:         detectIngestRefused,
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		re := refusalChange[h.fact("reason")]
		if re == nil || !matchLine(re, changeText(c)) {
			return false
		}
		// The timestamps are parsed by the shipper, the volume and the
		// labels are the source's.
		switch h.fact("reason") {
		case "too_far_in_future", "too_old":
			return c.Subject == h.fact("shipper") || c.Subject == h.fact("store")
		case "rate_limited":
			return true
		}
		return c.Subject == h.Subject || c.Subject == h.fact("store")
	},
	refines: []Kind{KindThrottling, KindLogErrors},
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind != KindThrottling && f.Kind != KindLogErrors && f.Kind != KindErrorRate {
			return false
		}
		for _, n := range []string{h.fact("store"), h.fact("shipper")} {
			if n != "" && (strings.HasPrefix(f.Subject, n) || slices.ContainsFunc(f.Related, func(r string) bool { return strings.HasPrefix(r, n) })) {
				return true
			}
		}
		return false
	},
	describe:  describeIngestRefused,
	recommend: recommendIngestRefused,
}

// refusalSeen is one refusal read from a line.
type refusalSeen struct {
	reason, line, from string
	at                 time.Time
	labels             map[string]string
}

// detectIngestRefused reads the refusals of a store from the lines of
// logs and transcripts, and its discard counters, and names the source
// whose stream or series is refused.
func detectIngestRefused(ev *Gathered, _ []Finding) []Finding {
	var seen []refusalSeen
	any := regexp.MustCompile(`(?i)limit|timestamp too|too_far|series|max entry size|sample_age|discard`)
	for _, l := range eventLines(ev, any) {
		reason := refusalReason(l.Text)
		if reason == "" || !matchLine(refusalContextRE, l.Text) {
			continue
		}
		r := refusalSeen{reason: reason, line: l.Text, from: l.From, at: l.Time}
		if t := evidence.ParseLogTime(l.Text, ev.Window.End); !t.IsZero() {
			r.at = t
		}
		if m := findSubmatch(streamSelectorRE, strings.ReplaceAll(l.Text, `\"`, `"`)); m != nil {
			r.labels = map[string]string{}
			for _, lm := range findAllSubmatch(selectorLabelRE, m[1], -1) {
				r.labels[lm[1]] = lm[2]
			}
		}
		seen = append(seen, r)
	}
	// The discard counters by reason, as gathered (rates).
	counted := map[string]float64{}
	var firstCounted time.Time
	for name, s := range metricSeries(ev.Metrics) {
		if !strings.Contains(name, "discarded_samples") || s.Labels["reason"] == "" {
			continue
		}
		reason := normalReason(s.Labels["reason"])
		var sum float64
		for i := 1; i < len(s.Points); i++ {
			p, q := s.Points[i-1], s.Points[i]
			if q.V > 0 && firstCounted.IsZero() {
				firstCounted = q.T
			}
			if q.T.After(ev.Window.End.Add(-time.Hour)) && !q.T.After(ev.Window.End) {
				sum += q.V * q.T.Sub(p.T).Seconds()
			}
		}
		counted[reason] += sum
	}
	if len(seen) == 0 {
		return nil
	}
	// The reason refused most often.
	byReason := map[string]int{}
	for _, r := range seen {
		byReason[r.reason]++
	}
	reason := byCount(byReason)[0]
	var mine []refusalSeen
	for _, r := range seen {
		if r.reason == reason {
			mine = append(mine, r)
		}
	}
	first := mine[0]
	for _, r := range mine {
		if !r.at.IsZero() && (first.at.IsZero() || r.at.Before(first.at)) {
			first = r
		}
	}
	store := refusalStore(ev, mine)
	shipper := refusalShipper(mine)
	source, label, labelValues := refusalSource(ev, reason, mine)
	f := Finding{Kind: KindIngestRefused, Subject: orWord(source, store), Time: first.at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	if f.Time.IsZero() {
		f.Time = firstCounted
	}
	f.setFact("reason", reason)
	f.setFact("store", store)
	f.setFact("shipper", shipper)
	f.setFact("line", first.line)
	f.setFact("source", source)
	f.setFact("label", label)
	f.setFact("label_values", labelValues)
	if m := findSubmatch(refusalLimitRE, first.line); m != nil {
		f.setFact("limit", orWord(m[1], orWord(m[2], m[3])))
	}
	if m := findSubmatch(tenantRE, first.line); m != nil {
		f.setFact("tenant", m[1])
	}
	f.setFact("refusals", strconv.Itoa(len(mine)))
	// The count: the operator's query of the counter first, else the
	// gathered counter over the last hour.
	if n := queriedDiscards(ev, reason); n != "" {
		f.setFact("count", n)
	} else if n := counted[reason]; n >= 1 {
		f.setFact("count", strconv.FormatFloat(n, 'f', 0, 64))
	}
	var affected []string
	for _, n := range []string{source, store, shipper} {
		if n != "" && !slices.Contains(affected, n) {
			affected = append(affected, n)
		}
	}
	f.setFact("affected", strings.Join(affected, ", "))
	// A refusal that names no source (a tenant's rate as a whole) says
	// where data is lost, not why: a lead, not a root.
	if source == "" {
		f.Weight = 0.4
	}
	for _, n := range []string{store, shipper} {
		if n != "" && n != f.Subject {
			f.Related = append(f.Related, n)
		}
	}
	// A timestamp refusal: how far the entries' times lie from when they
	// were sent, and what set them.
	if reason == "too_far_in_future" || reason == "too_old" {
		timestampFacts(ev, &f, mine, source)
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s refuses %d writes (%s): %s", orWord(store, "the store"), len(mine), reason, quote(truncate(ReadableLine(first.line), 260), 270)))
	if n := f.fact("count"); n != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s entries discarded for %s in the last hour (the discard counter)", n, reason))
	}
	if source != "" {
		e := fmt.Sprintf("the refused %s are %s's", refusedUnit(reason), source)
		if label != "" {
			e += fmt.Sprintf("; the label %s has %s values", label, labelValues)
		}
		f.Evidence = append(f.Evidence, e)
	}
	if s := f.fact("stage"); s != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s sets the entries' time from the line without a time zone: %s", orWord(shipper, "the shipper"), quote(s, 160)))
	}
	f.Summary = fmt.Sprintf("%s refuses %s's %s: %s", orWord(store, "the store"), orWord(source, "the tenant"), refusedUnit(reason), reason)
	return []Finding{f}
}

// refusalReason is the reason a line refuses under, "" when it refuses
// nothing.
func refusalReason(line string) string {
	for _, r := range refusalRules {
		if matchLine(r.re, line) {
			return r.reason
		}
	}
	return ""
}

// normalReason maps a counter's reason label to refusalRules' reasons.
func normalReason(r string) string {
	switch r {
	case "greater_than_max_sample_age", "too_far_behind", "out_of_order":
		return "too_old"
	}
	return r
}

func refusedUnit(reason string) string {
	if strings.Contains(reason, "series") {
		return "series"
	}
	return "log lines"
}

// refusalStore names the store that refused: from the line's own words
// (err-mimir-…, a loki host), else from where it was read.
func refusalStore(ev *Gathered, rs []refusalSeen) string {
	for _, r := range rs {
		l := strings.ToLower(r.line + " " + r.from)
		for _, s := range storeNames {
			if strings.Contains(l, s) {
				return s
			}
		}
	}
	for name := range metricSeries(ev.Metrics) {
		switch {
		case strings.HasPrefix(name, "loki_discarded"):
			return "loki"
		case strings.HasPrefix(name, "cortex_discarded"):
			return "mimir"
		}
	}
	return ""
}

// refusalShipper names the shipper whose log carries the refusal.
func refusalShipper(rs []refusalSeen) string {
	for _, r := range rs {
		from := strings.ToLower(r.from)
		for _, s := range shipperNames {
			if strings.Contains(from, s) {
				if s == "fluentbit" {
					s = "fluent-bit"
				}
				return s
			}
		}
	}
	return ""
}

// refusalSource is the application whose streams or series are refused:
// for a series limit, the one whose series carry the label with the most
// values (a TSDB status' labelValueCountByLabelName); else the one the
// refusals name most often.
func refusalSource(ev *Gathered, reason string, rs []refusalSeen) (source, label, values string) {
	if strings.Contains(reason, "series") || reason == "stream_limit" {
		label, values = topLabel(ev)
	}
	count := map[string]int{}
	for _, r := range rs {
		if label != "" {
			if _, ok := r.labels[label]; !ok {
				continue
			}
		}
		for _, k := range []string{"app", "app_kubernetes_io_name", "service_name", "service", "container", "job"} {
			if v := r.labels[k]; v != "" {
				count[v]++
				break
			}
		}
	}
	best := 0
	for a, n := range count {
		if n > best || n == best && a < source {
			source, best = a, n
		}
	}
	// A tenant-wide limit names no stream.
	if reason == "rate_limited" && best < 2 {
		return "", label, values
	}
	return source, label, values
}

// topLabel is the label with the most values of a TSDB status the
// operator printed, when it dwarfs the others.
func topLabel(ev *Gathered) (string, string) {
	for _, c := range ev.Commands {
		text := strings.Join(c.Lines, "\n")
		if !strings.Contains(text, `"name":`) || !strings.Contains(c.Command, "tsdb") && !strings.Contains(text, "labelValueCount") {
			continue
		}
		for _, l := range c.Lines {
			ms := findAllSubmatch(labelCountRE, l, -1)
			if len(ms) < 2 || strings.Contains(ms[0][1], "_") && strings.HasSuffix(ms[0][1], "_bucket") {
				continue
			}
			a, _ := strconv.Atoi(ms[0][2])
			b, _ := strconv.Atoi(ms[1][2])
			if a >= 10*b && a >= 1000 {
				return ms[0][1], ms[0][2]
			}
		}
	}
	return "", ""
}

// queriedDiscards is the count of discards for reason in the output of
// an operator's query of a discard counter.
func queriedDiscards(ev *Gathered, reason string) string {
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "discarded_samples") {
			continue
		}
		for _, l := range c.Lines {
			m := findSubmatch(discardCountRE, l)
			if m == nil || normalReason(m[1]) != reason {
				continue
			}
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				return strconv.FormatFloat(v, 'f', 0, 64)
			}
		}
	}
	return ""
}

// timestampFacts reads how far the refused entries' times lie from when
// they were sent, the shipper's stage that sets them and the source's
// time zone.
func timestampFacts(ev *Gathered, f *Finding, rs []refusalSeen, source string) {
	for _, r := range rs {
		m := findSubmatch(tooNewAtRE, r.line)
		if m == nil || r.at.IsZero() {
			continue
		}
		at, err := time.Parse("2006-01-02 15:04:05", strings.Replace(m[1][:19], "T", " ", 1))
		if err != nil {
			continue
		}
		d := at.Sub(r.at.Truncate(time.Second))
		if d < 0 {
			d = -d
		}
		if h := d.Round(30 * time.Minute); h >= 30*time.Minute && (d-h).Abs() < 2*time.Minute {
			f.setFact("offset", strings.TrimSuffix(h.String(), "0s"))
		}
		break
	}
	for _, c := range ev.Commands {
		for i, l := range c.Lines {
			if !matchLine(timestampStageRE, l) {
				continue
			}
			block := strings.Join(c.Lines[i:min(len(c.Lines), i+5)], "\n")
			if !matchLine(timeLocationRE, block) {
				f.setFact("stage", strings.Join(strings.Fields(block), " "))
			}
		}
		if source == "" || !strings.Contains(c.Command+" "+c.Target, source) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(appTimeZoneRE, l); m != nil {
				f.setFact("time_zone", m[1])
			}
		}
	}
}

func describeIngestRefused(h *Hypothesis, sc Scope) string {
	store := orWord(h.fact("store"), "the store")
	reason := h.fact("reason")
	source := h.fact("source")
	if h.fact("line") == "" {
		return fmt.Sprintf("%s refuses what %s sends to it at a limit", store, h.Subject)
	}
	d := fmt.Sprintf("%s refuses what is sent to it at a limit (%s): %s", store, reason, quote(truncate(ReadableLine(h.fact("line")), 240), 250))
	if n := h.fact("count"); n != "" {
		d += fmt.Sprintf("; %s %s were discarded in the last hour", n, refusedUnit(reason))
	}
	switch reason {
	case "too_far_in_future", "too_old":
		dir := "in the future"
		if reason == "too_old" {
			dir = "too old"
		}
		d += fmt.Sprintf(". The entries' own timestamps lie too far %s", dir)
		if o := h.fact("offset"); o != "" {
			d += fmt.Sprintf(" (%s off the time they were sent)", o)
		}
		d += fmt.Sprintf(": %s sets each entry's time from the time written in the line, and", orWord(h.fact("shipper"), "the shipper"))
		if tz := h.fact("time_zone"); tz != "" {
			d += fmt.Sprintf(" %s writes its local time (TZ=%s) without a zone, which is read as UTC —", orWord(source, "the application"), tz)
		} else {
			d += " a local time written without a zone is read as UTC —"
		}
		d += " a time zone mismatch in the shipper's timestamp stage"
		if s := h.fact("stage"); s != "" {
			d += fmt.Sprintf(" (%s, no location set)", quote(s, 160))
		}
		d += fmt.Sprintf("; %s itself logs normally, its lines never reach %s", orWord(source, "the application"), store)
	case "per_stream_rate_limit", "line_too_long", "rate_limited":
		if source != "" {
			d += fmt.Sprintf(". The refused lines are %s's: its stream writes more than the %s limit allows", source, strings.ReplaceAll(reason, "_", " "))
			if l := h.fact("limit"); l != "" {
				d += fmt.Sprintf(" (%s)", l)
			}
			d += fmt.Sprintf(", so its lines above the limit are dropped; %s is not short of capacity, one source outgrew its limit", store)
		} else {
			d += fmt.Sprintf(". The tenant sends more than its ingestion rate limit allows")
			if l := h.fact("limit"); l != "" {
				d += fmt.Sprintf(" (%s)", l)
			}
		}
	case "per_user_series_limit", "per_metric_series_limit", "stream_limit":
		d += fmt.Sprintf(". The tenant's active series (streams) reached %s's series limit", store)
		if l := h.fact("limit"); l != "" {
			d += fmt.Sprintf(" (%s)", l)
		}
		d += ", so every new series of every writer is refused, not only the offender's: the gaps show for many services"
		if source != "" {
			d += fmt.Sprintf("; the series that filled it are %s's", source)
			if l := h.fact("label"); l != "" {
				d += fmt.Sprintf(": its label %s has %s values, a label cardinality explosion (a value per request)", l, h.fact("label_values"))
			} else {
				d += " (label cardinality)"
			}
		}
	}
	return d
}

func recommendIngestRefused(h *Hypothesis, sc Scope, r *recommender) {
	store := orWord(h.fact("store"), "the store")
	source := orWord(h.fact("source"), "the source")
	switch h.fact("reason") {
	case "too_far_in_future", "too_old":
		r.high("Set the time zone the lines are written in on %s's timestamp stage (Promtail's location, Fluent Bit's Time_Offset, Vector's timezone), or have %s log times with their offset", orWord(h.fact("shipper"), "the shipper"), source)
		r.med("Replay or re-ship the refused lines once the times are read right")
	case "per_user_series_limit", "per_metric_series_limit", "stream_limit":
		r.high("Drop or bound the label with a value per request in %s (a route template instead of the raw path) or drop it with metric_relabel_configs", source)
		r.med("Raise %s's series limit for the tenant only as a stopgap until the label is fixed", store)
	default:
		r.high("Bring %s's log volume back down (its log level) or split its stream with another label", source)
		r.med("Raise %s's per-stream or tenant rate limit only if the volume is expected", store)
	}
	r.low("Alert on %s's discarded samples by reason and tenant", store)
}
