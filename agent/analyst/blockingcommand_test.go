package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestBlockingCommand: a keyspace-walking command on a single-threaded
// server (redis_exporter's per-command time, the client's own log of
// sending it) blocks every other client; the client that sends it is
// named and the callers timing out are its victims.
func TestBlockingCommand(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(-15 * time.Minute)
	busy := func(share float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.Before(onset) {
				return 0
			}
			return share
		}
	}
	inst := func(cmd string) evidence.Labels {
		return evidence.Labels{"instance": "sessions-redis-01:9121", "job": "redis", "cmd": cmd}
	}
	exporter := LogSet{Source: "session-stats-exporter.log", Subject: "session-stats-exporter", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(`2026-09-15T14:59:23.768000864Z time=2026-09-15T14:59:23.768Z level=info msg="collected active sessions" method=KEYS pattern="session:*" keys=1880036 took=1.727s`, 80, onset.Add(30*time.Second), w.End),
	}}
	fastClient := LogSet{Source: "cart.log", Subject: "cart", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(`time=2026-09-15T15:00:01Z level=info msg="cart loaded" cmd=HGETALL key=cart:u1 took=2ms`, 500, w.BaselineStart, w.End),
	}}
	timeouts := []Finding{
		{Kind: KindTimeout, Subject: "sessions-redis-01.internal", Facts: map[string]string{"caller": "session-service"}, Time: onset.Add(time.Minute)},
		{Kind: KindTimeout, Subject: "session-service", Facts: map[string]string{"caller": "auth-web"}, Time: onset.Add(time.Minute)},
	}
	cases := []struct {
		name    string
		metrics []MetricSet
		logs    []LogSet
		want    bool
		blocker string
	}{
		{"KEYS from a new exporter", []MetricSet{{Name: "redis_commands_duration_seconds_total", Series: []evidence.Series{wseries(w, inst("keys"), busy(0.054)), wseries(w, inst("get"), busy(0.02))}}},
			[]LogSet{exporter}, true, "session-stats-exporter"},
		{"the server's time alone", []MetricSet{{Name: "redis_commands_duration_seconds_total", Series: []evidence.Series{wseries(w, inst("keys"), busy(0.054))}}}, nil, true, ""},
		{"GET is busy, not blocking", []MetricSet{{Name: "redis_commands_duration_seconds_total", Series: []evidence.Series{wseries(w, inst("get"), busy(0.3))}}}, nil, false, ""},
		{"a fast HGETALL is not blocking", nil, []LogSet{fastClient}, false, ""},
	}
	for _, c := range cases {
		fs := detectBlockingCommand(&Gathered{Metrics: c.metrics, Logs: c.logs, Window: w}, timeouts)
		if !c.want {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none: %s", c.name, len(fs), fs[0].Summary)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != "sessions-redis-01" || fs[0].fact("command") != "KEYS" {
			t.Errorf("%s: findings %+v, want KEYS on sessions-redis-01", c.name, fs)
			continue
		}
		f := fs[0]
		if f.fact("blocker") != c.blocker {
			t.Errorf("%s: blocker %q, want %q", c.name, f.fact("blocker"), c.blocker)
		}
		for _, v := range []string{"session-service", "auth-web"} {
			if !containsStr(f.Related, v) {
				t.Errorf("%s: related %v, want the client %s", c.name, f.Related, v)
			}
		}
		h := &Hypothesis{Kind: KindBlockingCommand, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
		if d := blockingCommand.describe(h, Scope{}); !strings.Contains(d, "KEYS on sessions-redis-01 blocks it") || !strings.Contains(d, c.blocker) {
			t.Errorf("%s: description %q", c.name, d)
		}
	}
}

func TestFieldDuration(t *testing.T) {
	cases := []struct {
		line string
		want float64
		ok   bool
	}{
		{`msg="collected active sessions" method=KEYS keys=1880036 took=1.727s`, 1.727, true},
		{`{"msg":"scan done","elapsed_ms":2400}`, 2.4, true},
		{`"duration":"350ms"`, 0.35, true},
		{`keys=1880036 hits=3987`, 0, false},
		{`took=1500`, 0, false},
	}
	for _, c := range cases {
		got, ok := fieldDuration(c.line)
		if ok != c.ok || ok && (got < c.want-1e-9 || got > c.want+1e-9) {
			t.Errorf("fieldDuration(%q) = %v, %v; want %v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// TestBlockingCommandSlowlog: the server's own slow log, read with
// redis-cli (valkey-cli) through kubectl exec in the terminal's nested form
// or the raw form of a pipe, and its commandstats, show a walking command
// stalling it and name the client that sends it, whatever the baseline
// held; fast commands and entries older than the baseline show nothing.
func TestBlockingCommandSlowlog(t *testing.T) {
	w := testWindow()
	at := w.End.Add(-5 * time.Minute).Unix()
	nested := strings.Split(fmt.Sprintf(`1) 1) (integer) 88412
   2) (integer) %d
   3) (integer) 1912204
   4) 1) "KEYS"
      2) "session:*"
   5) "10.60.7.41:51822"
   6) "session-cleanup"
2) 1) (integer) 88409
   2) (integer) %d
   3) (integer) 12840
   4) 1) "HGETALL"
      2) "notify:prefs:8812231"
   5) "10.60.2.19:60114"
   6) ""`, at, at-60), "\n")
	raw := strings.Split(fmt.Sprintf("51\n%d\n640000\nSMEMBERS\nonline-users\n10.1.4.7:40112\npresence-sweeper\n", at), "\n")
	fast := strings.Split(fmt.Sprintf("51\n%d\n14000\nGET\nk\n10.1.4.7:40112\nweb\n", at), "\n")
	old := strings.Split(fmt.Sprintf("51\n%d\n1640000\nKEYS\n*\n10.1.4.7:40112\nops\n", w.BaselineStart.Add(-6*time.Hour).Unix()), "\n")
	stats := []string{"cmdstat_keys:calls=88,usec=164933120,usec_per_call=1874240.00,rejected_calls=0,failed_calls=0", "cmdstat_get:calls=912338841,usec=8816210934,usec_per_call=9.66"}
	exec := func(pod, run string, lines []string) evidence.CommandOutput {
		return evidence.CommandOutput{Exec: true, Namespace: "data", Pod: pod, Run: run, Lines: lines}
	}
	cases := []struct {
		name                  string
		cmds                  []evidence.CommandOutput
		inst, cmd, blocker    string
		wantStats, wantDirect bool
	}{
		{"redis-cli in the server's pod", []evidence.CommandOutput{exec("redis-shared-master-0", "redis-cli SLOWLOG GET 4", nested), exec("redis-shared-master-0", `redis-cli INFO commandstats | grep -E "cmdstat_(keys|get):"`, stats)},
			"redis-shared-master", "KEYS", "session-cleanup", true, true},
		{"valkey-cli to a named host, raw", []evidence.CommandOutput{exec("toolbox-7d9f", "valkey-cli -h presence-valkey.data.svc -p 6379 slowlog get 10", raw)},
			"presence-valkey", "SMEMBERS", "presence-sweeper", false, true},
		{"only fast commands", []evidence.CommandOutput{exec("redis-0", "redis-cli SLOWLOG GET", fast)}, "", "", "", false, false},
		{"only entries of long ago", []evidence.CommandOutput{exec("redis-0", "redis-cli SLOWLOG GET", old)}, "", "", "", false, false},
		{"not redis-cli", []evidence.CommandOutput{exec("redis-0", "cat slowlog get", nested)}, "", "", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectBlockingCommand(&Gathered{Commands: c.cmds, Window: w}, nil)
			f, ok := oneFinding(t, fs, c.inst != "")
			if !ok {
				return
			}
			if f.Subject != c.inst || f.fact("command") != c.cmd || f.fact("blocker") != c.blocker || f.fact("why") == "" {
				t.Errorf("%s: subject %q command %q blocker %q why %q", c.name, f.Subject, f.fact("command"), f.fact("blocker"), f.fact("why"))
			}
			if got := strings.Contains(strings.Join(f.Evidence, "\n"), "commandstats"); got != c.wantStats {
				t.Errorf("%s: commandstats in evidence %v, want %v: %q", c.name, got, c.wantStats, f.Evidence)
			}
			h := &Hypothesis{Kind: KindBlockingCommand, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			if d := blockingCommand.describe(h, Scope{}); !strings.Contains(d, c.cmd+" on "+c.inst) || !strings.Contains(d, c.blocker+" sends it") {
				t.Errorf("%s: description %q", c.name, d)
			}
		})
	}
}
