package analyst

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// sqlTable is one result a SQL client printed in a terminal: its column
// names (lower case) and rows, cells trimmed.
type sqlTable struct {
	cols []string
	rows [][]string
}

// cell is row r's value of the column named name ("" when absent).
func (t *sqlTable) cell(r int, name string) string {
	for i, c := range t.cols {
		if c == name && i < len(t.rows[r]) {
			return t.rows[r][i]
		}
	}
	return ""
}

var (
	// psql's aligned format: the rule under the header ("-----+------").
	psqlRuleRE = regexp.MustCompile(`^-+(\+-+)*$`)
	// mysql's and psql's boxed borders ("+----+------+").
	boxRuleRE = regexp.MustCompile(`^\+(-+\+)+$`)
	// pgcli's rule under a boxed header ("|------+------|").
	pgcliRuleRE = regexp.MustCompile(`^\|-+(\+-+)*\|$`)
	// psql's expanded format (\x): "-[ RECORD 1 ]-+------".
	psqlRecordRE = regexp.MustCompile(`^-\[ RECORD \d+ \]-*(\+-*)?$`)
	// mysql's vertical format (\G): "*************************** 1. row ***".
	mysqlRowRE = regexp.MustCompile(`^\*+ \d+\. row \*+$`)
	// psql's row count footer.
	psqlCountRE = regexp.MustCompile(`^\(\d+ rows?\)$`)
	// mysql's footer.
	mysqlCountRE = regexp.MustCompile(`^(\d+|Empty) rows? in set|^\d+ rows in set`)
)

// sqlTables reads the result tables of psql (aligned, boxed and expanded
// formats) and mysql or mariadb (boxed and \G vertical formats) from a
// command's output.
func sqlTables(lines []string) []sqlTable {
	var out []sqlTable
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case matchLine(boxRuleRE, l) && i+2 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|") && (matchLine(boxRuleRE, strings.TrimSpace(lines[i+2])) || matchLine(pgcliRuleRE, strings.TrimSpace(lines[i+2]))):
			t := sqlTable{cols: boxCells(lines[i+1], true)}
			j := i + 3
			for ; j < len(lines); j++ {
				r := strings.TrimSpace(lines[j])
				if !strings.HasPrefix(r, "|") {
					break
				}
				t.rows = append(t.rows, boxCells(lines[j], false))
			}
			out = append(out, t)
			i = j
		case matchLine(psqlRuleRE, l) && len(l) >= 3 && i > 0 && strings.TrimSpace(lines[i-1]) != "":
			t := sqlTable{cols: splitCells(lines[i-1], true)}
			if len(t.cols) != strings.Count(l, "+")+1 {
				continue
			}
			j := i + 1
			for ; j < len(lines); j++ {
				r := strings.TrimSpace(lines[j])
				if r == "" || matchLine(psqlCountRE, r) {
					break
				}
				cells := splitCells(lines[j], false)
				if len(cells) != len(t.cols) {
					break
				}
				t.rows = append(t.rows, cells)
			}
			out = append(out, t)
			i = j
		case matchLine(psqlRecordRE, l) || matchLine(mysqlRowRE, l):
			// Consecutive records of the expanded formats make one table.
			t := sqlTable{}
			j := i
			for j < len(lines) {
				h := strings.TrimSpace(lines[j])
				if !matchLine(psqlRecordRE, h) && !matchLine(mysqlRowRE, h) {
					break
				}
				vertical := matchLine(mysqlRowRE, h)
				row := make([]string, len(t.cols))
				for j++; j < len(lines); j++ {
					r := strings.TrimSpace(lines[j])
					if r == "" || matchLine(psqlRecordRE, r) || matchLine(mysqlRowRE, r) || matchLine(psqlCountRE, r) || matchLine(mysqlCountRE, r) {
						break
					}
					sep := "|"
					if vertical {
						sep = ":"
					}
					k, v, ok := strings.Cut(r, sep)
					if !ok {
						break
					}
					k = strings.ToLower(strings.TrimSpace(k))
					idx := -1
					for c, name := range t.cols {
						if name == k {
							idx = c
						}
					}
					if idx < 0 {
						t.cols = append(t.cols, k)
						row = append(row, "")
						idx = len(t.cols) - 1
					}
					row[idx] = strings.TrimSpace(v)
				}
				t.rows = append(t.rows, row)
				for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
					j++
				}
			}
			for r := range t.rows {
				for len(t.rows[r]) < len(t.cols) {
					t.rows[r] = append(t.rows[r], "")
				}
			}
			out = append(out, t)
			i = j - 1
		}
	}
	return out
}

func splitCells(line string, header bool) []string {
	parts := strings.Split(line, "|")
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = strings.TrimSpace(p)
		if header {
			out[i] = strings.ToLower(out[i])
		}
	}
	return out
}

// boxCells splits "| a | b |" into its cells.
func boxCells(line string, header bool) []string {
	l := strings.TrimSpace(line)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	return splitCells(l, header)
}

var (
	// "1 day 02:03:04.5", "00:37:49.118204", "-00:00:01".
	pgIntervalRE = regexp.MustCompile(`^(?:(\d+) days? )?(-)?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$`)
	// "37 min", "2 hours", "1 day 3 hours" (postgres_verbose).
	verboseIntervalRE = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(days?|hours?|hrs?|mins?|minutes?|secs?|seconds?)\b`)
)

// sqlDuration reads a duration cell: an interval as psql prints it, or a
// plain number of seconds (MySQL's Seconds_Behind_Source, TIME of a
// processlist). ok is false for NULL and anything else.
func sqlDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if m := findSubmatch(pgIntervalRE, s); m != nil {
		days, _ := strconv.Atoi(m[1])
		h, _ := strconv.Atoi(m[3])
		mi, _ := strconv.Atoi(m[4])
		sec, _ := strconv.ParseFloat(m[5], 64)
		d := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec*float64(time.Second))
		if m[2] == "-" {
			d = -d
		}
		return d, true
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(v * float64(time.Second)), true
	}
	if ms := findAllSubmatch(verboseIntervalRE, s, -1); ms != nil && strings.HasPrefix(strings.TrimPrefix(s, "@ "), ms[0][1]) {
		var d time.Duration
		for _, m := range ms {
			v, _ := strconv.ParseFloat(m[1], 64)
			unit := time.Second
			switch m[2][0] {
			case 'd':
				unit = 24 * time.Hour
			case 'h':
				unit = time.Hour
			case 'm':
				unit = time.Minute
			}
			d += time.Duration(v * float64(unit))
		}
		return d, true
	}
	return 0, false
}

// sqlClientRE recognises a SQL client's command line.
var sqlClientRE = regexp.MustCompile(`(?i)(^|[\s/;|&(])(psql|mysql|mariadb|pg_activity|cockroach sql)(\s|$)`)

// Column names of a replica's delay behind its primary.
var lagColumnRE = regexp.MustCompile(`(?i)^(replay_lag|replication_lag|replica_lag|apply_lag|standby_lag|lag|lag_seconds|replay_delay|seconds_behind_(master|source|primary))$`)

// Column names of how long a session's transaction or query has run, and
// of who runs it.
var (
	xactAgeColumnRE = regexp.MustCompile(`(?i)^(xact_age|xact_duration|transaction_age|tx_age|trx_age|query_age|age|duration|runtime|running_for|time)$`)
	sessionWhoCols  = []string{"application_name", "usename", "user", "db"}
)

// sqlHostRE reads the server a SQL client connected to: psql -h HOST,
// --host=HOST, mysql -hHOST, a libpq connection string ("host=HOST
// dbname=x") or URI (postgres://user@HOST:5432/db).
var sqlHostRE = regexp.MustCompile(`(?:(?:^|\s)(?:-h\s*|--host[= ])|(?:^|[\s"'])host=|postgres(?:ql)?://(?:[^@\s/]*@)?)([A-Za-z0-9][A-Za-z0-9.-]*)`)

// sqlInstanceOf names the database instance a SQL client's output is
// about: the server it connected to (-h), else the workload of the pod it
// ran in, else the host it ran on; where is the pod or host itself.
func sqlInstanceOf(c evidence.CommandOutput) (inst, where string) {
	if m := findSubmatch(sqlHostRE, c.Run); m != nil && m[1] != "localhost" && !strings.HasPrefix(m[1], "127.") {
		h := strings.ToLower(DependencyName(m[1]))
		if i := strings.Index(h, ".svc"); i > 0 && strings.Count(h[:i], ".") == 1 {
			h = h[:strings.IndexByte(h, '.')] // a cluster Service's name
		}
		return h, m[1]
	}
	if c.Exec && c.Pod != "" {
		return workloadOfPodName(c.Pod), c.Pod
	}
	if c.Exec && c.Target != "" {
		_, name, ok := strings.Cut(c.Target, "/")
		if ok {
			return name, c.Target
		}
	}
	if c.Host != "" {
		return strings.ToLower(c.Host), c.Host
	}
	return "", ""
}

// sqlState is what a SQL client's output in a transcript states about one
// database instance: how far its replay lags, whether it is a standby,
// its standby settings and its longest open transaction.
type sqlState struct {
	instance string // the workload of the pod it ran in, or the host
	where    string // the pod or host, for evidence
	lag      time.Duration
	lagCol   string
	standby  bool     // pg_is_in_recovery() = t, or a replica's status
	settings []string // settings that let replay wait ("max_standby_streaming_delay = -1")
	stalled  string   // "WAL received to 3A/91C4E2A0, replayed to 3A/5F0C21B8"
	// The longest open transaction: its client and age.
	holder, holderDetail string
	holderAge            time.Duration
	source               string
	command              string // the client's command line
	// mysql: a MySQL or MariaDB server (the client, or its columns, say
	// so); its replication is an applier, not WAL replay.
	mysql bool
	// applying is the statement a replica's own applier thread executes
	// (MySQL's "system user" sessions, the SQL thread's state), with how
	// long it has run: a DDL replicated from the primary.
	applying, applyingState string
	applyingAge             time.Duration
}

var (
	// A schema change: what a replica's applier runs as one event.
	ddlStatementRE = regexp.MustCompile(`(?i)^\s*(ALTER\s+TABLE|CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+INDEX|OPTIMIZE\s+TABLE|RENAME\s+TABLE|TRUNCATE|CREATE\s+TABLE\s+\S+\s+AS)\b`)
	// The states of a MySQL thread running a DDL.
	ddlStateRE = regexp.MustCompile(`(?i)^(altering table|copy to tmp table|creating index|committing alter table|manage keys|rename result table|discard_or_import_tablespace|preparing for alter table)`)
)

// applierUser reports whether a session is the replica's own replication
// thread (MySQL shows its receiver, coordinator and workers as "system
// user"), never a client holding replay back.
func applierUser(u string) bool {
	u = strings.ToLower(strings.TrimSpace(u))
	return u == "system user" || u == "system_user"
}

// sqlStates reads SQL clients' outputs (psql, mysql run in a pod through
// kubectl exec or on a host) into what they state per database instance.
func sqlStates(cmds []evidence.CommandOutput) []*sqlState {
	by := map[string]*sqlState{}
	var order []string
	for _, c := range cmds {
		if !matchLine(sqlClientRE, c.Run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		inst, where := sqlInstanceOf(c)
		if inst == "" {
			continue
		}
		st := by[inst]
		if st == nil {
			st = &sqlState{instance: inst, where: where, source: c.Source, command: orWord(c.Run, c.Command)}
			by[inst] = st
			order = append(order, inst)
		}
		if m := findSubmatch(sqlClientRE, orWord(c.Run, c.Command)); m != nil && (strings.EqualFold(m[2], "mysql") || strings.EqualFold(m[2], "mariadb")) {
			st.mysql = true
		}
		for _, t := range sqlTables(c.Lines) {
			st.read(&t)
		}
	}
	var out []*sqlState
	for _, k := range order {
		out = append(out, by[k])
	}
	return out
}

func (st *sqlState) read(t *sqlTable) {
	for r := range t.rows {
		for i, col := range t.cols {
			v := t.rows[r][i]
			switch {
			case matchLine(lagColumnRE, col):
				if d, ok := sqlDuration(v); ok && d > st.lag {
					st.lag, st.lagCol = d, col
				}
			case col == "pg_is_in_recovery" && v == "t":
				st.standby = true
			case (col == "max_standby_streaming_delay" || col == "max_standby_archive_delay") && v == "-1":
				st.settings = append(st.settings, col+" = -1")
			}
		}
		for _, col := range []string{"replica_sql_running_state", "slave_sql_running_state"} {
			if v := t.cell(r, col); v != "" {
				st.mysql = true
				if matchLine(ddlStateRE, v) && st.applyingState == "" {
					st.applyingState = v
				}
			}
		}
		if slices.ContainsFunc(t.cols, func(c string) bool { return strings.HasPrefix(c, "seconds_behind_") }) {
			st.mysql = true
		}
		// The replica's own applier: what it runs is the replication's
		// work, not a client's transaction.
		if u := orWord(t.cell(r, "user"), t.cell(r, "usename")); applierUser(u) {
			st.mysql = true
			info, state := t.cell(r, "info"), t.cell(r, "state")
			if matchLine(ddlStatementRE, info) || matchLine(ddlStateRE, state) {
				age, _ := sqlDuration(t.cell(r, "time"))
				if age >= st.applyingAge {
					st.applying, st.applyingState, st.applyingAge = strings.TrimSpace(info), state, age
				}
			}
			continue
		}
		recv, replay := t.cell(r, "pg_last_wal_receive_lsn"), t.cell(r, "pg_last_wal_replay_lsn")
		if a, ok := parseLSN(recv); ok {
			if b, ok := parseLSN(replay); ok && a > b {
				st.stalled = "WAL received to " + recv + " but replayed only to " + replay
			}
		}
		// A session's open transaction, with who runs it.
		var who []string
		for _, w := range sessionWhoCols {
			if v := t.cell(r, w); v != "" && !strings.EqualFold(v, "null") {
				who = append(who, w+"="+v)
			}
		}
		if len(who) == 0 {
			continue
		}
		for i, col := range t.cols {
			if !matchLine(xactAgeColumnRE, col) {
				continue
			}
			d, ok := sqlDuration(t.rows[r][i])
			if !ok || d < 5*time.Minute || d <= st.holderAge {
				continue
			}
			st.holderAge = d
			st.holder = sessionClient(t, r)
			st.holderDetail = strings.Join(who, ", ")
			if q := t.cell(r, "query"); q != "" {
				st.holderDetail += ": " + q
			}
			if p := t.cell(r, "pid"); p != "" {
				st.holderDetail = "pid " + p + ", " + st.holderDetail
			}
		}
	}
}

// sessionClient names the client of a session row: its application, else
// its user.
func sessionClient(t *sqlTable, r int) string {
	for _, c := range []string{"application_name", "usename", "user"} {
		if v := t.cell(r, c); v != "" && !strings.EqualFold(v, "null") {
			return v
		}
	}
	return ""
}

// parseLSN reads a PostgreSQL log sequence number ("3A/5F0C21B8").
func parseLSN(s string) (uint64, bool) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return h<<32 | l, true
}
