package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A latency question ("where is the time going?") over request logs that
// carry each request's time per dependency (`total_ms=2349 db_ms=14
// tax_engine_ms=2272`, `db=12ms pricing=2300ms`, `upstream_time=`) is
// answered from the numbers: the dependency that takes most of each
// request's time now, and whose time grew against the requests before the
// slowdown (or the baseline). The others, unchanged, are ruled out by the
// same numbers.

// KindSlowCall is a dependency whose calls take the time of a caller's
// requests, read from the caller's request log.
const KindSlowCall Kind = "slow_call"

var slowCall = &mechanism{
	kind:   KindSlowCall,
	class:  classDependency,
	label:  "slow calls to a dependency (per-call times in the caller's log)",
	detect: detectTimeBreakdown,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindInfraChange || c.Kind == KindFeatureFlag)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the time of %s's requests goes to its calls to %s: %s takes %s of %s per request (%s, median of %s requests)",
			h.fact("caller"), h.Subject, h.fact("field"), h.fact("now"), h.fact("total_now"), h.fact("share"), h.fact("requests"))
		if b := h.fact("before"); b != "" {
			d += fmt.Sprintf(", up from %s before %s (a request then took %s in all)", b, h.fact("since"), h.fact("total_before"))
		}
		d += h.wrapped("; the other calls are unchanged (", "others", ")")
		d += h.quoteClause(": ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Find why %s answers %s slowly (its own latency, load, recent change); trace one slow call", h.Subject, h.fact("caller"))
		r.med("Put a tight timeout, a cache or a fallback on %s's calls to %s", h.fact("caller"), h.Subject)
		r.low("Export each dependency's call time as a histogram metric and alert on its p99")
	},
}

var (
	// Fields that carry a duration: a unit in the key (db_ms, took_s,
	// upstream_time) or in the value (pricing=2300ms).
	durKeyRE   = regexp.MustCompile(`^(.*?)[_.-](ms|millis|msec|us|micros|ns|s|sec|secs|seconds)$|^(.*?)[_.-]?(time|duration|latency|elapsed|took)$`)
	camelDurRE = regexp.MustCompile(`^(.*?[a-z0-9])(Ms|Millis|Micros|Us|Ns|Sec|Secs|Seconds|Time|Duration|Latency)$`)
	durKVRE    = regexp.MustCompile(`(?:^|[\s{,])"?([A-Za-z][\w.-]*)"?\s*[=:]\s*"?(\d+(?:\.\d+)?)(ms|s|us|µs|ns|m)?"?`)
	// Component names that stand for the whole request.
	totalNames = map[string]bool{"": true, "total": true, "duration": true, "elapsed": true, "latency": true, "request": true, "req": true, "response": true,
		"rt": true, "took": true, "time": true, "overall": true, "handler": true, "request_time": true, "response_time": true, "total_time": true, "server": true, "e2e": true}
	// Fields that are no call: sizes, counts, timestamps.
	notCallNames = map[string]bool{"ts": true, "at": true, "timestamp": true, "start": true, "end": true, "started": true, "date": true, "ttl": true, "timeout": true, "deadline": true, "retry_after": true, "interval": true, "uptime": true, "up": true, "age": true,
		// A difference between clocks or from an expected moment (a pool's
		// housekeeper "delta=33s", a replica's lag, a clock's skew).
		"delta": true, "lag": true, "skew": true, "drift": true, "offset": true, "jitter": true,
		// The span a stats line sums over ("window=60s", "period=1m").
		"window": true, "period": true}
	// A statistic over many requests ("db_p99_ms", "upstream_avg_ms",
	// "latency_max"): a stats line, no one request's call.
	aggregateKeyRE = regexp.MustCompile(`(?i)(^|[._-])(p\d{2,3}|avg|mean|median|max|min|pct\d*|percentile\d*)([._-]|$)`)
	durationAskRE  = regexp.MustCompile(`(?i)\b(slow|slower|latenc|p(?:50|75|90|95|99|999)\b|percentile|takes? (?:too )?long|took|duration|response time|timing|sluggish|delay|where is the time|time (?:is )?(?:going|spent))`)
)

// durationLinePattern is the pattern of request lines carrying durations,
// for a latency question ("" for other questions).
func durationLinePattern(sc Scope) string {
	if !matchLine(durationAskRE, sc.Message+" "+sc.Hint+" "+sc.Alert) {
		return ""
	}
	return `(?i)[a-z][\w.-]*(?:_ms|_millis|_us|_seconds|_secs|_sec|_s|_time|_duration|_latency|Ms|Millis|Time|Duration)"?\s*[=:]\s*"?\d|[a-z][\w.-]*"?\s*[=:]\s*"?\d+(?:\.\d+)?\s*(?:ms|s|us)\b`
}

var (
	// Words that say a field is a time, not what took it.
	timeWords = map[string]bool{"took": true, "roundtrip": true, "rtt": true, "call": true, "calls": true, "wait": true, "waited": true, "time": true,
		"latency": true, "duration": true, "elapsed": true, "spent": true, "ms": true}
	// Words that name the request as a whole.
	requestWords = map[string]bool{"http": true, "resp": true, "response": true, "request": true, "req": true, "server": true, "handler": true,
		"total": true, "overall": true, "grpc": true, "rpc": true, "e2e": true, "all": true, "end": true}
)

// nginxTimes are the short names proxies log times under, in seconds
// ("=" stands for the whole request).
var nginxTimes = map[string]string{"rt": "=", "urt": "upstream", "uct": "upstream_connect", "uht": "upstream_header"}

// callName is what a duration field's name says took the time: time words
// dropped (es_took, es_roundtrip → es), "" for the whole request
// (http.resp.took, total, request_time).
func callName(name string) string {
	toks := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '.' || r == '-' })
	for len(toks) > 0 && timeWords[toks[len(toks)-1]] {
		toks = toks[:len(toks)-1]
	}
	var kept []string
	for _, t := range toks {
		if !requestWords[t] {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 || totalNames[strings.Join(toks, "_")] {
		return ""
	}
	return strings.Join(kept, "_")
}

// callTimes reads the durations of one request line, in seconds, by the
// name of what took them ("" for the whole request).
func callTimes(line string) map[string]float64 {
	out := map[string]float64{}
	text := MiningText(line)
	for _, ix := range durKVRE.FindAllStringSubmatchIndex(text, -1) {
		// The number must end the value: a date (2023-01-29), a time
		// (21:30) or an identifier is no duration.
		if end := ix[1]; end < len(text) && !strings.ContainsRune(" \t,;)]}\"'", rune(text[end])) {
			continue
		}
		m := make([]string, 4)
		for g := 1; g <= 3; g++ {
			if ix[2*g] >= 0 {
				m[g] = text[ix[2*g]:ix[2*g+1]]
			}
		}
		key, val, unit := strings.ToLower(m[1]), m[2], m[3]
		name, suffix := key, ""
		if nginxTimes[key] != "" {
			name, suffix = strings.TrimSuffix(nginxTimes[key], "="), "time"
		} else if km := findSubmatch(camelDurRE, m[1]); km != nil {
			name, suffix = strings.ToLower(km[1]), strings.ToLower(km[2])
		} else if km := findSubmatch(durKeyRE, key); km != nil {
			name, suffix = km[1]+km[3], km[2]+km[4]
		}
		if suffix != "" {
			name = strings.Trim(name, "_.-")
			switch suffix {
			case "ms", "millis", "msec":
				unit = orWord(unit, "ms")
			case "us", "micros":
				unit = orWord(unit, "us")
			case "ns":
				unit = orWord(unit, "ns")
			case "s", "sec", "secs", "seconds":
				unit = orWord(unit, "s")
			default:
				// upstream_time=0.083, request_time=0.085: seconds unless
				// the value says otherwise.
				unit = orWord(unit, "s")
			}
		} else if unit == "" {
			continue // a number without a unit is no duration
		}
		if notCallNames[name] || notCallNames[key] || aggregateKeyRE.MatchString(key) {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch unit {
		case "ms":
			v /= 1000
		case "us", "µs":
			v /= 1e6
		case "ns":
			v /= 1e9
		case "m":
			v *= 60
		}
		if v > 86400 {
			continue // not a request's time
		}
		name = callName(name)
		if totalNames[key] {
			name = ""
		}
		// es_took_ms and es_roundtrip_ms are both the es call: the
		// longer is what the caller waited.
		if v > out[name] {
			out[name] = v
		}
	}
	return out
}

type timedRequest struct {
	at    time.Time
	times map[string]float64
	total float64
	text  string
}

// detectTimeBreakdown answers a latency question from the per-call times
// request lines carry.
func detectTimeBreakdown(ev *Gathered, _ []Finding) []Finding {
	if durationLinePattern(ev.Scope) == "" {
		return nil
	}
	var sets []*LogSet
	for i := range ev.Logs {
		if len(ev.Logs[i].Lines) > 0 {
			sets = append(sets, &ev.Logs[i])
		}
	}
	// The service asked about speaks for itself when its log has the
	// numbers; otherwise any log that has them.
	if svc := ev.Scope.Service; svc != "" {
		var own []*LogSet
		for _, s := range sets {
			if strings.EqualFold(s.Subject, svc) {
				own = append(own, s)
			}
		}
		if len(own) > 0 {
			sets = own
		}
	}
	var out []Finding
	for _, set := range sets {
		if f, ok := breakdown(ev, set); ok {
			out = append(out, f)
		}
	}
	return out
}

// breakdown finds the call that takes a set's request time.
func breakdown(ev *Gathered, set *LogSet) (Finding, bool) {
	var reqs []timedRequest
	for _, l := range set.Lines {
		ts := callTimes(l.Text)
		r := timedRequest{at: l.Time, times: map[string]float64{}, text: l.Text}
		sum := 0.0
		for k, v := range ts {
			if k != "" {
				r.times[k] = v
				sum += v
			}
		}
		if len(r.times) == 0 {
			continue
		}
		r.total = sum
		if t, ok := ts[""]; ok {
			r.total = t
		}
		reqs = append(reqs, r)
	}
	if len(reqs) < 6 {
		return Finding{}, false
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].at.Before(reqs[j].at) })
	// A call needs to be seen in most requests to speak for them.
	seen := map[string]int{}
	for _, r := range reqs {
		for k := range r.times {
			seen[k]++
		}
	}
	var calls []string
	for k, n := range seen {
		if n*2 >= len(reqs) {
			calls = append(calls, k)
		}
	}
	sort.Strings(calls)
	if len(calls) == 0 {
		return Finding{}, false
	}
	var recent []timedRequest
	for _, r := range reqs {
		if !r.at.Before(ev.Window.Start) {
			recent = append(recent, r)
		}
	}
	if len(recent) < 3 {
		return Finding{}, false
	}
	med := func(rs []timedRequest, k string) float64 {
		var vs []float64
		for _, r := range rs {
			if k == "" {
				vs = append(vs, r.total)
			} else if v, ok := r.times[k]; ok {
				vs = append(vs, v)
			}
		}
		return median(vs)
	}
	totalNow := med(recent, "")
	// The call that takes the most now.
	top, topNow := "", 0.0
	for _, k := range calls {
		if v := med(recent, k); v > topNow {
			top, topNow = k, v
		}
	}
	if topNow < 0.2 || totalNow <= 0 || topNow < 0.5*totalNow {
		return Finding{}, false
	}
	// Before: the requests before the call's time shifted up, else the
	// baseline's requests.
	var before []timedRequest
	var since time.Time
	series := evidence.Series{}
	for _, r := range reqs {
		series.Points = append(series.Points, evidence.Point{T: r.at, V: r.times[top]})
	}
	if cp, ok := analysis.FindChangePoint(series, 3, 4); ok && cp.Direction == analysis.Up {
		since = cp.Time
		for _, r := range reqs {
			if r.at.Before(cp.Time) {
				before = append(before, r)
			}
		}
	} else {
		for _, r := range reqs {
			if r.at.Before(ev.Window.Start) {
				before = append(before, r)
			}
		}
	}
	f := Finding{Kind: KindSlowCall, Subject: callSubject(ev, set, top), Object: set.Origin + " " + set.Source, Namespace: set.Namespace,
		Time: recent[0].at, Severity: SevWarning, Weight: 0.8, Source: set.Origin, Related: []string{set.Subject}}
	f.setFact("caller", set.Subject)
	f.setFact("field", top)
	f.setFact("now", seconds(topNow))
	f.setFact("total_now", seconds(totalNow))
	f.setFact("share", fmt.Sprintf("%.0f%%", 100*topNow/totalNow))
	f.setFact("requests", strconv.Itoa(len(recent)))
	slowest := recent[0]
	for _, r := range recent {
		if r.times[top] > slowest.times[top] {
			slowest = r
		}
	}
	f.setFact("line", slowest.text)
	if len(before) >= 3 {
		topBefore := med(before, top)
		// The call's time did not grow: it is where the time always went,
		// not what changed.
		if topNow < 2*topBefore || topNow-topBefore < 0.1 {
			f.Weight = 0.5
		} else {
			f.Weight = 0.9
			f.setFact("before", seconds(topBefore))
			f.setFact("total_before", seconds(med(before, "")))
			if since.IsZero() {
				since = ev.Window.Start
			}
			f.setFact("since", ts(since))
			f.Time = since
		}
		var others []string
		for _, k := range calls {
			if k == top {
				continue
			}
			b, n := med(before, k), med(recent, k)
			if n < 2*b+0.05 {
				others = append(others, fmt.Sprintf("%s %s", k, seconds(n)))
			}
		}
		f.setFact("others", strings.Join(others, ", "))
	}
	f.Evidence = []string{
		fmt.Sprintf("%s %s: %s takes %s of %s per request (median of %d requests from %s)", set.Origin, set.Source, top, seconds(topNow), seconds(totalNow), len(recent), ts(recent[0].at)),
		fmt.Sprintf("%s %s logged: %s", set.Origin, set.Source, quote(ReadableLine(slowest.text), 240)),
	}
	if b := f.fact("before"); b != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s took %s per request before %s (%d requests); the others unchanged: %s", top, b, f.fact("since"), len(before), orWord(f.fact("others"), "none")))
	}
	f.Summary = fmt.Sprintf("%s's requests spend %s of %s in %s", set.Subject, seconds(topNow), seconds(totalNow), f.Subject)
	return f, true
}

var nonAlnumRE = regexp.MustCompile(`[^a-z0-9]+`)

// shortSystemNames expands the short names request logs give well-known
// systems.
var shortSystemNames = map[string]string{"es": "elasticsearch", "elastic": "elasticsearch", "opensearch": "elasticsearch", "pg": "postgresql", "postgres": "postgresql",
	"psql": "postgresql", "mongo": "mongodb", "rabbit": "rabbitmq", "amqp": "rabbitmq", "mq": "rabbitmq", "memcache": "memcached", "mc": "memcached"}

// callSubject names the dependency a duration field is about: a known
// service, workload or change subject whose name matches the field
// (tax_engine → tax-engine, pricing → pricing-service), or a host the
// caller's log names; else the field with dashes.
func callSubject(ev *Gathered, set *LogSet, field string) string {
	norm := func(s string) string { return strings.Trim(nonAlnumRE.ReplaceAllString(strings.ToLower(s), "-"), "-") }
	want := norm(field)
	var known []string
	for _, c := range ev.Changes {
		known = append(known, c.Service)
	}
	for _, d := range ev.K8s.Deployments {
		known = append(known, d.Name)
	}
	for _, s := range ev.K8s.Services {
		known = append(known, s.Service.Name)
	}
	for _, l := range ev.Logs {
		known = append(known, l.Subject)
	}
	for _, t := range set.Templates {
		if d := DependencyName(DependencyTarget(t.Example)); d != "" {
			known = append(known, d)
		}
	}
	// Short names of well-known systems (es, pg, mq).
	if full := shortSystemNames[want]; full != "" {
		for _, k := range known {
			if norm(k) == full {
				return k
			}
		}
		return full
	}
	for _, k := range known {
		n := norm(k)
		if n == "" {
			continue
		}
		if n == want {
			return k
		}
		for _, suf := range []string{"-service", "-svc", "-api", "-server"} {
			if strings.TrimSuffix(n, suf) == want {
				return k
			}
		}
	}
	return want
}
