package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A connection pool held by one caller's long calls: a service's own pool
// of database connections (HikariCP, Tomcat JDBC, Commons DBCP,
// SQLAlchemy's QueuePool, Npgsql and SqlClient, knex, Prisma) has every
// connection taken, and its other requests time out waiting for one
// ("HikariPool-1 - Connection is not available, request timed out after
// 3000ms (total=10, active=10, idle=0, waiting=37)"; the pool's gauges:
// hikaricp_connections_active at hikaricp_connections_max with threads
// pending), while one caller's calls into that service run for minutes
// each (a streaming export, a report, a bulk sync) and keep a connection
// for their whole length. Neither the usual load nor the database is the
// cause: that caller's long calls hold the pool. Who they are is read
// from the service's own log (the client a request line names with its
// duration: "client=marketplace-sync ... took=214230ms"), else from a
// caller's log (its calls to the service's host and how long they ran),
// else from a change to a caller that names the service. The service's
// latency and its callers' errors are consequences; the caller's change
// (its first rollout, a tighter schedule) is the trigger.

// KindPoolHeld is a service's connection pool held by one caller's long
// calls.
const KindPoolHeld Kind = "pool_held"

var (
	// poolWaitRE is a client-side pool with no free connection within its
	// wait: HikariCP, Tomcat JDBC, DBCP, SQLAlchemy, Npgsql, SqlClient,
	// knex, Sequelize, Prisma.
	poolWaitRE = regexp.MustCompile(`(?i)connection is not available, request timed out|connection pool (?:is |has been )?exhausted|pool (?:is )?exhausted|timeout waiting for idle (?:object|connection)|unable to acquire (?:a )?(?:jdbc )?connection|QueuePool limit of size|Timeout acquiring a connection|Pool empty\. Unable to fetch a connection|prior to obtaining a connection from the pool|max pool size was reached|ConnectionAcquireTimeoutError|Timed out fetching a new connection from the connection pool|could not obtain a connection from the pool within|all pooled connections were in use`)
	// poolNameWaitRE is the pool a HikariCP line names ("HikariPool-1 -
	// Connection is not available", a poolName such as "inventory-db").
	poolNameWaitRE = regexp.MustCompile(`(?i)\b([\w.-]+) - Connection is not available`)
	// poolSizeRE is the size a pool's error states: HikariCP's total=10,
	// Tomcat's [size:100; busy:100, SQLAlchemy's "limit of size 5 overflow
	// 10", Npgsql's "'Max Pool Size' (currently 100)".
	poolSizeRE    = regexp.MustCompile(`(?i)\btotal=(\d+)|\[size:(\d+);|limit of size (\d+) overflow (\d+)|Max Pool Size'? \(currently (\d+)\)`)
	poolWaitingRE = regexp.MustCompile(`(?i)\bwaiting=(\d+)`)
	poolWaitForRE = regexp.MustCompile(`(?i)timed out after (\d+)\s*ms|timeout (\d+(?:\.\d+)?)\b|Unable to fetch a connection in (\d+) seconds`)
	// Pool gauges: connections in use, the pool's maximum, requests
	// waiting (Micrometer's HikariCP, OpenTelemetry's db.client.connections,
	// pgxpool, database/sql stats).
	poolActiveMetricRE  = regexp.MustCompile(`(?i)^(?:hikaricp_connections_active|jdbc_connections_active|db_client_connections_usage|pgxpool_acquired_conns|go_sql_(?:stats_)?connections_in_use|sql_(?:stats_)?in_use_connections)$`)
	poolMaxMetricRE     = regexp.MustCompile(`(?i)^(?:hikaricp_connections_max|jdbc_connections_max|db_client_connections_max|pgxpool_max_conns|go_sql_(?:stats_)?connections_max_open|sql_(?:stats_)?max_open_connections)$`)
	poolPendingMetricRE = regexp.MustCompile(`(?i)^(?:hikaricp_connections_pending|db_client_connections_pending_requests)$`)
	// callClientRE is the client a request line names.
	callClientRE = regexp.MustCompile(`(?i)\b(?:client|caller|client_?id|client_?name|consumer|source_service|x-client-id|x_client|app)\s*[=:]\s*"?([A-Za-z][\w.-]*)`)
	// callDurationRE is how long a call ran: took=214230ms, duration=3.2s,
	// "elapsed_ms":5000, "in 214.2s".
	callDurationRE = regexp.MustCompile(`(?i)\b(took|duration|elapsed|latency|time_taken|request_time|response_?time|duration_?ms|elapsed_?ms|took_?ms)"?\s*[=:]\s*"?(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds|m|min)?\b|\b(?:in|after|took|for)\s+(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds|m|min)\b`)
	// callPathRE is a request's method and path.
	callPathRE = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE)\s+(?:https?://[^/\s"]+)?(/[^\s?"]*)`)
)

// holdMin is how long a call must run to read as holding a connection for
// its whole length rather than taking one per query.
const holdMin = 30 * time.Second

var poolHeld = &mechanism{
	kind:   KindPoolHeld,
	class:  classCause,
	label:  "a connection pool held by one caller's long calls",
	detect: detectPoolHeld,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		if holder := h.fact("holder"); holder != "" && f.Subject == holder {
			return true
		}
		return f.fact("callee") == h.Subject || affectsRelated(h, f)
	}),
	// The holder's change (its first rollout, a schedule made tighter) or
	// the pool's own service's.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		holder := h.fact("holder")
		return holder != "" && strings.EqualFold(c.Subject, holder) || strings.EqualFold(c.Subject, h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := "the database connection pool" + h.clause(" ", "pool") + " of " + h.Subject
		d += h.wrapped(" (", "pool_size", " connections per pod)") + " is exhausted"
		if holder := h.fact("holder"); holder != "" {
			calls := orWord(h.fact("calls"), "calls")
			d += fmt.Sprintf(", held by %s's long %s", holder, callsWord(calls))
			d += h.wrapped(" (up to ", "call_duration", " each, keeping a connection for the whole call)")
			d += h.quoteClause(": ", "holder_line", 200)
		}
		d += fmt.Sprintf("; %s's other requests wait for a connection", h.Subject)
		return d + h.clause(" and fail after ", "wait_timeout") + h.lineClause(220) + h.clause("; ", "metric") + h.clause("; its callers see the errors: ", "victims")
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		holder, calls := h.fact("holder"), orWord(h.fact("calls"), "long calls")
		if holder != "" {
			r.rollback()
			r.high("Stop or throttle %s's %s to %s (pause it, lower its concurrency or how often it runs) so the connections of %s's pool are free for its other requests again", holder, calls, h.Subject, h.Subject)
		} else {
			r.high("Find which calls hold the connections of %s's pool (its request log by duration, the pool's leak detection) and stop or throttle them", h.Subject)
		}
		r.med("Serve %s in %s without holding a database connection for the whole call (page or stream from a cursor with its own small pool, or a read replica), and give such calls a statement or transaction timeout; raising the pool size alone only delays the exhaustion", calls, h.Subject)
		r.low("Alert on %s's pool waiting threads and connection timeouts (hikaricp_connections_pending, hikaricp_connections_timeout_total) and on calls holding a connection longer than a threshold (leakDetectionThreshold)", h.Subject)
	},
}

// poolState is what the evidence says of one service's pool.
type poolState struct {
	name, size, waiting, timeout, line, metric string
	onset, logged                              time.Time
	lines                                      int
}

// heldCalls is one caller's long calls into a service.
type heldCalls struct {
	holder, calls, line, from string
	longest                   time.Duration
	count                     int
}

// poolWaits reads the services' pool wait errors in the incident into
// pools: how many, the first line, the pool's name, size, waiters and wait
// timeout as the lines state them, and when they began.
func poolWaits(ev *Gathered, pools *keyed[poolState]) {
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host || set.Subject == "" {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := templateLine(t, poolWaitRE)
			if line == "" {
				continue
			}
			p := pools.get(set.Subject)
			p.lines += t.Incident
			if p.line == "" {
				p.line = line
			}
			if m := findSubmatch(poolNameWaitRE, line); m != nil && p.name == "" {
				p.name = m[1]
			}
			if p.size == "" {
				p.size = poolSizeOf(line)
			}
			if m := findSubmatch(poolWaitingRE, line); m != nil && p.waiting == "" {
				p.waiting = m[1]
			}
			if p.timeout == "" {
				p.timeout = poolWaitOf(line)
			}
			at := firstOf(t.FirstIncident, t.FirstSeen)
			if p.onset.IsZero() || at.Before(p.onset) {
				p.onset, p.logged = at, at
			}
		}
	}
}

// detectPoolHeld finds a service whose connection pool is exhausted while
// one caller's calls into it run long enough to hold its connections.
func detectPoolHeld(ev *Gathered, found []Finding) []Finding {
	var pools keyed[poolState]
	get := pools.get
	w := ev.Window
	poolWaits(ev, &pools)
	poolGauges(ev, w, get)
	var out []Finding
	for _, subj := range pools.order {
		p := pools.m[subj]
		if p.onset.IsZero() {
			continue
		}
		hc, direct := poolHolder(ev, subj, p)
		if hc.holder == "" {
			continue
		}
		f := Finding{Kind: KindPoolHeld, Subject: subj, Object: "service " + subj, Source: SrcLogs, Time: p.onset, Severity: SevCritical, Weight: 0.75}
		if direct {
			f.Weight = 0.9
		}
		for _, l := range ev.Logs {
			if l.Subject == subj {
				f.Namespace = l.Namespace
				break
			}
		}
		f.setFact("pool", p.name)
		f.setFact("pool_size", p.size)
		f.setFact("waiting", p.waiting)
		f.setFact("wait_timeout", p.timeout)
		f.setFact("line", p.line)
		f.setFact("metric", p.metric)
		f.setFact("holder", hc.holder)
		f.setFact("calls", hc.calls)
		f.setFact("holder_line", hc.line)
		if hc.longest > 0 {
			f.setFact("call_duration", roundDuration(hc.longest))
		}
		if direct {
			f.setFact("why", fmt.Sprintf("%s's %s hold %s's pool connections (%s)", hc.holder, orWord(hc.calls, "calls"), subj, hc.from))
		}
		var victims []string
		for _, v := range found {
			c := orWord(v.fact("caller"), v.Subject)
			if c != subj && c != hc.holder && (v.fact("callee") == subj || v.Kind != KindPoolHeld && slices.Contains(v.Related, subj) && infoOf(v.Kind).class != classChange) {
				victims = appendNew(victims, c)
			}
		}
		affects := slices.Clone(victims)
		for _, s := range ev.Scope.Subjects() {
			if s != subj && s != hc.holder {
				affects = appendNew(affects, s)
			}
		}
		f.setFact("victims", strings.Join(victims, ", "))
		f.setFact("affects", strings.Join(affects, ", "))
		f.Related = append([]string{hc.holder}, affects...)
		if p.metric != "" {
			f.Evidence = append(f.Evidence, p.metric)
		}
		if p.line != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %d pool wait timeouts from %s: %s", subj, p.lines, hm(p.logged), quote(ReadableLine(p.line), 240)))
		}
		hold := fmt.Sprintf("%s's %s into %s", hc.holder, orWord(hc.calls, "calls"), subj)
		if hc.longest > 0 {
			hold += " run up to " + roundDuration(hc.longest)
		}
		if hc.line != "" {
			hold += ": " + quote(ReadableLine(hc.line), 240)
		}
		f.Evidence = append(f.Evidence, hold+" ("+hc.from+")")
		f.Summary = fmt.Sprintf("the connection pool of %s is exhausted, held by %s's long %s", subj, hc.holder, callsWord(hc.calls))
		out = append(out, f)
	}
	return out
}

// poolGauges reads the pool gauges: a pool in use up to its maximum in
// the window, with requests waiting, when its baseline had room.
func poolGauges(ev *Gathered, w Window, get func(string) *poolState) {
	type key struct{ subj, inst string }
	active := map[key][]timedValue{}
	maxOf := map[key]float64{}
	pendingPeak := map[string]float64{}
	names := map[string]string{}
	instOf := func(l map[string]string) string {
		return l["pod"] + "|" + l["instance"] + "|" + orWord(l["pool"], orWord(l["pool_name"], l["name"]))
	}
	for _, ms := range ev.Metrics {
		isActive, isMax, isPending := matchLine(poolActiveMetricRE, ms.Name), matchLine(poolMaxMetricRE, ms.Name), matchLine(poolPendingMetricRE, ms.Name)
		if !isActive && !isMax && !isPending {
			continue
		}
		for _, s := range ms.Series {
			subj := SubjectOfLabels(s.Labels)
			if subj == "" {
				continue
			}
			if st := s.Labels["state"]; isActive && st != "" && !strings.EqualFold(st, "used") {
				continue
			}
			k := key{subj, instOf(s.Labels)}
			if n := orWord(s.Labels["pool"], s.Labels["pool_name"]); n != "" {
				names[subj] = n
			}
			for _, pt := range s.Points {
				if !w.covers(pt.T) {
					continue
				}
				switch {
				case isActive:
					active[k] = append(active[k], timedValue{pt.T, pt.V})
				case isMax:
					maxOf[k] = max(maxOf[k], pt.V)
				case isPending && !pt.T.Before(w.Start):
					pendingPeak[subj] = max(pendingPeak[subj], pt.V)
				}
			}
		}
	}
	for k, vs := range active {
		m := maxOf[k]
		if m <= 0 {
			continue
		}
		full, base := reachedMax(vs, w.Start, m)
		if full.IsZero() || len(base) > 0 && medianOf(base) >= m || pendingPeak[k.subj] <= 0 && len(base) == 0 {
			continue
		}
		p := get(k.subj)
		p.onset = earliest(p.onset, full)
		p.size = orWord(p.size, strconv.FormatFloat(m, 'f', -1, 64))
		p.name = orWord(p.name, names[k.subj])
		if p.metric == "" {
			p.metric = fmt.Sprintf("the pool's connections in use reached its maximum of %.0f at %s (baseline median %.0f)", m, hm(full), medianOf(base))
			if pk := pendingPeak[k.subj]; pk > 0 {
				p.metric += fmt.Sprintf(", with up to %.0f requests waiting for a connection", pk)
			}
		}
	}
}

// poolHolder names the caller whose long calls hold a service's pool:
// from the service's own request lines (direct), a caller's log of its
// calls to the service (direct), else a change to a caller that names the
// service.
func poolHolder(ev *Gathered, subj string, p *poolState) (heldCalls, bool) {
	long := holdMin
	if d, err := time.ParseDuration(strings.ReplaceAll(p.timeout, " ", "")); err == nil && 10*d > long {
		long = 10 * d
	}
	// The service's own log: a request line naming its client and its
	// duration.
	byClient := map[string]*heldCalls{}
	var clients []string
	for _, set := range ev.Logs {
		if set.Subject != subj {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			for _, line := range t.Lines() {
				m := findSubmatch(callClientRE, line)
				if m == nil || strings.EqualFold(m[1], subj) {
					continue
				}
				d := callDuration(line)
				if d < long {
					continue
				}
				c := byClient[m[1]]
				if c == nil {
					c = &heldCalls{holder: clientOwner(ev, m[1]), from: subj + "'s own request log"}
					byClient[m[1]] = c
					clients = append(clients, m[1])
				}
				c.count += t.Incident
				if d > c.longest {
					c.longest, c.line = d, line
				}
				if pm := findSubmatch(callPathRE, line); pm != nil && c.calls == "" {
					c.calls = pm[1] + " " + pm[2]
				}
			}
		}
	}
	if len(clients) > 0 {
		slices.SortStableFunc(clients, func(a, b string) int { return byClient[b].count - byClient[a].count })
		return *byClient[clients[0]], true
	}
	// A caller's log: its calls to the service's host, and how long its
	// runs take.
	for _, set := range ev.Logs {
		if set.Subject == subj || set.Subject == "" || set.Host {
			continue
		}
		var hc heldCalls
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			for _, line := range t.Lines() {
				if hc.calls == "" && callsHost(line, subj) {
					if pm := findSubmatch(callPathRE, line); pm != nil {
						hc.calls = pm[1] + " " + pm[2]
					} else {
						hc.calls = "calls"
					}
				}
				if d := callDuration(line); d >= long && d > hc.longest {
					hc.longest, hc.line = d, line
				}
			}
		}
		if hc.calls != "" && hc.longest > 0 {
			hc.holder, hc.from = set.Subject, set.Subject+"'s own log"
			return hc, true
		}
	}
	// A change to a caller that names the service, before the pool ran out.
	for _, c := range ev.Changes {
		if c.Service == "" || strings.EqualFold(c.Service, subj) || c.Timestamp.After(p.onset) || p.onset.Sub(c.Timestamp) > triggerFar {
			continue
		}
		if namesWord(c.Description, subj) {
			hc := heldCalls{holder: c.Service, from: "its change names " + subj, line: c.Description}
			if pm := findSubmatch(callPathRE, c.Description); pm != nil {
				hc.calls = pm[1] + " " + pm[2]
			} else if m := findSubmatch(barePathRE, c.Description); m != nil {
				hc.calls = m[1] + " calls"
			}
			return hc, false
		}
	}
	return heldCalls{}, false
}

var barePathRE = regexp.MustCompile(`\s(/[\w./-]+)`)

// callsHost reports whether a line calls the service's host (its cluster
// name, with or without the namespace and the svc suffix).
func callsHost(line, subj string) bool {
	for _, m := range findAllSubmatch(urlRE, line, -1) {
		if ShortHost(m[1]) == subj || strings.EqualFold(m[1], subj) {
			return true
		}
	}
	return false
}

// namesWord reports whether text names a service as a word.
func namesWord(text, name string) bool {
	i := strings.Index(strings.ToLower(text), strings.ToLower(name))
	for i >= 0 {
		before := i == 0 || !isNameByte(text[i-1])
		j := i + len(name)
		after := j >= len(text) || !isNameByte(text[j])
		if before && after {
			return true
		}
		k := strings.Index(strings.ToLower(text[i+1:]), strings.ToLower(name))
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return false
}

func isNameByte(b byte) bool {
	return b == '-' || b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// callDuration is the longest duration a line states (0 for none).
func callDuration(line string) time.Duration {
	var best time.Duration
	for _, m := range findAllSubmatch(callDurationRE, line, -1) {
		key, num, unit := strings.ToLower(m[1]), m[2], strings.ToLower(m[3])
		if num == "" {
			num, unit = m[4], strings.ToLower(m[5])
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			continue
		}
		if unit == "" {
			switch {
			case strings.Contains(key, "ms") || strings.HasSuffix(key, "time") && !strings.Contains(num, "."):
				unit = "ms"
			case strings.Contains(num, "."):
				unit = "s"
			default:
				unit = "ms"
			}
		}
		var d time.Duration
		switch unit {
		case "ms":
			d = time.Duration(v * float64(time.Millisecond))
		case "s", "sec", "seconds":
			d = time.Duration(v * float64(time.Second))
		case "m", "min":
			d = time.Duration(v * float64(time.Minute))
		}
		best = max(best, d)
	}
	return best
}

// poolSizeOf reads the size a pool's error states.
func poolSizeOf(line string) string {
	m := findSubmatch(poolSizeRE, line)
	if m == nil {
		return ""
	}
	if m[3] != "" {
		a, _ := strconv.Atoi(m[3])
		b, _ := strconv.Atoi(m[4])
		return strconv.Itoa(a + b)
	}
	return orWord(m[1], orWord(m[2], m[5]))
}

// poolWaitOf reads how long a request waited for a connection.
func poolWaitOf(line string) string {
	m := findSubmatch(poolWaitForRE, line)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return m[1] + "ms"
	case m[2] != "":
		return m[2] + "s"
	}
	return m[3] + "s"
}

// callsWord names calls: "GET /v1/export calls".
func callsWord(calls string) string {
	if calls == "" || strings.HasSuffix(calls, "calls") {
		return orWord(calls, "calls")
	}
	return calls + " calls"
}

// roundDuration prints a call's length to the second.
func roundDuration(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}
