package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An advisory lock held by a session whose client address is no live
// pod's, read from psql's aligned and expanded (\x) outputs and pgcli's
// boxed one, with the sessions or replicas retrying it; a leader that is
// alive, a client outside the cluster, and a lock no one waits for are
// none.
func TestDetectOrphanLock(t *testing.T) {
	pod := func(name, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "jobs"}, Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning}}
	}
	pods := []corev1.Pod{pod("cron-leader-5d8f7-abcde", "10.8.2.14"), pod("cron-leader-5d8f7-fghij", "10.8.3.77"), pod("api-6c9d-klmno", "10.8.1.5")}
	aligned := evidence.CommandOutput{Command: "ssh db-jobs-01", Host: "db-jobs-01", Run: "sudo -u postgres psql jobs", Lines: []string{
		"jobs=# SELECT l.pid, l.locktype, l.classid, l.objid, l.granted, a.application_name, a.client_addr, a.state, a.state_change FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory';",
		"  pid  | locktype | classid | objid | granted | application_name | client_addr |  state  |         state_change",
		"-------+----------+---------+-------+---------+------------------+-------------+---------+-------------------------------",
		" 90211 | advisory |       0 |  4242 | t       | cron-leader      | 10.8.4.201  | idle    | 2026-11-20 10:31:02.118+00",
		"(1 row)",
		"",
		"jobs=# SELECT pid, client_addr, state, query FROM pg_stat_activity WHERE application_name = 'cron-leader';",
		"  pid  | client_addr | state |               query",
		"-------+-------------+-------+------------------------------------",
		" 90211 | 10.8.4.201  | idle  | UPDATE schedules SET last_run = now()",
		" 91002 | 10.8.2.14   | idle  | SELECT pg_try_advisory_lock(4242)",
		" 91118 | 10.8.3.77   | idle  | SELECT pg_try_advisory_lock(4242)",
		"(3 rows)",
		"",
		"jobs=# SHOW tcp_keepalives_idle;",
		" tcp_keepalives_idle",
		"---------------------",
		" 0",
		"(1 row)",
	}}
	expanded := evidence.CommandOutput{Command: "kubectl -n jobs exec -it pg-jobs-0 -- psql -U postgres jobs -x", Exec: true, Pod: "pg-jobs-0", Run: "psql -U postgres jobs -x", Lines: []string{
		"-[ RECORD 1 ]----+------------------------------",
		"pid              | 77310",
		"locktype         | advisory",
		"classid          | 0",
		"objid            | 9001",
		"mode             | ExclusiveLock",
		"granted          | t",
		"application_name | cron-leader",
		"client_addr      | 10.8.5.9",
		"state            | idle in transaction",
		"state_change     | 2026-11-20 10:30:00+00",
		"-[ RECORD 2 ]----+------------------------------",
		"pid              | 77420",
		"locktype         | advisory",
		"classid          | 0",
		"objid            | 9001",
		"mode             | ExclusiveLock",
		"granted          | f",
		"application_name | cron-leader",
		"client_addr      | 10.8.2.14",
		"state            | active",
		"state_change     | 2026-11-20 10:40:00+00",
	}}
	boxed := evidence.CommandOutput{Command: "pgcli -h pg-jobs.db.internal -U ops jobs", Run: "pgcli -h pg-jobs.db.internal -U ops jobs", Lines: []string{
		"+-------+----------+-------+---------+-------------+-------+",
		"| pid   | locktype | objid | granted | client_addr | state |",
		"|-------+----------+-------+---------+-------------+-------|",
		"| 66120 | advisory | 515   | True    | 10.8.9.44   | idle  |",
		"+-------+----------+-------+---------+-------------+-------+",
	}}
	standby := []string{
		`{"level":"info","ts":"2026-11-20T10:35:12.004Z","msg":"acquire leader lock","sql":"SELECT pg_try_advisory_lock(515)"}`,
		`{"level":"info","ts":"2026-11-20T10:35:12.009Z","msg":"lock held by another instance, retrying in 15s"}`,
	}
	alive := aligned
	alive.Lines = append([]string{}, aligned.Lines...)
	alive.Lines[3] = " 90211 | advisory |       0 |  4242 | t       | cron-leader      | 10.8.1.5    | idle    | 2026-11-20 10:31:02.118+00"
	alive.Lines[9] = " 90211 | 10.8.1.5    | idle  | UPDATE schedules SET last_run = now()"
	outside := aligned
	outside.Lines = append([]string{}, aligned.Lines...)
	outside.Lines[3] = " 90211 | advisory |       0 |  4242 | t       | cron-leader      | 192.168.7.3 | idle    | 2026-11-20 10:31:02.118+00"
	outside.Lines[9] = " 90211 | 192.168.7.3 | idle  | UPDATE schedules SET last_run = now()"
	for _, tc := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		sets    []LogSet
		subject string
		want    []string
	}{
		{"psql aligned pg_locks join, sessions retrying, keepalive 0", []evidence.CommandOutput{aligned}, nil, "cron-leader",
			[]string{"advisory lock 4242", "session 90211 (cron-leader from 10.8.4.201", "no live pod has its address 10.8.4.201", "2 other sessions retry the lock", "tcp_keepalives_idle 0"}},
		{"psql expanded, a waiter not granted", []evidence.CommandOutput{expanded}, nil, "cron-leader",
			[]string{"advisory lock 9001", "session 77310", "idle in transaction", "1 other sessions retry"}},
		{"pgcli boxed, a replica's JSON log retrying", []evidence.CommandOutput{boxed}, []LogSet{minedSet("cron-leader", false, 0, standby...)}, "cron-leader",
			[]string{"advisory lock 515", "10.8.9.44", "cron-leader stands by", "lock held by another instance"}},
		{"the holder is a live pod", []evidence.CommandOutput{alive}, nil, "", nil},
		{"the holder is outside the cluster", []evidence.CommandOutput{outside}, nil, "", nil},
		{"no one waits for the lock", []evidence.CommandOutput{boxed}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win, Scope: Scope{Service: "mailer"}}
			ev.K8s.Pods = pods
			f := onlyFinding(t, detectOrphanLock(ev, nil), tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindOrphanLock, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
