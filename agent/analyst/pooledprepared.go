package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Named prepared statements behind a transaction-pooling proxy. A
// PostgreSQL prepared statement lives in one server session; a pooler in
// transaction mode (PgBouncer pool_mode=transaction, pgcat, Odyssey,
// Supavisor) hands a client's next transaction to whichever server
// connection is free, so a client that prepares a statement once and
// executes it later (pgx's statement cache, PgJDBC after
// prepareThreshold, asyncpg, Npgsql's auto-prepare) meets server sessions
// that never saw it: "prepared statement "stmtcache_..." does not exist"
// (SQLSTATE 26000), and, preparing again under a name another client left
// there, "already exists" (42P05). Only the requests that land on another
// server connection fail: a fraction of them, with no latency. The
// trigger is the pool mode switched to transaction (or a client moved
// behind the pooler), not the client's deploy; PgBouncer 1.21+ tracks
// protocol-level prepared statements only with max_prepared_statements
// above 0.

// KindPooledPrepared is a client's prepared statements lost behind a
// transaction-pooling proxy.
const KindPooledPrepared Kind = "pooled_prepared"

var (
	// prepStmtErrRE is the server's refusal as the client or the server
	// logs it (the Go, Java, Python drivers quote the server's message;
	// asyncpg names its exception class).
	prepStmtErrRE = regexp.MustCompile(`(?i)prepared statement \\?"?[\w$.-]+\\?"? (does not exist|already exists)|InvalidSQLStatementNameError|DuplicatePreparedStatementError|SQLSTATE[ =:]*(?:26000|42P05)\b`)
	// pgServerFormRE is a line in the PostgreSQL server's own log form
	// ("2026-11-26 10:40:12.316 UTC [30112] user@db ERROR:  ...").
	pgServerFormRE = regexp.MustCompile(`\b[A-Z]{2,5} \[\d+\]\S* .*\b(?:ERROR|LOG|FATAL|STATEMENT):  `)
	// txnPoolSettingRE is a pooler set to transaction pooling: pgbouncer.ini
	// or pgcat.toml ("pool_mode = transaction"), PgBouncer's SHOW CONFIG
	// ("pool_mode | transaction"), an environment variable
	// (PGBOUNCER_POOL_MODE=transaction, POOL_MODE: transaction).
	txnPoolSettingRE = regexp.MustCompile(`(?i)(?:\b|_)pool[_ ]?mode"?\s*[=:|]\s*"?transaction\b`)
	// txnPoolChangeRE is a change that switched a pooler to transaction
	// pooling ("pool_mode session -> transaction", "switch pgbouncer to
	// transaction pooling").
	txnPoolChangeRE = regexp.MustCompile(`(?i)pool[_ ]?mode\b[^,;.]{0,40}?\btransaction\b|transaction[- ]pooling|transaction[- ]mode pool`)
	// maxPreparedZeroRE is PgBouncer's prepared-statement tracking off.
	maxPreparedZeroRE = regexp.MustCompile(`(?i)\bmax_prepared_statements\s*[=:|]\s*0\b`)
	// stmtCacheRE is a client configured to cache prepared statements
	// (pgx's exec mode, a statement cache size, PgJDBC's threshold).
	stmtCacheRE = regexp.MustCompile(`(?i)cache_statement|statement_cache_(?:capacity|size)"?\s*[=:]\s*"?[1-9]|preparethreshold"?\s*[=:]\s*"?[1-9]`)
)

var pooledPrepared = &mechanism{
	kind:   KindPooledPrepared,
	class:  classCause,
	label:  "prepared statements lost behind a transaction-pooling proxy",
	detect: detectPooledPrepared,
	// Only the switch to transaction pooling triggers it: the client's
	// deploy that kept preparing statements as before does not.
	strictTriggers: true,
	fitsChange:     changeSays(txnPoolChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		pooler := orWord(h.fact("pooler"), "its connection pooler")
		d := fmt.Sprintf("%s's prepared statements are lost behind %s in transaction pooling mode (pool_mode=transaction): each transaction may run on another server connection, which never saw the statement %s prepared, so its queries fail with %s",
			h.Subject, pooler, h.Subject, orWord(h.fact("errors"), "prepared statement does not exist"))
		d += h.wrapped(" (", "count", ")")
		d += h.clause("; ", "client")
		d += h.clause("; ", "tracking")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		pooler := orWord(h.fact("pooler"), "the pooler")
		r.high("Set %s back to pool_mode=session (or point %s at a session-mode pool) to stop the failures now", pooler, h.Subject)
		r.med("To keep transaction pooling: set max_prepared_statements above 0 on PgBouncer 1.21+ so it tracks protocol-level prepared statements, or turn off %s's statement cache (pgx default_query_exec_mode=exec or simple_protocol, PgJDBC prepareThreshold=0, asyncpg statement_cache_size=0)", h.Subject)
		r.low("Test pooler mode changes against each client's driver settings before rolling them out; alert on SQLSTATE 26000/42P05")
	},
}

// detectPooledPrepared reads prepared-statement errors from the logs, with
// what says a pooler in front runs transaction pooling.
func detectPooledPrepared(ev *Gathered, _ []Finding) []Finding {
	type src struct {
		subject, line string
		count         int
		server        bool
		at            time.Time
	}
	var sets []*src
	kinds := map[string]bool{}
	for _, set := range ev.Logs {
		if set.Host {
			continue
		}
		s := &src{subject: set.Subject}
		for _, t := range set.Templates {
			l := templateLine(t, prepStmtErrRE)
			if l == "" {
				continue
			}
			if m := findSubmatch(prepStmtErrRE, l); m != nil && m[1] != "" {
				kinds[strings.ToLower(m[1])] = true
			}
			at := t.FirstSeen
			if lt, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
				at = lt
			}
			if s.line == "" || at.Before(s.at) {
				s.line, s.at = l, at
				s.server = matchLine(pgServerFormRE, l)
			}
			s.count += t.Count
		}
		if s.count > 0 {
			sets = append(sets, s)
		}
	}
	if len(sets) == 0 {
		return nil
	}
	// The client's own log names the victim; the server's log is the
	// same errors seen from the database.
	sort.SliceStable(sets, func(i, j int) bool {
		if sets[i].server != sets[j].server {
			return !sets[i].server
		}
		if (sets[i].subject == ev.Scope.Service) != (sets[j].subject == ev.Scope.Service) {
			return sets[i].subject == ev.Scope.Service
		}
		return sets[i].count > sets[j].count
	})
	top := sets[0]
	f := Finding{Kind: KindPooledPrepared, Subject: top.subject, Object: "client " + top.subject, Severity: SevCritical, Weight: 0.55, Source: SrcLogs}
	f.Time = top.at
	var errs []string
	for _, k := range []string{"does not exist", "already exists"} {
		if kinds[k] {
			errs = append(errs, `"prepared statement ... `+k+`"`)
		}
	}
	if len(errs) > 0 {
		f.setFact("errors", strings.Join(errs, " and "))
	}
	f.setFact("count", fmt.Sprintf("%d such errors in %s's log", top.count, top.subject))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %d prepared-statement errors: %s", top.subject, top.count, quote(ReadableLine(top.line), 240)))
	for _, s := range sets[1:] {
		if len(f.Evidence) >= 2 {
			break
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %d of them: %s", s.subject, s.count, quote(ReadableLine(s.line), 200)))
	}
	// The pooler's mode: its configuration or SHOW CONFIG, and the change
	// that switched it.
	txn := false
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			switch {
			case matchLine(txnPoolSettingRE, l) && !txn:
				txn = true
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 120), quote(strings.TrimSpace(l), 160)))
			case matchLine(maxPreparedZeroRE, l) && f.fact("tracking") == "":
				f.setFact("tracking", "the pooler does not track prepared statements (max_prepared_statements=0)")
			}
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if set.Subject == top.subject && matchLine(stmtCacheRE, l) && f.fact("client") == "" {
					f.setFact("client", fmt.Sprintf("%s caches prepared statements: %s", top.subject, quote(ReadableLine(l), 200)))
				}
			}
		}
	}
	for _, c := range append(append(ev.Earlier[:0:0], ev.Earlier...), ev.Changes...) {
		if !matchLine(txnPoolChangeRE, c.Description) || c.Timestamp.After(f.Time) {
			continue
		}
		txn = true
		if c.Service != "" {
			f.setFact("pooler", c.Service)
			if !containsStr(f.Related, c.Service) {
				f.Related = append(f.Related, c.Service)
			}
		}
	}
	if txn {
		f.Weight = 0.9
		f.setFact("why", fmt.Sprintf("the pooler in front of %s runs transaction pooling, which does not keep a session's prepared statements", top.subject))
	}
	f.Summary = fmt.Sprintf("%s's prepared statements fail on pooled server connections (%d errors)", top.subject, top.count)
	return []Finding{f}
}
