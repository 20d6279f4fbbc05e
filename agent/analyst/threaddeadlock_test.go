package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

func TestDeadlockLines(t *testing.T) {
	for _, c := range []struct {
		line   string
		report bool
		lock   string
	}{
		{"Found one Java-level deadlock:", true, ""},
		{"Found 1 deadlock.", true, ""},
		{"Found 2 deadlocks.", true, ""},
		{"fatal error: all goroutines are asleep - deadlock!", true, ""},
		{`  waiting to lock monitor 0x00007f3b9c003f80 (object 0x00000000c1a2b3c8, a com.acme.claims.coverage.CoverageRegistry),`, false, "CoverageRegistry"},
		{`	- waiting to lock <0x00000000c19f0e10> (a com.acme.claims.policy.PolicyCache)`, false, "PolicyCache"},
		{`  waiting for ownable synchronizer 0x000000076ab62208, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),`, false, "ReentrantLock$NonfairSync"},
		// A database's deadlock aborts one transaction: not a stuck process.
		{`2026-04-01 10:00:00 UTC [811] ERROR:  deadlock detected`, false, ""},
		{`Deadlock found when trying to get lock; try restarting transaction`, false, ""},
		{`	- locked <0x00000000c19f0e10> (a com.acme.claims.policy.PolicyCache)`, false, ""},
	} {
		if got := deadlockReportRE.MatchString(c.line); got != c.report {
			t.Errorf("report(%q) = %v", c.line, got)
		}
		lock := ""
		if m := lockWaitRE.FindStringSubmatch(c.line); m != nil {
			lock = shortClass(m[1] + m[2])
		}
		if lock != c.lock {
			t.Errorf("lock(%q) = %q, want %q", c.line, lock, c.lock)
		}
	}
}

// TestDetectDeadlocks reads a JVM thread dump in a service's log: the
// deadlock is the service's, named with its locks, and began no later
// than the service's request threads filled up.
func TestDetectDeadlocks(t *testing.T) {
	t0 := time.Date(2026, 8, 19, 15, 0, 0, 0, time.UTC)
	tpl := func(line string, n int, at time.Time) analysis.LogTemplate {
		return analysis.LogTemplate{Template: line, Example: line, Count: n, Incident: n, FirstSeen: at, FirstIncident: at, LastSeen: at}
	}
	dumpAt := t0.Add(5 * time.Minute)
	dump := LogSet{Source: "claims-service.log", Subject: "claims-service", Origin: SrcLogs, HasBaseline: true, Templates: []analysis.LogTemplate{
		tpl(`2026-08-19T14:00:00.184Z  INFO 1 --- [claims-service] [nio-8080-exec-18] c.a.claims.api.ClaimController : claim CLM-4400389 created for policy POL-789998`, 40, t0.Add(-time.Hour)),
		tpl(`   java.lang.Thread.State: BLOCKED (on object monitor)`, 3, dumpAt),
		tpl(`	- waiting to lock <0x00000000c1a2b3c8> (a com.acme.claims.coverage.CoverageRegistry)`, 2, dumpAt),
		tpl(`	- waiting to lock <0x00000000c19f0e10> (a com.acme.claims.policy.PolicyCache)`, 3, dumpAt),
		tpl(`Found 1 deadlock.`, 1, dumpAt),
		tpl(`Found one Java-level deadlock:`, 1, dumpAt),
	}}
	// A database's deadlock in another source is not a stuck process.
	db := LogSet{Source: "postgres.log", Subject: "claims-db", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tpl(`2026-08-19 15:01:00 UTC [811] ERROR:  deadlock detected`, 2, t0),
	}}
	w := Window{BaselineStart: t0.Add(-2 * time.Hour), Start: t0.Add(-time.Hour), End: t0.Add(30 * time.Minute)}
	saturated := Finding{Kind: KindSaturation, Subject: "claims-service", Time: t0.Add(-6 * time.Minute)}
	fs := detectDeadlocks(&Gathered{Logs: []LogSet{dump, db}, Window: w}, []Finding{saturated})
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Subject != "claims-service" || f.Kind != KindDeadlock || !f.Time.Equal(saturated.Time) {
		t.Errorf("finding %s of %s at %s, want thread_deadlock of claims-service at %s", f.Kind, f.Subject, f.Time, saturated.Time)
	}
	if f.fact("locks") != "CoverageRegistry, PolicyCache" || f.fact("blocked") != "3" || !strings.Contains(f.fact("line"), "Java-level") {
		t.Errorf("facts %v", f.Facts)
	}
	h := &Hypothesis{Kind: KindDeadlock, Subject: "claims-service", Primary: []*Finding{&f}}
	if d := describe(h, Scope{}); !strings.Contains(d, "deadlocked") || !strings.Contains(d, "CoverageRegistry, PolicyCache") {
		t.Errorf("description %q", d)
	}
	if len(recommend(h, Scope{})) == 0 {
		t.Error("no recommendations")
	}
	// Without its report a thread dump's BLOCKED threads are contention,
	// not a deadlock.
	dump.Templates = dump.Templates[:4]
	if fs := detectDeadlocks(&Gathered{Logs: []LogSet{dump}, Window: w}, nil); len(fs) != 0 {
		t.Errorf("BLOCKED threads without a deadlock report: %+v", fs)
	}
}
