package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An Airflow pool whose slots another DAG holds. A pool caps how many task
// instances run at once against a shared resource (a warehouse, an SFTP
// server); a task that needs a slot waits in state "scheduled" while the
// pool has none open, and the scheduler says so on every loop ("Not
// scheduling since there are 0 open slots in pool warehouse_pool", in a
// task's log "dependency 'Pool Slots Available' FAILED"), its statsd
// gauges show pool.open_slots at 0 and pool.starving_tasks above it. The
// DAG that waits is late though nothing failed and the resource behind the
// pool is not slow: the slots are taken by another DAG's tasks (a backfill
// with catchup and many active runs, a high priority_weight that wins
// every freed slot). The answer names the pool, its slots, the DAG that
// waits and the DAG that holds them, with what makes it win them.

// KindAirflowPoolFull is an Airflow pool whose slots another DAG holds.
const KindAirflowPoolFull Kind = "airflow_pool_full"

var airflowPoolFull = &mechanism{
	kind:   KindAirflowPoolFull,
	class:  classCause,
	label:  "Airflow pool full: its slots held by another DAG's tasks",
	detect: detectAirflowPoolFull,
	related: exceptOwnAndChanges(KindAirflowPoolFull, func(h *Hypothesis, f *Finding) bool {
		p, holder := h.fact("pool"), h.fact("holder")
		return p != "" && strings.Contains(f.Summary, p) || holder != "" && (f.Subject == holder || strings.Contains(f.Summary, holder))
	}),
	// The change that brought the holding DAG (or changed the pool) is
	// the trigger; a change to the waiting DAG's own tasks is not.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return h.fact("holder") != "" && strings.Contains(t, h.fact("holder")) || h.fact("pool") != "" && strings.Contains(t, h.fact("pool"))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		pool := h.fact("pool")
		d := fmt.Sprintf("%s is late because its tasks wait in state scheduled for a slot of the Airflow pool %s", h.Subject, pool)
		if s := h.fact("slots"); s != "" {
			d += fmt.Sprintf(" (%s slots)", s)
		}
		if n := h.fact("waiting"); n != "" {
			d += fmt.Sprintf(", %s task instances waiting", n)
		}
		d += fmt.Sprintf(": the pool has 0 open slots (\"Not scheduling since there are 0 open slots in pool %s\")", pool)
		if holder := h.fact("holder"); holder != "" {
			d += fmt.Sprintf(", its slots held by the DAG %s", holder)
			var why []string
			if r := h.fact("holder_runs"); r != "" {
				why = append(why, r+" active runs")
			}
			if h.fact("catchup") != "" {
				why = append(why, "catchup=True"+h.wrapped(" since ", "start_date", ""))
			}
			if p := h.fact("priority_weight"); p != "" {
				why = append(why, "priority_weight "+p)
			}
			if len(why) > 0 {
				d += " (" + strings.Join(why, ", ") + ")"
			}
			d += ", so every slot that frees goes to " + holder + " and the waiting tasks do not start"
			if t := h.Trigger; t != nil {
				d += fmt.Sprintf("; %s came with %s's change at %s (%s)", holder, t.Subject, t.Time.UTC().Format(time.RFC3339), quote(t.Summary, 160))
			}
		}
		d += "; nothing failed and what the pool guards is not the bottleneck: the wait is for the pool's slots"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		pool, holder := h.fact("pool"), orWord(h.fact("holder"), "the DAG holding the pool")
		r.high("Free %s's slots for %s now: pause %s (airflow dags pause %s) or lower its max_active_runs/max_active_tasks, and let the waiting tasks run", pool, h.Subject, holder, holder)
		r.med("Give %s its own pool (or a pool_slots share) or a priority_weight above %s's so a backfill cannot take every slot of %s; run backfills with few active runs outside the nightly window", holder, h.Subject, pool)
		r.low("Alert on airflow pool.starving_tasks and pool.open_slots at 0 for the pools of SLA-bound DAGs, and on their runs' duration against the SLA")
	},
}

var (
	poolNoSlotsRE    = regexp.MustCompile(`(?:Not scheduling since there are|not scheduling since there are) (\d+) open slots in pool ([\w.-]+)|'Not scheduling since there are %s open slots in pool %s[^']*', (\d+), '([\w.-]+)'`)
	poolFiguringRE   = regexp.MustCompile(`Figuring out tasks to run in Pool\(name=([\w.-]+)\) with (\d+) open slots and (\d+) task instances ready to be queued`)
	poolTIRE         = regexp.MustCompile(`<TaskInstance: ([\w.-]+?)\.([\w-]+(?:\.[\w-]+)*) \S+ \[(?:scheduled|queued|running)\]>`)
	poolDagActiveRE  = regexp.MustCompile(`DAG ([\w.-]+) has (\d+)/(\d+) running and queued tasks`)
	poolTableRowRE   = regexp.MustCompile(`^\s*([\w.-]+)\s*\|\s*(\S+)\s*\|\s*(running|queued|scheduled|success|failed)\s*\|`)
	poolStateRowRE   = regexp.MustCompile(`^\s*([\w.-]+)\s*\|\s*\S+\s*\|\s*([\w.-]+)\s*\|\s*(scheduled|queued)\s*\|`)
	poolJSONNameRE   = regexp.MustCompile(`"name"\s*:\s*"([\w.-]+)"`)
	poolJSONOpenRE   = regexp.MustCompile(`"open_slots"\s*:\s*(\d+)`)
	poolJSONSlotsRE  = regexp.MustCompile(`"slots"\s*:\s*(\d+)`)
	poolListRowRE    = regexp.MustCompile(`^\s*([\w.-]+)\s*\|\s*(\d+)\s*\|`)
	poolPriorityRE   = regexp.MustCompile(`["']?priority_weight["']?\s*[:=]\s*(\d+)`)
	poolCatchupRE    = regexp.MustCompile(`\bcatchup\s*=\s*True\b`)
	poolStartDateRE  = regexp.MustCompile(`start_date\s*=\s*(?:pendulum\.)?datetime\((\d{4}), *(\d{1,2}), *(\d{1,2})`)
	poolDagIDRE      = regexp.MustCompile(`dag_id\s*=\s*["']([\w.-]+)["']`)
	poolActiveRunsRE = regexp.MustCompile(`max_active_runs\s*=\s*(\d+)`)
)

// airflowLines yields every line the evidence holds as text: the logs'
// kept lines and the commands' outputs.
func airflowLines(ev *Gathered, f func(line string, cmd *evidence.CommandOutput)) {
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			for _, l := range t.Lines() {
				f(l, nil)
			}
		}
		for _, l := range ev.Logs[i].Lines {
			f(l.Text, nil)
		}
	}
	for i := range ev.Commands {
		for _, l := range ev.Commands[i].Lines {
			f(l, &ev.Commands[i])
		}
	}
}

func detectAirflowPoolFull(ev *Gathered, _ []Finding) []Finding {
	pool, slots := "", ""
	var at time.Time
	waitingN := 0
	waitingDAG := map[string]int{}
	holders := map[string]int{}
	runs := map[string]int{}
	mark := func(l string) {
		if t, ok := evidence.LineTime([]byte(l), ev.Window.End); ok && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	airflowLines(ev, func(l string, _ *evidence.CommandOutput) {
		if m := findSubmatch(poolNoSlotsRE, l); m != nil {
			n, p := m[1], m[2]
			if p == "" {
				n, p = m[3], m[4]
			}
			if n == "0" && (pool == "" || p == pool) {
				pool = p
				mark(l)
			}
		}
		if m := findSubmatch(poolFiguringRE, l); m != nil && m[2] == "0" && (pool == "" || m[1] == pool) {
			pool = m[1]
			mark(l)
			if n, _ := strconv.Atoi(m[3]); n > waitingN {
				waitingN = n
			}
		}
		if m := findSubmatch(poolTIRE, l); m != nil && !strings.Contains(l, "Dependencies not met") {
			holders[m[1]]++
		}
		if m := findSubmatch(poolDagActiveRE, l); m != nil {
			holders[m[1]]++
		}
		if m := findSubmatch(poolTableRowRE, l); m != nil && strings.Contains(m[2], "__") && m[3] == "running" {
			runs[m[1]]++
		}
		if m := findSubmatch(poolStateRowRE, l); m != nil {
			waitingDAG[m[1]]++
		}
	})
	// The pool's own record: the REST API's JSON, the CLI's table.
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(poolJSONNameRE, l); m != nil && strings.Contains(l, `"open_slots"`) {
				if o := findSubmatch(poolJSONOpenRE, l); o != nil && o[1] == "0" && (pool == "" || m[1] == pool) {
					pool = m[1]
					if s := findSubmatch(poolJSONSlotsRE, l); s != nil {
						slots = s[1]
					}
				}
			}
		}
	}
	// Its gauges: open slots at 0 while tasks starve.
	starving := 0
	for name, s := range metricSeries(ev.Metrics) {
		p := s.Labels["pool"]
		if p == "" || len(s.Points) == 0 || pool != "" && p != pool {
			continue
		}
		last := s.Points[len(s.Points)-1].V
		switch {
		case strings.HasSuffix(name, "pool_open_slots") && last == 0:
			if pool == "" {
				pool = p
			}
			for i := len(s.Points) - 1; i >= 0 && s.Points[i].V == 0; i-- {
				if !s.Points[i].T.Before(ev.Window.Start) && (at.IsZero() || s.Points[i].T.Before(at)) {
					at = s.Points[i].T
				}
			}
		case strings.HasSuffix(name, "pool_starving_tasks") && last > 0:
			if int(last) > starving {
				starving = int(last)
			}
		}
	}
	if pool == "" {
		return nil
	}
	if slots == "" {
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if m := findSubmatch(poolListRowRE, l); m != nil && m[1] == pool {
					slots = m[2]
				}
			}
		}
	}
	// The DAG that waits: the one whose tasks sit scheduled, else the one
	// asked about.
	subject := ""
	if ev.Scope.Service != "" && waitingDAG[ev.Scope.Service] > 0 {
		subject = ev.Scope.Service
	}
	if subject == "" {
		best := 0
		for d, n := range waitingDAG {
			if n > best || n == best && d < subject {
				subject, best = d, n
			}
		}
	}
	if subject == "" {
		subject = ev.Scope.Service
	}
	if subject == "" || waitingN == 0 && starving == 0 && waitingDAG[subject] == 0 {
		return nil
	}
	if n := waitingDAG[subject]; n > waitingN {
		waitingN = n
	}
	if starving > waitingN {
		waitingN = starving
	}
	// The DAG that holds the slots: the one the scheduler queues into the
	// pool, or with the most active runs, that is not the one waiting.
	holder := ""
	for _, m := range []map[string]int{holders, runs} {
		var names []string
		for d := range m {
			if d != subject {
				names = append(names, d)
			}
		}
		sort.Slice(names, func(i, j int) bool {
			if m[names[i]] != m[names[j]] {
				return m[names[i]] > m[names[j]]
			}
			return names[i] < names[j]
		})
		if len(names) > 0 {
			holder = names[0]
			break
		}
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindAirflowPoolFull, Subject: subject, Object: "pool " + pool, Time: at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("pool", pool)
	f.setFact("slots", slots)
	if waitingN > 0 {
		f.setFact("waiting", strconv.Itoa(waitingN))
	}
	of := ""
	if slots != "" {
		of = " of " + slots
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("the Airflow pool %s has 0 open slots%s; %s's tasks wait in state scheduled (%d task instances ready to be queued)", pool, of, subject, waitingN))
	if holder != "" {
		f.setFact("holder", holder)
		if n := runs[holder]; n > 0 {
			f.setFact("holder_runs", strconv.Itoa(n))
		}
		readHolderDAG(ev, holder, &f)
		f.Related = append(f.Related, holder)
		e := fmt.Sprintf("the slots of %s are held by the DAG %s's tasks", pool, holder)
		if r := f.fact("holder_runs"); r != "" {
			e += " (" + r + " active runs)"
		}
		f.Evidence = append(f.Evidence, e)
	}
	f.Summary = fmt.Sprintf("Airflow pool %s has 0 open slots: %s's tasks wait in state scheduled", pool, subject)
	return []Finding{f}
}

// readHolderDAG reads what the holding DAG's definition says that makes
// it take the pool's slots: its priority_weight, catchup, start date and
// active runs.
func readHolderDAG(ev *Gathered, holder string, f *Finding) {
	for _, c := range ev.Commands {
		names := false
		for _, l := range c.Lines {
			if m := findSubmatch(poolDagIDRE, l); m != nil && m[1] == holder {
				names = true
			}
		}
		if !names && !strings.Contains(c.Command, holder) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(poolPriorityRE, l); m != nil && f.fact("priority_weight") == "" {
				f.setFact("priority_weight", m[1])
			}
			if matchLine(poolCatchupRE, l) {
				f.setFact("catchup", "true")
			}
			if m := findSubmatch(poolStartDateRE, l); m != nil {
				mo, _ := strconv.Atoi(m[2])
				d, _ := strconv.Atoi(m[3])
				f.setFact("start_date", fmt.Sprintf("%s-%02d-%02d", m[1], mo, d))
			}
			if m := findSubmatch(poolActiveRunsRE, l); m != nil && f.fact("holder_runs") == "" {
				f.setFact("holder_runs", m[1])
			}
		}
	}
}
