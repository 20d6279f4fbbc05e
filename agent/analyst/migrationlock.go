package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A schema migration that cannot run because the migration tool's lock is
// held by a run that is gone, or because an earlier run died half-way and
// left the schema marked dirty. Migration tools serialise runs with a lock
// row (Liquibase's DATABASECHANGELOGLOCK, knex's knex_migrations_lock) or
// a database advisory lock (Flyway, Rails, Prisma, golang-migrate). A
// lock row outlives its holder: when the process that took it is killed
// (OOM-killed, evicted, its pod deleted mid-run) nothing releases it, and
// every later run waits for it for ever ("Waiting for changelog lock....")
// or gives up after its timeout. A pod whose init container runs the
// migration then stays in Init (Init:0/1) and the release never starts.
//
// The chain runs: the holder killed mid-migration → the stale lock (or the
// dirty version) → the waiting init container → the pods that never
// start. The lock is the root an operator acts on (release it, force the
// version); the holder's end (its OOM kill) is the hop before it, named
// in the explanation and recommended against, not the answer: the kill
// alone does not say why nothing starts now.

// KindMigrationLock is a schema migration blocked by its tool's lock or
// by a dirty version left by an earlier run.
const KindMigrationLock Kind = "migration_lock"

var migrationLock = &mechanism{
	kind:      KindMigrationLock,
	class:     classCause,
	label:     "schema migration blocked by a migration lock (or a dirty version) left by an earlier run",
	detect:    detectMigrationLocks,
	fromCrash: migrationLockFromCrash,
	// The holder's end (its crash, its OOM kill), the database that holds
	// the lock, and the pods that never started.
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind == KindMigrationLock || infoOf(f.Kind).class == classChange {
			return false
		}
		for _, p := range h.Primary {
			if slices.Contains(p.Related, f.Subject) || p.fact("holder_pod") != "" && strings.Contains(f.Object, "/"+p.fact("holder_pod")) {
				return true
			}
		}
		return false
	},
	// A release that ships a migration (a changeset, a schema change).
	fitsChange: func(h *Hypothesis, c *Finding) bool { return matchLine(migrationChangeRE, changeText(c)) },
	describe:   describeMigrationLock,
	recommend:  recommendMigrationLock,
}

// migrationTools maps each line a migration tool prints when it cannot
// run to the tool and whether the line says the lock is held by another
// run ("lock") or that an earlier run left the schema half-migrated
// ("dirty"). The lines are the tools' own wording:
//
//	Liquibase  "Waiting for changelog lock...." every 10 s while the lock row
//	           is taken; "Could not acquire change log lock.  Currently
//	           locked by HOST (IP) since DATE" (LockException) when
//	           changeLogLockWaitTimeInMinutes runs out
//	Flyway     "Unable to obtain table lock - another Flyway instance may be
//	           running"; "Number of retries exceeded while attempting to
//	           acquire PostgreSQL advisory lock"; "Detected failed
//	           migration to version 1.2 (…)" (a failed run in its history)
//	Rails      "ActiveRecord::ConcurrentMigrationError: Cannot run migrations
//	           because another migration process is currently running."
//	golang-migrate "Dirty database version 16. Fix and force version.";
//	           "timeout: can't acquire database lock"
//	knex       "Migration table is already locked"
//	Prisma     "Timed out trying to acquire a postgres advisory lock
//	           (SELECT pg_advisory_lock(72707369))"
//
// Alembic has no lock of its own: a run that waits behind another session
// shows only on the database's side ("still waiting for
// AccessExclusiveLock"), a database lock wait, not this mechanism.
var migrationTools = []struct {
	tool, state string
	re          *regexp.Regexp
}{
	{"Liquibase", "lock", regexp.MustCompile(`(?i)waiting for change ?log lock|could not acquire change ?log lock|LockException`)},
	{"Flyway", "lock", regexp.MustCompile(`(?i)unable to obtain table lock - another flyway instance|retries exceeded while attempting to acquire (?:\w+ )?advisory lock`)},
	{"Flyway", "dirty", regexp.MustCompile(`(?i)detected failed migration to version`)},
	{"Rails", "lock", regexp.MustCompile(`ConcurrentMigrationError|(?i)cannot run migrations because another migration process is currently running`)},
	{"golang-migrate", "dirty", regexp.MustCompile(`(?i)dirty database version -?\d+\. fix and force version`)},
	{"golang-migrate", "lock", regexp.MustCompile(`(?i)timeout: can't acquire database lock`)},
	{"knex", "lock", regexp.MustCompile(`(?i)migration table is already locked`)},
	{"Prisma", "lock", regexp.MustCompile(`(?i)timed out trying to acquire a \w* ?advisory lock`)},
}

var (
	// migrationDoneRE: the lock was got (or let go) after the waiting, or
	// the run finished: the wait is over.
	migrationDoneRE = regexp.MustCompile(`(?i)successfully acquired change ?log lock|successfully released change ?log lock|successfully applied \d+ migrations?|schema .* is up to date|no migration necessary`)
	// Liquibase's LockException names the holder and since when.
	lockedByRE = regexp.MustCompile(`(?i)currently locked by (\S+)(?: \(([^)]*)\))? since (.+?)\s*$`)
	// golang-migrate's and Flyway's dirty version.
	dirtyVersionRE = regexp.MustCompile(`(?i)(?:dirty database version|failed migration to version) (-?[\w.]+)`)
	// A change that ships a migration.
	migrationChangeRE = regexp.MustCompile(`(?i)migrat|changeset|changelog|schema|flyway|liquibase|alembic|\bddl\b|backfill`)
	// A lock holder written "HOST (IP)".
	holderIPRE = regexp.MustCompile(`^(\S+)\s*\(([^)]*)\)$`)
)

// migrationLine reports the tool and state a line shows ("" when none).
func migrationLine(line string) (tool, state string) {
	for _, t := range migrationTools {
		if matchLine(t.re, line) {
			return t.tool, t.state
		}
	}
	return "", ""
}

// migrationWait is what the last lines of one container say: the first
// and last line of the wait, how many, and the tool.
type migrationWait struct {
	tool, state string
	first, last evidence.LogLine
	n           int
}

// readMigrationWait reads the last lines of a container's log: the lines
// of a migration that cannot run, after which nothing says it got the lock
// or finished. Nil when the log does not end in such a wait.
func readMigrationWait(lines []evidence.LogLine) *migrationWait {
	var w *migrationWait
	for _, l := range lines[max(0, len(lines)-50):] {
		if matchLine(migrationDoneRE, l.Text) {
			w = nil
			continue
		}
		tool, state := migrationLine(l.Text)
		if tool == "" {
			continue
		}
		if w == nil {
			w = &migrationWait{tool: tool, state: state, first: l}
		}
		if state == "dirty" {
			w.state = state
		}
		w.last = l
		w.n++
	}
	return w
}

// migrationLockFromCrash reads a crash whose last lines show the
// migration tool giving up on its lock (Liquibase's LockException after
// its wait timeout, Rails' ConcurrentMigrationError) or refusing a dirty
// version (golang-migrate, Flyway): the crash is the symptom.
func migrationLockFromCrash(crash Finding, c *containerState) (Finding, bool) {
	w := readMigrationWait(c.LastLines)
	if w == nil {
		return Finding{}, false
	}
	f := migrationFinding(c.Pod, c.Status.Name, w, crash.Time)
	f.Evidence = append(f.Evidence, crash.Evidence...)
	f.setFact("crashloop", "true")
	return f, true
}

// migrationFinding is the finding of one container whose migration
// waits (or gave up), before what the lock's holder says is added.
func migrationFinding(p *corev1.Pod, container string, w *migrationWait, fallback time.Time) Finding {
	f := Finding{Kind: KindMigrationLock, Subject: WorkloadOfPod(p), Object: "pod " + p.Namespace + "/" + p.Name, Namespace: p.Namespace,
		Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes, Time: w.first.Time}
	if f.Time.IsZero() {
		f.Time = fallback
	}
	if p.Spec.NodeName != "" {
		f.Related = []string{p.Spec.NodeName}
	}
	f.setFact("container", container)
	if isInitContainer(p, container) {
		f.setFact("init_container", container)
	}
	f.setFact("tool", w.tool)
	f.setFact("state", w.state)
	f.setFact("line", w.last.Text)
	f.setFact("current", "true") // the pod's state now
	if !w.first.Time.IsZero() {
		f.setFact("waiting_since", ts(w.first.Time))
	}
	f.setFact("lines", fmt.Sprint(w.n))
	where := fmt.Sprintf("pod %s/%s container %s", p.Namespace, p.Name, container)
	if f.fact("init_container") != "" {
		where = fmt.Sprintf("pod %s/%s init container %s", p.Namespace, p.Name, container)
	}
	f.setFact("where", where)
	ev := fmt.Sprintf("%s logs %s", where, quote(ReadableLine(w.last.Text), 240))
	if w.n > 1 {
		ev = fmt.Sprintf("%s logs %s %d times", where, quote(ReadableLine(w.last.Text), 240), w.n)
		if !w.first.Time.IsZero() && !w.last.Time.IsZero() {
			ev += fmt.Sprintf(", from %s to %s", ts(w.first.Time), ts(w.last.Time))
		}
	}
	f.Evidence = []string{ev}
	readLockLine(&f, w.last.Text)
	f.Summary = fmt.Sprintf("%s: %s migration %s", where, w.tool, map[string]string{"lock": "waits for its lock", "dirty": "refuses a dirty schema version"}[w.state])
	return f
}

// readLockLine adds what a line says of the lock's holder and of a dirty
// version.
func readLockLine(f *Finding, line string) {
	if m := findSubmatch(lockedByRE, line); m != nil {
		setHolder(f, m[1], m[2], m[3])
	}
	if m := findSubmatch(dirtyVersionRE, line); m != nil {
		f.setFact("dirty_version", strings.TrimSuffix(m[1], "."))
	}
}

func setHolder(f *Finding, holder, ip, since string) {
	if m := findSubmatch(holderIPRE, strings.TrimSpace(holder)); m != nil && ip == "" {
		holder, ip = m[1], m[2]
	}
	f.setFact("holder", holder)
	if ip != "" {
		f.setFact("holder_ip", ip)
	}
	if since != "" {
		f.setFact("granted", since)
	}
}

// detectMigrationLocks finds the workloads whose migration cannot run:
// first in the containers' own last lines (a running init container's
// current log is where a pod stuck in Init says what it waits for), then
// in the workloads' mined pod logs. It then reads who holds the lock (the
// tool's line, a lock table a SQL client printed) and what became of the
// holder.
func detectMigrationLocks(ev *Gathered, found []Finding) []Finding {
	have := map[string]bool{}
	for _, f := range found {
		if f.Kind == KindMigrationLock {
			have[f.Namespace+"/"+f.Subject] = true
		}
	}
	var out []Finding
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if p.Status.Phase == corev1.PodSucceeded || have[p.Namespace+"/"+WorkloadOfPod(p)] {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			// A crashed container's migration is read as its crash's
			// cause (fromCrash); here the containers still at it.
			if cs.State.Running == nil || cs.Ready {
				continue
			}
			w := readMigrationWait(ev.K8s.PreviousLogs[p.Namespace+"/"+p.Name+"/"+cs.Name])
			if w == nil {
				continue
			}
			f := migrationFinding(p, cs.Name, w, cs.State.Running.StartedAt.Time)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s Running since %s, not ready; pod %s/%s %s", f.fact("where"), ts(cs.State.Running.StartedAt.Time), p.Namespace, p.Name, podPhrase(p)))
			have[p.Namespace+"/"+f.Subject] = true
			out = append(out, f)
			break
		}
	}
	// The workloads' mined logs, when no container's own lines were read.
	for _, set := range ev.Logs {
		if set.Subject == "" || set.Completed || have[set.Namespace+"/"+set.Subject] {
			continue
		}
		for _, t := range set.Templates {
			line := t.Example
			if t.Last != "" {
				line = t.Last
			}
			tool, state := migrationLine(line)
			if tool == "" {
				continue
			}
			w := &migrationWait{tool: tool, state: state, n: t.Count,
				first: evidence.LogLine{Time: t.FirstSeen, Text: t.Example}, last: evidence.LogLine{Time: t.LastSeen, Text: line}}
			p := &corev1.Pod{}
			p.Name, p.Namespace = set.Source, set.Namespace
			for j := range ev.K8s.Pods {
				if q := &ev.K8s.Pods[j]; q.Name == set.Source && q.Namespace == set.Namespace {
					p = q
				}
			}
			f := migrationFinding(p, "", w, t.FirstSeen)
			f.Subject = set.Subject
			f.Object = "pod " + set.Namespace + "/" + set.Source
			where := fmt.Sprintf("pod %s/%s", set.Namespace, set.Source)
			if set.Host {
				where = set.Source
				f.Object = set.Source
			}
			putFact(&f, "where", where)
			f.Evidence[0] = fmt.Sprintf("%s logs %s (%s)", where, quote(ReadableLine(line), 240), plural(t.Count, "line", "lines"))
			f.Summary = fmt.Sprintf("%s: %s migration %s", where, tool, map[string]string{"lock": "waits for its lock", "dirty": "refuses a dirty schema version"}[state])
			have[set.Namespace+"/"+set.Subject] = true
			out = append(out, f)
			break
		}
	}
	for i := range out {
		f := &out[i]
		lockHolder(f, ev)
		holderEnd(f, ev, found)
		if by := f.fact("holder"); by != "" && f.fact("state") == "lock" {
			f.Summary = fmt.Sprintf("%s lock taken by %s at %s and never released; %s waits for it", f.fact("tool"), by, orWord(f.fact("granted_at"), orWord(f.fact("granted"), "an unknown time")), f.fact("where"))
		}
	}
	return out
}

// podPhrase says where a pod is: stuck in its init containers, or not
// ready.
func podPhrase(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodInitialized && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("is not initialized (%s, its main containers never start)", initProgress(p))
		}
	}
	return "is not ready"
}

// initProgress is kubectl's STATUS of a pod in its init containers
// ("Init:0/1").
func initProgress(p *corev1.Pod) string {
	done := 0
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			done++
		}
	}
	return fmt.Sprintf("Init:%d/%d", done, len(p.Spec.InitContainers))
}

// lockTableCols are a lock table's columns: whether the row is taken,
// by whom and since when (Liquibase's DATABASECHANGELOGLOCK, knex's
// knex_migrations_lock, ShedLock-like tables), and a migration table's
// dirty flag (golang-migrate's schema_migrations).
var (
	lockedCols  = []string{"locked", "is_locked"}
	byCols      = []string{"lockedby", "locked_by"}
	grantedCols = []string{"lockgranted", "locked_at", "lock_granted"}
)

func firstCell(t *sqlTable, r int, names []string) (string, bool) {
	for _, n := range names {
		if slices.Contains(t.cols, n) {
			return t.cell(r, n), true
		}
	}
	return "", false
}

func sqlTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "t", "true", "1", "yes":
		return true
	}
	return false
}

// lockHolder reads the lock's row (or the dirty version) from what SQL
// clients printed in the transcripts: a taken row names the holder and
// since when; the database it was read from bears on the finding.
func lockHolder(f *Finding, ev *Gathered) {
	for _, c := range ev.Commands {
		if !matchLine(sqlClientRE, c.Run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		for _, t := range sqlTables(c.Lines) {
			for r := range t.rows {
				if v, ok := firstCell(&t, r, lockedCols); ok && sqlTrue(v) {
					by, _ := firstCell(&t, r, byCols)
					granted, _ := firstCell(&t, r, grantedCols)
					if f.fact("holder") == "" && by != "" {
						setHolder(f, by, "", granted)
					} else if f.fact("granted") == "" && granted != "" {
						f.setFact("granted", granted)
					}
					f.setFact("lock_row", fmt.Sprintf("locked = %s%s%s", v, cellPhrase(", locked by ", by), cellPhrase(", granted ", granted)))
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", orWord(c.Run, c.Command), f.fact("lock_row")))
					relateDB(f, c)
				}
				if v, ok := firstCell(&t, r, []string{"dirty"}); ok && sqlTrue(v) {
					if ver := t.cell(r, "version"); ver != "" && f.fact("dirty_version") == "" {
						f.setFact("dirty_version", ver)
					}
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: version %s dirty = %s", orWord(c.Run, c.Command), t.cell(r, "version"), v))
					relateDB(f, c)
				}
			}
		}
	}
	if g := f.fact("granted"); g != "" {
		if t, ok := parseLockTime(g); ok {
			f.setFact("granted_at", ts(t))
			// The lock's age is the root's: it was left then.
			if f.Time.IsZero() || t.Before(f.Time) && t.After(f.Time.Add(-24*time.Hour)) {
				f.Time = t
			}
		}
	}
}

func cellPhrase(prefix, v string) string {
	if v == "" {
		return ""
	}
	return prefix + v
}

func relateDB(f *Finding, c evidence.CommandOutput) {
	if inst, _ := sqlInstanceOf(c); inst != "" {
		f.setFact("database", inst)
		if !slices.Contains(f.Related, inst) {
			f.Related = append(f.Related, inst)
		}
	}
}

// parseLockTime reads a lock's grant time as databases print a timestamp
// column (UTC when no zone is printed).
func parseLockTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "1/2/06, 3:04 PM", "1/2/06 3:04 PM"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// holderEnd reads what became of the lock's holder: a pod no longer
// listed (deleted or replaced mid-run), its events (BackOff, Killing), its
// crash or OOM-kill findings, and an OOM kill in the minutes after the
// lock was taken: the hop before the stale lock.
func holderEnd(f *Finding, ev *Gathered, found []Finding) {
	holder := f.fact("holder")
	granted, _ := time.Parse(time.RFC3339, f.fact("granted_at"))
	if holder != "" {
		listed := false
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if p.Name != holder {
				continue
			}
			listed = true
			for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
				if t := cs.LastTerminationState.Terminated; t != nil && (granted.IsZero() || !t.FinishedAt.Time.Before(granted)) {
					f.setFact("holder_end", fmt.Sprintf("its container %s was terminated (%s, exit code %d) at %s", cs.Name, orDash(t.Reason), t.ExitCode, ts(t.FinishedAt.Time)))
					addUpstream(f, "pod "+p.Namespace+"/"+p.Name)
				}
			}
		}
		if !listed && workloadOfPodName(holder) != holder {
			f.setFact("holder_pod", holder)
			f.setFact("holder_gone", "true")
			f.Related = append(f.Related, holder)
		}
		var seen []string
		for _, e := range ev.K8s.Events {
			if e.InvolvedObject.Name != holder || e.Type != corev1.EventTypeWarning && e.Reason != "Killing" {
				continue
			}
			s := fmt.Sprintf("%s: %s", e.Reason, strings.TrimSpace(e.Message))
			if !slices.Contains(seen, s) {
				seen = append(seen, s)
				f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on pod %s/%s (the lock's holder): %s", e.Reason, e.Namespace, holder, quote(e.Message, 200)))
			}
		}
		if len(seen) > 0 {
			addUpstream(f, "pod "+f.Namespace+"/"+holder)
		}
		if len(seen) > 0 && f.fact("holder_end") == "" {
			f.setFact("holder_end", "its events: "+strings.Join(seen, "; "))
		}
	}
	// An OOM kill between the lock being taken and the wait beginning:
	// the holder was killed mid-run (a kill the node reports names the
	// process, not the pod).
	if f.fact("holder_gone") == "" && holder != "" || granted.IsZero() {
		return
	}
	waitFrom := granted.Add(15 * time.Minute)
	if t, err := time.Parse(time.RFC3339, f.fact("waiting_since")); err == nil && t.After(granted) {
		waitFrom = t
	}
	var ooms []*Finding
	for i := range found {
		o := &found[i]
		if o.Kind == KindOOMKilled && !o.Time.IsZero() && !o.Time.Before(granted.Add(-time.Minute)) && !o.Time.After(waitFrom) {
			ooms = append(ooms, o)
		}
	}
	sort.SliceStable(ooms, func(i, j int) bool { return ooms[i].Time.Before(ooms[j].Time) })
	if len(ooms) > 0 {
		o := ooms[0]
		f.setFact("holder_oom", fmt.Sprintf("an OOM kill on %s at %s, %s after the lock was taken", o.Subject, ts(o.Time), o.Time.Sub(granted).Round(time.Second)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s (%s after the lock was taken)", orWord(o.Summary, o.Subject+" OOM-killed"), o.Time.Sub(granted).Round(time.Second)))
		if !slices.Contains(f.Related, o.Subject) {
			f.Related = append(f.Related, o.Subject)
		}
		addUpstream(f, o.Object)
	}
}

// addUpstream records an object whose finding is the hop before f (the
// holder's crash, its OOM kill): it bears on f but is not its consequence.
func addUpstream(f *Finding, object string) {
	if object == "" {
		return
	}
	up := strings.Split(f.fact("upstream"), "|")
	if !slices.Contains(up, object) {
		putFact(f, "upstream", strings.Trim(f.fact("upstream")+"|"+object, "|"))
	}
}

// putFact sets a fact, replacing what it said (setFact keeps the first).
func putFact(f *Finding, k, v string) {
	if f.Facts == nil {
		f.Facts = map[string]string{}
	}
	f.Facts[k] = v
}

func describeMigrationLock(h *Hypothesis, sc Scope) string {
	tool := orWord(h.fact("tool"), "the migration tool")
	where := orWord(h.fact("where"), h.Subject)
	var d string
	if h.fact("state") == "dirty" {
		d = fmt.Sprintf("%s's schema migration cannot run: %s refuses a dirty schema version", h.Subject, tool)
		d += h.wrapped(" (", "dirty_version", ")")
		d += fmt.Sprintf(", left by an earlier run that died half-way through it; %s logs %s", where, quote(ReadableLine(h.fact("line")), 200))
	} else {
		lock := "its migration lock"
		if tool == "Liquibase" {
			lock = "the Liquibase changelog lock (DATABASECHANGELOGLOCK)"
		}
		d = fmt.Sprintf("%s's schema migration cannot run: %s waits for %s", h.Subject, where, lock)
		d += h.clause(" since ", "waiting_since")
		d += fmt.Sprintf(" (%s)", quote(ReadableLine(h.fact("line")), 160))
		if by := h.fact("holder"); by != "" {
			d += fmt.Sprintf("; the lock is held by %s", by)
			if g := orWord(h.fact("granted_at"), h.fact("granted")); g != "" {
				d += " since " + g
			}
		}
		switch {
		case h.fact("holder_gone") != "":
			d += fmt.Sprintf(", a pod that no longer exists: the run that took the lock was killed before releasing it, so the lock is stale and nothing will release it")
		case h.fact("holder_end") != "":
			d += ", whose run did not finish: the lock is stale"
		default:
			d += "; a migration lock outlives a run that is killed, so a stale lock keeps every later run waiting"
		}
	}
	var hop []string
	if e := h.fact("holder_end"); e != "" {
		hop = append(hop, e)
	}
	if o := h.fact("holder_oom"); o != "" {
		hop = append(hop, o)
	}
	if len(hop) > 0 {
		d += fmt.Sprintf(" (the holder's end: %s)", strings.Join(hop, "; "))
	}
	if h.fact("init_container") != "" {
		d += fmt.Sprintf("; the migration runs as an init container, so the new pods of %s stay in Init and never start", h.Subject)
	}
	return d
}

func recommendMigrationLock(h *Hypothesis, sc Scope, r *recommender) {
	db := orWord(h.fact("database"), "the database")
	switch {
	case h.fact("state") == "dirty":
		r.high("Check how far version %s got on %s, fix it by hand, then force the recorded version (golang-migrate: migrate force V; Flyway: flyway repair) and let %s migrate again", orWord(h.fact("dirty_version"), "the dirty version"), db, h.Subject)
	case h.fact("tool") == "Liquibase":
		r.high("Release the stale changelog lock on %s once no migration runs: liquibase releaseLocks, or UPDATE DATABASECHANGELOGLOCK SET LOCKED=FALSE, LOCKGRANTED=NULL, LOCKEDBY=NULL WHERE ID=1; the waiting init containers then proceed", db)
	case h.fact("tool") == "knex":
		r.high("Release the stale migration lock on %s once no migration runs: knex migrate:unlock", db)
	default:
		r.high("End the session that holds %s's migration lock on %s (pg_terminate_backend of the holder of the advisory lock) once no migration runs", h.Subject, db)
	}
	if h.fact("holder_oom") != "" || strings.Contains(h.fact("holder_end"), "OOM") {
		r.high("Give the migration of %s enough memory (its run was OOM-killed while it held the lock): raise the container's memory limit, or run the long backfill in batches", h.Subject)
	}
	r.med("Check whether the interrupted run applied part of its changeset on %s before re-running it", db)
	r.low("Alert on pods of %s stuck in Init for longer than a migration takes, and set a lock wait timeout so a stale lock fails the run loudly", h.Subject)
}
