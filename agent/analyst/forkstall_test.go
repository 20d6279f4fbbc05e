package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestForkStall: a store whose snapshot forks take a second or more is
// the root of its clients' periodic latency, read from redis-cli's INFO
// and LATENCY LATEST (nested and raw), its log's background saves, and
// redis_exporter's fork time in seconds or microseconds; a fast fork is
// no stall.
func TestForkStall(t *testing.T) {
	w := testWindow()
	cli := func(pod, run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec " + pod + " -- " + run, Exec: true, Pod: pod, Run: run, Lines: lines}
	}
	saves := LogSet{Source: "sessions-redis-0", Subject: "sessions-redis", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(`1:M 26 Nov 2026 14:23:49.000 * 1 changes in 900 seconds. Saving...`, 4, w.Start.Add(5*time.Minute), w.End),
		tmpl(`1:M 26 Nov 2026 14:23:50.700 * Background saving started by pid 8801`, 4, w.Start.Add(5*time.Minute), w.End),
		tmpl(`8801:C 26 Nov 2026 14:25:26.700 * Fork CoW for RDB: current 1300 MB, peak 1300 MB, average 880 MB`, 4, w.Start.Add(7*time.Minute), w.End),
	}}
	thp := LogSet{Source: "sessions-redis-0", Subject: "sessions-redis", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(`1:M 03 Nov 2026 09:12:40.119 # WARNING you have Transparent Huge Pages (THP) support enabled in your kernel. This will create latency and memory usage issues with Redis.`, 1, w.BaselineStart, w.BaselineStart),
		tmpl(`1:M 26 Nov 2026 14:23:50.700 * Background saving started by pid 8801`, 4, w.Start.Add(5*time.Minute), w.End),
	}}
	valkey := LogSet{Source: "cache-valkey-primary-0", Subject: "cache-valkey-primary", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(`1:M 12 Mar 2026 08:00:01.114 * Background saving started by pid 77`, 6, w.Start, w.End),
	}}
	fork := func(inst string, v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }
	cases := []struct {
		name     string
		commands []evidence.CommandOutput
		logs     []LogSet
		metrics  []MetricSet
		subject  string // "" for no finding
		in       []string
	}{
		{"INFO stats, nested LATENCY LATEST, save rules and the log", []evidence.CommandOutput{
			cli("sessions-redis-0", "redis-cli info stats", "# Stats", "instantaneous_ops_per_sec:8412", "latest_fork_usec:1912455", "total_forks:2198"),
			cli("sessions-redis-0", "redis-cli latency latest", `1) 1) "fork"`, `   2) (integer) 1795706637`, `   3) (integer) 1912`, `   4) (integer) 2044`),
			cli("sessions-redis-0", "redis-cli config get save", "save", "900 1"),
			cli("sessions-redis-0", "redis-cli info memory", "used_memory:12476538880", "used_memory_human:11.62G"),
		}, []LogSet{saves}, nil, "sessions-redis", []string{"2.04 s", "11.62G", `save "900 1"`, "every 15 minutes", "background saves"}},
		{"raw LATENCY LATEST (piped) with THP warned", []evidence.CommandOutput{
			cli("sessions-redis-0", "redis-cli --raw latency latest", "fork", "1795706637", "812", "1460"),
		}, []LogSet{thp}, nil, "sessions-redis", []string{"1.46 s", "Transparent Huge Pages"}},
		{"redis_exporter in seconds", nil, nil, []MetricSet{{Name: "redis_latest_fork_seconds", Series: []evidence.Series{
			wseries(w, evidence.Labels{"instance": "orders-redis-0:9121", "job": "redis"}, fork("orders-redis", 1.3))}}}, "orders-redis", []string{"1.30 s"}},
		{"a valkey log and INFO in microseconds", []evidence.CommandOutput{
			cli("cache-valkey-primary-0", "valkey-cli INFO", "latest_fork_usec:341207"),
		}, []LogSet{valkey}, nil, "cache-valkey-primary", []string{"341 ms"}},
		{"a fast fork is no stall", []evidence.CommandOutput{
			cli("sessions-redis-0", "redis-cli info stats", "latest_fork_usec:14210"),
		}, []LogSet{saves}, nil, "", nil},
		{"a fork its sentinels fail over on is the failover loop's", []evidence.CommandOutput{
			cli("sessions-redis-0", "redis-cli info stats", "latest_fork_usec:1912455"),
		}, []LogSet{saves, {Source: "sentinel-0", Subject: "sentinel", Origin: SrcLogs, Templates: []analysis.LogTemplate{
			tmpl(`1:X 25 Nov 2026 15:01:12.700 # +switch-master mymaster 10.50.1.17 6379 10.50.2.9 6379`, 6, w.Start, w.End)}}}, nil, "", nil},
		{"a slow fork of a quarter second without saves seen", []evidence.CommandOutput{
			cli("sessions-redis-0", "redis-cli info stats", "latest_fork_usec:310000"),
		}, nil, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectForkStall(&Gathered{Commands: c.commands, Logs: c.logs, Metrics: c.metrics, Window: w}, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindForkStall, Subject: f.Subject, Primary: []*Finding{f}, Onset: f.Time}, Scope{}, c.in...)
		})
	}
}
