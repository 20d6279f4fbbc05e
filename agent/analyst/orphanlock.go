package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A database lock held by a session whose client is gone. Services elect a
// leader (or serialise a job) with a PostgreSQL advisory lock: the replica
// that takes pg_try_advisory_lock(N) works, the others stand by and retry.
// The lock lives as long as the holder's session. When the holder dies
// without closing its connection (its node is terminated, its network cut)
// the server does not notice: the session stays idle, holding the lock,
// until TCP keepalive gives up on the peer (tcp_keepalives_idle 0 means the
// kernel's 2 h) or an idle timeout ends it. Meanwhile every live replica
// is told "not leader" and no one does the work; nothing errors.
//
// The evidence read is the server's own views as psql prints them: a
// granted advisory lock in pg_locks joined to pg_stat_activity (pid,
// client_addr, application_name, state, state_change), the sessions that
// retry the same key (their last query pg_try_advisory_lock(N), or a pg_locks
// row of the key not granted), the standby replicas' own log lines naming
// the key, and SHOW tcp_keepalives_idle / idle_session_timeout. The client
// is gone when its address is no live pod's: the pod listing shows the
// cluster's pods with their IPs and none has the holder's.

// KindOrphanLock is a lock held by a session whose client is gone.
const KindOrphanLock Kind = "orphan_lock"

var orphanLock = &mechanism{
	kind:   KindOrphanLock,
	class:  classCause,
	label:  "lock held by a database session whose client is gone (no leader, work stopped)",
	detect: detectOrphanLock,
	// Nothing else is read as its consequence: the database's other
	// complaints and the idle downstream services say nothing of the lock.
	// A node's end took the client with it; no deploy does this.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "advisory") || strings.Contains(t, "keepalive") || strings.Contains(t, "leader")
	},
	describe:  describeOrphanLock,
	recommend: recommendOrphanLock,
}

var (
	// advisoryCallRE is a call taking an advisory lock, with its key
	// (one bigint, or two ints: the second is pg_locks' objid).
	advisoryCallRE = regexp.MustCompile(`(?i)pg_(?:try_)?advisory(?:_xact)?_lock(?:_shared)?\s*\(\s*(?:-?\d+\s*,\s*)?(-?\d+)\s*\)`)
	// standbyLineRE is a replica telling it is not the leader, or waits
	// for a lock.
	standbyLineRE = regexp.MustCompile(`(?i)\bnot (?:the )?leader\b|standing by|waiting for (?:the )?(?:leader |advisory )?lock|lock (?:is )?held by another|could not acquire (?:the )?(?:leader|advisory)? ?lock|another instance (?:is|holds)`)
)

// advisoryHolder is a session holding an advisory lock.
type advisoryHolder struct {
	pid, key, client, app, user, state string
	since                              time.Time // its last state change
	started                            string
}

// detectOrphanLock finds a granted advisory lock whose session's client
// address is no live pod's while others retry the lock.
func detectOrphanLock(ev *Gathered, found []Finding) []Finding {
	for _, f := range found {
		if f.Kind == KindMigrationLock {
			return nil
		}
	}
	var holders []*advisoryHolder
	byPid := map[string]*advisoryHolder{}
	waiters := map[string]map[string]bool{} // key → pids retrying it
	keepalive, idleTimeout := "", ""
	instance := ""
	for _, c := range ev.Commands {
		for _, t := range sqlTables(c.Lines) {
			switch {
			case slices.Contains(t.cols, "locktype") && slices.Contains(t.cols, "pid"):
				for r := range t.rows {
					if !strings.EqualFold(t.cell(r, "locktype"), "advisory") {
						continue
					}
					key := t.cell(r, "objid")
					if cl := t.cell(r, "classid"); cl != "" && cl != "0" && key != "" {
						// A bigint key: classid holds its high half.
						hi, e1 := strconv.ParseInt(cl, 10, 64)
						lo, e2 := strconv.ParseInt(key, 10, 64)
						if e1 == nil && e2 == nil && t.cell(r, "objsubid") != "2" {
							key = strconv.FormatInt(hi<<32|lo, 10)
						}
					}
					pid := t.cell(r, "pid")
					if g := strings.ToLower(t.cell(r, "granted")); g == "f" || g == "false" {
						if waiters[key] == nil {
							waiters[key] = map[string]bool{}
						}
						waiters[key][pid] = true
						continue
					}
					h := byPid[pid]
					if h == nil {
						h = &advisoryHolder{pid: pid}
						byPid[pid] = h
						holders = append(holders, h)
						if instance == "" {
							instance, _ = sqlInstanceOf(c)
						}
					}
					h.key = key
					h.read(&t, r)
				}
			case slices.Contains(t.cols, "pid") && (slices.Contains(t.cols, "client_addr") || slices.Contains(t.cols, "state")):
				for r := range t.rows {
					pid := t.cell(r, "pid")
					q := t.cell(r, "query") + " " + t.cell(r, "last_query")
					if m := findSubmatch(advisoryCallRE, q); m != nil {
						if waiters[m[1]] == nil {
							waiters[m[1]] = map[string]bool{}
						}
						waiters[m[1]][pid] = true
					}
					if h := byPid[pid]; h != nil {
						h.read(&t, r)
					}
				}
			}
			for r := range t.rows {
				if v := t.cell(r, "tcp_keepalives_idle"); v != "" {
					keepalive = v
				}
				if v := t.cell(r, "idle_session_timeout"); v != "" {
					idleTimeout = v
				}
			}
		}
	}
	if len(holders) == 0 {
		return nil
	}
	// The standby replicas' lines naming a key.
	logWaiters := map[string]string{} // key → a service retrying it
	standby := map[string]string{}    // service → its standby line
	for _, set := range ev.Logs {
		if set.Host {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(advisoryCallRE, l); m != nil && logWaiters[m[1]] == "" {
					logWaiters[m[1]] = set.Subject
				}
				if matchLine(standbyLineRE, l) && standby[set.Subject] == "" {
					standby[set.Subject] = l
				}
			}
		}
	}
	// Live pods' addresses.
	podIPs := map[string]string{}
	for _, p := range ev.K8s.Pods {
		if p.Status.PodIP != "" {
			podIPs[p.Status.PodIP] = p.Name
		}
	}
	if len(podIPs) == 0 {
		return nil
	}
	for _, h := range holders {
		if h.client == "" || podIPs[h.client] != "" || !sameNetwork(h.client, podIPs) {
			continue
		}
		delete(waiters[h.key], h.pid)
		nw := len(waiters[h.key])
		retrier := logWaiters[h.key]
		if nw == 0 && retrier == "" {
			continue
		}
		app := orWord(h.app, orWord(retrier, h.user))
		subject := app
		if retrier != "" {
			subject = retrier
		}
		f := Finding{Kind: KindOrphanLock, Subject: subject, Object: "advisory lock " + h.key, Severity: SevCritical, Weight: 0.9, Source: "database-sessions"}
		f.Time = h.since
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("key", h.key)
		f.setFact("pid", h.pid)
		f.setFact("client", h.client)
		f.setFact("db_instance", instance)
		f.setFact("app", app)
		held := fmt.Sprintf("session %s (%s from %s", h.pid, orWord(app, "a client"), h.client)
		if h.started != "" {
			held += ", connected " + h.started
		}
		held += ")"
		if h.state != "" {
			held += " is " + h.state
			if !h.since.IsZero() {
				held += " since " + ts(h.since)
			}
		}
		f.setFact("held", held)
		f.Evidence = append(f.Evidence, fmt.Sprintf("pg_locks on %s: advisory lock %s granted to %s", orWord(instance, "the database"), h.key, held))
		f.Evidence = append(f.Evidence, fmt.Sprintf("no live pod has the client address %s (%d pods listed with their IPs)", h.client, len(podIPs)))
		if nw > 0 {
			f.setFact("waiters", fmt.Sprintf("%d other sessions retry the lock", nw))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%d other sessions of %s retry pg_try_advisory_lock(%s)", nw, orWord(instance, "the database"), h.key))
		}
		if l := standby[subject]; l != "" {
			f.setFact("standby", fmt.Sprintf("%s stands by: %s", subject, quote(ReadableLine(l), 120)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs: %s", subject, quote(ReadableLine(l), 160)))
		}
		if ka := keepaliveWords(keepalive, idleTimeout); ka != "" {
			f.setFact("keepalive", ka)
			f.Evidence = append(f.Evidence, "the server: "+ka)
		}
		// The asked service waits on the leader's work.
		if s := ev.Scope.Service; s != "" && s != subject {
			f.Related = appendNew(f.Related, s)
		}
		f.setFact("why", fmt.Sprintf("advisory lock %s is held by a dead client's session, so no replica of %s becomes leader", h.key, subject))
		f.Summary = fmt.Sprintf("%s: advisory lock %s held by session %s of a client that is gone (%s)", subject, h.key, h.pid, h.client)
		return []Finding{f}
	}
	return nil
}

// read takes what a pg_stat_activity row says of the holder's session.
func (h *advisoryHolder) read(t *sqlTable, r int) {
	if v := strings.TrimSuffix(t.cell(r, "client_addr"), "/32"); v != "" {
		h.client = v
	}
	if v := t.cell(r, "application_name"); v != "" {
		h.app = v
	}
	if v := t.cell(r, "usename"); v != "" {
		h.user = v
	}
	if v := t.cell(r, "state"); v != "" {
		h.state = v
	}
	if at, ok := pgTime(t.cell(r, "state_change")); ok {
		h.since = at
	}
	if v := t.cell(r, "backend_start"); v != "" {
		if at, ok := pgTime(v); ok {
			h.started = ts(at)
		}
	}
}

// sameNetwork reports whether an address is in a /16 of the live pods'
// addresses: a client of the cluster, not an outside host.
func sameNetwork(ip string, podIPs map[string]string) bool {
	p := strings.Split(ip, ".")
	if len(p) != 4 {
		return false
	}
	for other := range podIPs {
		q := strings.Split(other, ".")
		if len(q) == 4 && p[0] == q[0] && p[1] == q[1] {
			return true
		}
	}
	return false
}

// keepaliveWords says why the server keeps a dead peer's session: its TCP
// keepalive idle time, its idle session timeout.
func keepaliveWords(keepalive, idle string) string {
	var parts []string
	if keepalive != "" {
		n, err := strconv.Atoi(strings.TrimSuffix(keepalive, "s"))
		switch {
		case err == nil && n == 0:
			parts = append(parts, "tcp_keepalives_idle 0 (the kernel's default, 2 h)")
		case err == nil && n >= 600:
			parts = append(parts, fmt.Sprintf("tcp_keepalives_idle %d s, so a dead peer is noticed only after %s", n, durWords(float64(n))))
		}
	}
	if idle == "0" || idle == "0s" {
		parts = append(parts, "idle_session_timeout 0 (idle sessions never end)")
	}
	return strings.Join(parts, ", ")
}

func describeOrphanLock(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("advisory lock %s (the leader lock of %s) is held by a stale session whose client is gone: %s", orWord(h.fact("key"), "?"), h.Subject, orWord(h.fact("held"), "an idle session"))
	d += fmt.Sprintf(", and no live pod has its address %s", orWord(h.fact("client"), "?"))
	d += h.clause("; ", "waiters")
	d += h.clause("; ", "standby")
	d += "; the server keeps the dead client's session, and with it the lock, until TCP keepalive or a timeout ends it"
	d += h.wrapped(" (", "keepalive", ")")
	d += fmt.Sprintf(", so no replica of %s becomes leader and its work stopped without an error", h.Subject)
	return d
}

func recommendOrphanLock(h *Hypothesis, sc Scope, r *recommender) {
	r.high("Terminate the stale session holding the lock: SELECT pg_terminate_backend(%s); a standby replica of %s then takes the lock", orWord(h.fact("pid"), "<pid>"), h.Subject)
	r.med("Make the server notice dead clients within minutes: tcp_keepalives_idle 60, tcp_keepalives_interval 10, tcp_keepalives_count 3 (and client_connection_check_interval on PostgreSQL 14+), or idle_session_timeout for the leader's sessions")
	r.low("Alert when the leader's work stops (no job enqueued for longer than its period) and on advisory locks held by idle sessions; prefer a leader lease with an expiry (a Kubernetes Lease, a lock row with a timestamp) to a session lock")
}
