package analyst

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindFunctionScaleOut: a serverless function (AWS Lambda) scaled out to
// hundreds of concurrent executions, each opening its own connection to
// a database, and took the database's connection slots: its other
// clients are refused ("too many clients", "remaining connection slots
// are reserved"). A function scales with what it is fed: a queue's event
// source mapping without a maximum concurrency (ScalingConfig
// MaximumConcurrency) runs as many executions as the backlog allows, up to
// the account's concurrency, whatever the database behind it holds. The
// database is up and answers; it has no slot left.
const KindFunctionScaleOut Kind = "function_scale_out"

var functionScaleOut = &mechanism{
	kind:    KindFunctionScaleOut,
	class:   classCause,
	label:   "serverless function scaled out over a database's connections",
	detect:  detectFunctionScaleOut,
	related: affectsRelated,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.relates(h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the serverless function %s scaled out from %s to %s concurrent executions at %s, each opening its own connection to %s: the database's connections rose from %s to %s and it refuses new ones, so its other clients fail (too many connections: %s)",
			h.Subject, h.fact("before"), h.fact("peak"), h.fact("at"), orWord(h.fact("server"), "the database"), orWord(h.fact("db_before"), "their usual count"), orWord(h.fact("db_peak"), "its maximum"), quote(ReadableLine(h.fact("refusal")), 160))
		d += h.clause("; refused: ", "victims")
		if m := h.fact("mapping"); m != "" {
			d += "; nothing bounds its concurrency: " + m
		}
		d += " — the database is up; reboot would only drop the connections the function takes again"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Cap the concurrency of %s now: set MaximumConcurrency on its event source mapping (ScalingConfig) or a reserved concurrency on the function, below what %s can hold beside its other clients", h.Subject, orWord(h.fact("server"), "the database"))
		r.med("Put a connection pooler (RDS Proxy, PgBouncer) between %s and %s, and give the function's database role a CONNECTION LIMIT", h.Subject, orWord(h.fact("server"), "the database"))
		r.low("Alert on a function's concurrent executions and on the database's connections near max_connections; check the scaling settings an infrastructure module upgrade keeps")
	},
}

var (
	// A database's connection count: CloudWatch's RDS metric,
	// postgres_exporter's and mysqld_exporter's.
	dbConnSeriesRE = regexp.MustCompile(`(?i)^DatabaseConnections$|pg_stat_database_numbackends|pg_stat_activity_count|mysql_global_status_threads_connected`)
	// An event source mapping printed without a maximum concurrency: its
	// ScalingConfig null or empty (aws lambda list-event-source-mappings
	// or get-event-source-mapping, JSON or a --query projection).
	scalingUnsetRE = regexp.MustCompile(`(?i)"(?:ScalingConfig|Scaling)"\s*:\s*(?:null|\{\s*\})`)
	// A database server's own log, not a client refused.
	dbEngineRE    = regexp.MustCompile(`(?i)^(?:postgres(?:ql)?|mysql|mariadb|rds)$`)
	scalingLineRE = regexp.MustCompile(`(?i)"(?:Modified|LastModified)"\s*:\s*"([^"]+)"`)
)

// detectFunctionScaleOut finds, while clients are refused for lack of
// connection slots, a function whose concurrent executions rose at the
// onset by about as many as the database's connections did.
func detectFunctionScaleOut(ev *Gathered, found []Finding) []Finding {
	var refusal string
	var victims []string
	var refusedAt time.Time
	for _, f := range found {
		line := f.fact("line")
		if !matchLine(slotsRefusedRE, line) && !matchLine(slotsRefusedRE, f.Summary) {
			continue
		}
		refusal = orWord(refusal, orWord(line, f.Summary))
		if v := orWord(f.fact("caller"), f.Subject); !dbEngineRE.MatchString(v) {
			victims = appendNew(victims, v)
		}
		if !f.Time.IsZero() && (refusedAt.IsZero() || f.Time.Before(refusedAt)) {
			refusedAt = f.Time
		}
	}
	if refusal == "" {
		return nil
	}
	w := ev.Window
	type rise struct {
		name             string
		base, peak, gain float64
		at               time.Time
	}
	riseOf := func(name string, pts []evidence.Point) (rise, bool) {
		if len(pts) < 4 {
			return rise{}, false
		}
		r := rise{name: name, peak: math.Inf(-1)}
		low := math.Inf(1)
		for _, p := range pts {
			r.peak, low = max(r.peak, p.V), min(low, p.V)
		}
		for _, p := range pts {
			if p.V > low+(r.peak-low)*0.1 {
				r.at = p.T
				break
			}
		}
		r.base = medianBetween(pts, time.Time{}, r.at)
		if math.IsNaN(r.base) || r.at.IsZero() {
			return rise{}, false
		}
		r.gain = r.peak - r.base
		return r, true
	}
	var fns, dbs []rise
	for _, ms := range ev.Metrics {
		base := ms.Name
		if i := strings.LastIndexByte(base, '/'); i >= 0 {
			base = base[i+1:]
		}
		for _, s := range ms.Series {
			name := orWord(s.Labels["__name__"], base)
			pts := pointsUpTo(s, w.End)
			switch {
			case (base == "ConcurrentExecutions" || strings.HasSuffix(name, "concurrent_executions_maximum") || strings.HasSuffix(name, "concurrent_executions_average")) &&
				functionName(s.Labels) != "":
				if r, ok := riseOf(functionName(s.Labels), pts); ok {
					fns = append(fns, r)
				}
			case dbConnSeriesRE.MatchString(name) || dbConnSeriesRE.MatchString(base):
				server, _ := cloudID(s.Labels)
				if r, ok := riseOf(orWord(server, orWord(s.Labels["datname"], s.Labels["instance"])), pts); ok {
					dbs = append(dbs, r)
				}
			}
		}
	}
	var out []Finding
	for _, fn := range fns {
		// Many executions where there were few, rising before the
		// refusals began.
		if fn.peak < 50 || fn.peak < 5*max(fn.base, 1) || fn.at.Before(w.BaselineStart) || !refusedAt.IsZero() && fn.at.After(refusedAt.Add(5*time.Minute)) {
			continue
		}
		// The database's connections rose with it, by about as many.
		var db *rise
		for i, d := range dbs {
			if d.gain > 0 && fn.gain >= 0.5*d.gain && fn.gain <= 2*d.gain && absDuration(d.at.Sub(fn.at)) <= 10*time.Minute {
				db = &dbs[i]
				break
			}
		}
		if db == nil {
			continue
		}
		subject := clientOwner(ev, fn.name)
		f := Finding{Kind: KindFunctionScaleOut, Subject: subject, Source: SrcCloudWatch, Time: fn.at, Severity: SevCritical, Weight: 0.9,
			Summary: fmt.Sprintf("function %s scaled out from %.0f to %.0f concurrent executions at %s while clients are refused for lack of connection slots", fn.name, fn.base, fn.peak, hm(fn.at))}
		affects := []string{}
		if db.name != "" {
			affects = append(affects, db.name)
		}
		var refused []string
		for _, v := range victims {
			if v != subject && v != fn.name {
				affects = appendNew(affects, v)
				refused = append(refused, v)
			}
		}
		f.Related = affects
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("ConcurrentExecutions of %s: %.0f before, %.0f from %s", fn.name, fn.base, fn.peak, hm(fn.at)),
			fmt.Sprintf("connections of %s: %.0f before, %.0f from %s", orWord(db.name, "the database"), db.base, db.peak, hm(db.at)),
			"refused: "+quote(ReadableLine(refusal), 200))
		f.setFact("before", fmt.Sprintf("%.0f", fn.base))
		f.setFact("peak", fmt.Sprintf("%.0f", fn.peak))
		f.setFact("at", hm(fn.at))
		f.setFact("server", db.name)
		f.setFact("db_before", fmt.Sprintf("%.0f", db.base))
		f.setFact("db_peak", fmt.Sprintf("%.0f", db.peak))
		f.setFact("refusal", refusal)
		f.setFact("victims", strings.Join(refused, ", "))
		f.setFact("affects", strings.Join(affects, ", "))
		if m, ev := unboundedMapping(ev, fn.name); m != "" {
			f.setFact("mapping", m)
			f.Evidence = append(f.Evidence, ev)
		}
		out = append(out, f)
	}
	return out
}

// unboundedMapping reads an event source mapping of the function printed
// with no maximum concurrency: what it says, and the command's line.
func unboundedMapping(ev *Gathered, fn string) (string, string) {
	for _, c := range ev.Commands {
		if !strings.Contains(c.Run, "event-source-mapping") || !strings.Contains(c.Run, fn) && !strings.Contains(strings.Join(c.Lines, "\n"), fn) {
			continue
		}
		text := strings.Join(c.Lines, "\n")
		m := scalingUnsetRE.FindString(text)
		if m == "" {
			continue
		}
		mod := ""
		if x := scalingLineRE.FindStringSubmatch(text); x != nil {
			mod = x[1]
		}
		what := fmt.Sprintf("its event source mapping has no maximum concurrency (%s)%s", strings.Join(strings.Fields(m), " "), clauseIf(", last modified ", mod, ""))
		// The change that replaced the mapping, when one of the function
		// is dated with it.
		if at, err := time.Parse(time.RFC3339Nano, mod); err == nil {
			for _, ch := range append(slices.Clone(ev.Changes), ev.Earlier...) {
				if ch.Service == fn && absDuration(at.Sub(ch.Timestamp)) <= 15*time.Minute {
					what += fmt.Sprintf(", by the %s change of %s at %s: %s", ch.Kind, ch.Service, ts(ch.Timestamp), quote(ch.Description, 200))
					break
				}
			}
		}
		return what, fmt.Sprintf("%s: %s%s", strings.TrimSpace(c.Run), strings.Join(strings.Fields(m), " "), clauseIf("; modified ", mod, ""))
	}
	return "", ""
}

// functionName is the function a series is of: CloudWatch's FunctionName
// dimension, as it reads it and as its exporters label it.
func functionName(l evidence.Labels) string {
	return orWord(l["FunctionName"], orWord(l["dimension_FunctionName"], l["function_name"]))
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
