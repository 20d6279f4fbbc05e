package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A connection pool smaller than the concurrency sharing it. A worker or
// server runs many tasks at once in one process (Celery's gevent, eventlet
// or threads pool with -c 100, gunicorn's gthread or gevent workers,
// Sidekiq's or puma's threads), and that process's database pool
// (SQLAlchemy's pool_size and max_overflow, HikariCP's maximumPoolSize,
// ActiveRecord's pool) has far fewer connections: most tasks wait for a
// connection and fail when the pool's wait runs out ("QueuePool limit of
// size 10 overflow 0 reached, connection timed out, timeout 30.00"), are
// retried, and the work piles up (a queue's backlog, slow requests) while
// the database itself is idle. Typically a change raised the concurrency
// (prefork processes, each with its own pool, became one process of green
// threads) and left the pool as it was. Read from the pool's wait errors
// in the service's log, its pool size (from the error or its
// environment), its concurrency per process (its container's command and
// arguments or environment) well above that size, and the change of its
// settings before the onset. A pool held by one caller's long calls is
// poolheld.go's.

// KindPoolUndersized is a client's connection pool smaller than the
// concurrency of the process sharing it.
const KindPoolUndersized Kind = "pool_undersized"

var (
	// greenPoolRE is a worker pool that runs its tasks in one process
	// (Celery's -P/--pool gevent, eventlet, threads; gunicorn's -k/
	// --worker-class gevent, eventlet, gthread).
	greenPoolRE = regexp.MustCompile(`(?i)^(?:gevent|eventlet|threads?|gthread|gevent_?websocket|uvicorn\.workers\.\w+)$`)
	// concurrencyEnvRE is a setting of the concurrency in one process.
	concurrencyEnvRE = regexp.MustCompile(`(?i)^(?:CELERY_?WORKER_CONCURRENCY|CELERYD_CONCURRENCY|WORKER_CONCURRENCY|SIDEKIQ_CONCURRENCY|(?:PUMA|RAILS)_MAX_THREADS|GUNICORN_THREADS|GUNICORN_WORKER_CONNECTIONS|WORKER_CONNECTIONS|THREADS|MAX_THREADS)$`)
	// poolSizeEnvRE and poolOverflowEnvRE are the pool's own settings.
	poolSizeEnvRE     = regexp.MustCompile(`(?i)^(?:DB_POOL_SIZE|DATABASE_POOL_SIZE|SQLALCHEMY_POOL_SIZE|POOL_SIZE|DB_POOL|DATABASE_POOL|RAILS_DB_POOL|DB_MAX_POOL_SIZE|SPRING_DATASOURCE_HIKARI_MAXIMUM_?POOL_?SIZE|spring\.datasource\.hikari\.maximum-pool-size|DB_MAX_CONNS|DB_MAX_OPEN_CONNS)$`)
	poolOverflowEnvRE = regexp.MustCompile(`(?i)^(?:DB_MAX_OVERFLOW|SQLALCHEMY_MAX_OVERFLOW|MAX_OVERFLOW|DB_POOL_MAX_OVERFLOW)$`)
	// concurrencyChangeRE is a change that says it altered how much runs
	// at once.
	concurrencyChangeRE = regexp.MustCompile(`(?i)concurren|gevent|eventlet|greenlet|gthread|prefork|\bthreads?\b|worker[_ -]?connections|(?:^|\s)-c\s*\d+|max_threads|worker pool|\bpool\b`)
)

var poolUndersized = &mechanism{
	kind:   KindPoolUndersized,
	class:  classCause,
	label:  "a connection pool smaller than the concurrency sharing it",
	detect: detectPoolUndersized,
	// The work that piles up behind it (a queue's backlog, the slow
	// tasks), the database's own client view, and the service's errors.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		if f.Subject == h.Subject || f.fact("caller") == h.Subject {
			return true
		}
		if q := h.fact("queue"); q != "" && f.Subject == q {
			return true
		}
		return (f.Kind == KindDatabase || f.Kind == KindBacklog) && affectsRelated(h, f)
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && matchLine(concurrencyChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's database connection pool (%s) is smaller than the concurrency sharing it (%s): %s tasks at a time wait for %s connections", h.Subject, h.fact("pool"), h.fact("concurrency_setting"), h.fact("concurrency"), h.fact("pool_size"))
		d += h.clause(" and fail after the pool's wait of ", "wait_timeout")
		d += h.lineClause(200)
		if q := h.fact("queue"); q != "" {
			d += fmt.Sprintf("; the failed tasks are retried and the %s queue grows", q)
		}
		d += "; the wait is in the client's own pool, not in the database"
		if c := h.fact("change"); c != "" {
			d += "; the concurrency came with " + c
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Size %s's connection pool to its concurrency (%s now %s for %s tasks at a time), or lower the concurrency to what the pool holds; revert the change that raised the concurrency if it came with it", h.Subject, h.fact("pool_setting"), h.fact("pool_size"), h.fact("concurrency"))
		r.med("Check that the database's max_connections holds every process's pool at the new size (replicas x processes x pool size), or put a pooler (PgBouncer, RDS Proxy) in between")
		r.low("Alert on %s's pool wait timeouts and on the pool's checked-out connections against its size", h.Subject)
	},
}

// detectPoolUndersized finds a service whose pool wait errors come with a
// concurrency per process well above its pool's size.
func detectPoolUndersized(ev *Gathered, found []Finding) []Finding {
	var pools keyed[poolState]
	poolWaits(ev, &pools)
	var out []Finding
	for _, subj := range pools.order {
		p := pools.m[subj]
		if p.onset.IsZero() {
			continue
		}
		ws := workloadSettings(ev, subj)
		if ws.ns == "" && len(ws.env) == 0 && len(ws.args) == 0 {
			continue
		}
		conc, concSetting, concPool := concurrencyOf(ws)
		size, sizeSetting := p.size, "as its errors state"
		if s, name := poolSizeSetting(ws); s > 0 {
			size, sizeSetting = strconv.Itoa(s), name
		}
		n, _ := strconv.Atoi(size)
		if conc == 0 || n <= 0 || conc < 2*n {
			continue
		}
		f := Finding{Kind: KindPoolUndersized, Subject: subj, Object: "service " + subj, Namespace: ws.ns, Source: SrcLogs, Time: p.onset, Severity: SevCritical, Weight: 0.9, Facts: map[string]string{}}
		f.setFact("pool", sizeSetting)
		f.setFact("pool_setting", strings.SplitN(sizeSetting, "=", 2)[0])
		f.setFact("pool_size", size)
		f.setFact("concurrency", strconv.Itoa(conc))
		f.setFact("concurrency_setting", concSetting)
		f.setFact("setting", concPool)
		f.setFact("wait_timeout", p.timeout)
		f.setFact("line", p.line)
		// A queue piling up behind the service.
		for _, g := range found {
			if g.Kind == KindBacklog && (g.fact("consumer") == subj || strings.Contains(subj, strings.TrimSuffix(g.Subject, "s"))) {
				f.setFact("queue", g.Subject)
				f.Related = append(f.Related, g.Subject)
				// The log shows only its last minutes: the work began to
				// pile up when the queue did.
				if !g.Time.IsZero() && g.Time.Before(f.Time) {
					f.Time = g.Time
				}
				break
			}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %d pool wait timeouts from %s: %s", subj, p.lines, hm(p.onset), quote(ReadableLine(p.line), 240)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s runs %d tasks at a time in one process (%s) against a pool of %s connections (%s)", subj, conc, concSetting, size, sizeSetting))
		if c := lastSettingsChange(ev, subj, p.onset); c != nil {
			f.setFact("change", fmt.Sprintf("the change of %s at %s: %s", subj, ts(c.Timestamp), quote(c.Description, 180)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the change that set %s's concurrency, at %s: %s", subj, ts(c.Timestamp), quote(c.Description, 200)))
		}
		f.Summary = fmt.Sprintf("%s's connection pool of %s is smaller than its concurrency of %d", subj, size, conc)
		out = append(out, f)
	}
	return out
}

// workloadSpec is what a workload's spec says of its main containers:
// their command and arguments, and their environment.
type workloadSpec struct {
	ns   string
	args []string
	env  []envVar
}

func workloadSettings(ev *Gathered, subj string) workloadSpec {
	var ws workloadSpec
	add := func(ns string, cs []corev1.Container) {
		ws.ns = orWord(ws.ns, ns)
		for _, c := range cs {
			ws.args = append(ws.args, c.Command...)
			ws.args = append(ws.args, c.Args...)
			for _, v := range c.Env {
				ws.env = append(ws.env, envVar{v.Name, v.Value})
			}
		}
	}
	for _, d := range ev.K8s.Deployments {
		if d.Name == subj {
			add(d.Namespace, d.Spec.Template.Spec.Containers)
		}
	}
	if len(ws.args) == 0 && len(ws.env) == 0 {
		for _, p := range ev.K8s.Pods {
			if workloadOfPodName(p.Name) == subj {
				add(p.Namespace, p.Spec.Containers)
				break
			}
		}
	}
	return ws
}

// concurrencyOf reads how many tasks one process of the workload runs at
// once: Celery's -c/--concurrency with a pool of green threads or
// threads (prefork processes each have their own pool), gunicorn's
// --threads or --worker-connections, or a concurrency setting in its
// environment.
func concurrencyOf(ws workloadSpec) (int, string, string) {
	args := splitArgs(ws.args)
	pool, poolFlag := "", ""
	var conc, threads, conns int
	var concFlag, threadsFlag, connsFlag string
	for i := 0; i < len(args); i++ {
		name, val, ok := argFlag(args, &i)
		if !ok {
			continue
		}
		switch name {
		case "-P", "--pool", "-k", "--worker-class":
			pool, poolFlag = val, name+" "+val
		case "-c", "--concurrency":
			if n, err := strconv.Atoi(val); err == nil {
				conc, concFlag = n, name+" "+val
			}
		case "--threads":
			if n, err := strconv.Atoi(val); err == nil {
				threads, threadsFlag = n, name+" "+val
			}
		case "--worker-connections":
			if n, err := strconv.Atoi(val); err == nil {
				conns, connsFlag = n, name+" "+val
			}
		}
	}
	green := pool != "" && matchLine(greenPoolRE, pool)
	switch {
	case conc > 0 && green:
		return conc, fmt.Sprintf("%s pool, %s, in one process", pool, concFlag), pool
	case threads > 1:
		return threads, threadsFlag + " per process", ""
	case conns > 0 && green:
		return conns, fmt.Sprintf("%s, %s", poolFlag, connsFlag), pool
	}
	for _, v := range ws.env {
		if matchLine(concurrencyEnvRE, v.name) {
			if n, err := strconv.Atoi(strings.TrimSpace(v.value)); err == nil && n > 1 {
				return n, v.name + "=" + strings.TrimSpace(v.value), v.name
			}
		}
	}
	return 0, "", ""
}

// poolSizeSetting reads the pool's size (with its overflow) from the
// workload's environment.
func poolSizeSetting(ws workloadSpec) (int, string) {
	size, overflow := -1, 0
	var names []string
	for _, v := range ws.env {
		val := strings.TrimSpace(v.value)
		n, err := strconv.Atoi(val)
		if err != nil {
			continue
		}
		switch {
		case size < 0 && matchLine(poolSizeEnvRE, v.name):
			size = n
			names = append(names, v.name+"="+val)
		case matchLine(poolOverflowEnvRE, v.name):
			overflow = n
			names = append(names, v.name+"="+val)
		}
	}
	if size <= 0 {
		return 0, ""
	}
	return size + overflow, strings.Join(names, ", ")
}

// splitArgs splits a container's command and arguments into words (a
// shell command given as one argument included).
func splitArgs(args []string) []string {
	var out []string
	for _, a := range args {
		out = append(out, strings.Fields(a)...)
	}
	return out
}

// argFlag reads the flag at args[*i] with its value ("-c 100",
// "--concurrency=100", "-c100"), advancing *i past a separate value.
func argFlag(args []string, i *int) (name, val string, ok bool) {
	a := args[*i]
	if !strings.HasPrefix(a, "-") {
		return "", "", false
	}
	if k, v, found := strings.Cut(a, "="); found {
		return k, v, true
	}
	if len(a) > 2 && a[1] != '-' && (a[1] == 'c' || a[1] == 'P' || a[1] == 'k') {
		return a[:2], a[2:], true
	}
	if *i+1 < len(args) && !strings.HasPrefix(args[*i+1], "-") {
		*i++
		return a, args[*i], true
	}
	return "", "", false
}

// lastSettingsChange is the last change of subj's settings (not a
// release of its code, unless it says it changed its concurrency) in the
// week before the onset.
func lastSettingsChange(ev *Gathered, subj string, onset time.Time) *evidence.Change {
	var last *evidence.Change
	for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
		for i := range cs {
			c := &cs[i]
			if !strings.EqualFold(c.Service, subj) || c.Timestamp.After(onset) || onset.Sub(c.Timestamp) > poolCapAge || !matchLine(concurrencyChangeRE, c.Description) {
				continue
			}
			if last == nil || c.Timestamp.After(last.Timestamp) {
				last = c
			}
		}
	}
	return last
}
