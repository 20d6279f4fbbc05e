package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

func TestOOMVictimLines(t *testing.T) {
	units := []struct{ line, unit string }{
		{"Nov 26 14:03:39 vm3 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/orders.service,task=java,pid=71022,uid=998", "orders"},
		{"[812345.120931] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=postgresql@14-main.service,mems_allowed=0,global_oom,task_memcg=/system.slice/system-postgresql.slice/postgresql@14-main.service,task=postgres,pid=1203,uid=113", "postgresql@14-main"},
		{"kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/burstable/pod1,task_memcg=/kubepods/burstable/pod1/abc,task=node,pid=9,uid=0", ""},
		{"kernel: Out of memory: Killed process 71022 (java) total-vm:6613280kB, anon-rss:4750856kB", ""},
	}
	for _, c := range units {
		if got := oomVictimUnit(c.line); got != c.unit {
			t.Errorf("oomVictimUnit(%q) = %q, want %q", c.line, got, c.unit)
		}
	}
	invokers := []struct{ line, proc string }{
		{"2026-11-26T14:03:39.643002+00:00 vm3 kernel: python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0", "python3"},
		{"Mar  3 02:10:11 db1 kernel: [1234567.891011] pg_dump invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0", "pg_dump"},
		{"kernel: Out of memory: Killed process 1 (java)", ""},
	}
	for _, c := range invokers {
		if got := oomInvoker(c.line); got != c.proc {
			t.Errorf("oomInvoker(%q) = %q, want %q", c.line, got, c.proc)
		}
	}
	at := time.Date(2026, 3, 3, 2, 10, 0, 0, time.UTC)
	crons := []struct {
		line, want string
	}{
		{"2026-03-03T02:00:01+00:00 db1 CRON[88210]: (backup) CMD (/usr/local/bin/nightly-dump --all >> /var/log/dump.log 2>&1)", "backup: /usr/local/bin/nightly-dump --all"},
		{"Mar  3 02:00:01 db1 CROND[4411]: (root) CMD (run-parts /etc/cron.hourly)", "root: run-parts /etc/cron.hourly"},
		{"Mar  3 02:00:01 db1 crond[4411]: (root) CMD (/opt/report.py)", "root: /opt/report.py"},
		{"Mar  3 02:00:01 db1 systemd[1]: Started Session 5 of user root.", ""},
	}
	for _, c := range crons {
		set := LogSet{Templates: []analysis.LogTemplate{{Example: c.line, Incident: 1, FirstIncident: at.Add(-10 * time.Minute)}}}
		if got := cronBefore(set, at); got != c.want {
			t.Errorf("cronBefore(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	// A cron job long before the kill is not tied to it.
	far := LogSet{Templates: []analysis.LogTemplate{{Example: crons[0].line, Incident: 1, FirstIncident: at.Add(-3 * time.Hour)}}}
	if got := cronBefore(far, at); got != "" {
		t.Errorf("cronBefore(3h earlier) = %q", got)
	}
}

func TestOOMVictimDescription(t *testing.T) {
	facts := map[string]string{"host": "vm3-syslog", "process": "java", "unit": "orders", "invoker": "python3", "cron": "finance: /opt/recon/export"}
	h := &Hypothesis{Kind: KindOOMKilled, Subject: "vm3-syslog", Primary: []*Finding{{Kind: KindOOMKilled, Subject: "vm3-syslog", Source: SrcLogs, Facts: facts}}}
	d := describe(h, Scope{})
	for _, s := range []string{"the orders service (its java process) on host vm3 is killed by the kernel OOM killer", "python3, another process on the host, invoked the OOM killer", "cron job (finance: /opt/recon/export)"} {
		if !strings.Contains(d, s) {
			t.Errorf("description %q lacks %q", d, s)
		}
	}
	recs := recommend(h, Scope{})
	if len(recs) != 3 || !strings.Contains(recs[0].Action, "finance: /opt/recon/export") {
		t.Errorf("recommendations %v", recs)
	}
	// The process killed is the one that asked: nothing more to say.
	facts["invoker"] = "java"
	if d := describe(h, Scope{}); strings.Contains(d, "another process") {
		t.Errorf("self-invoked kill described as another's: %q", d)
	}
}
