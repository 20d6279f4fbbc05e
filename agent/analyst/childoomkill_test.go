package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A job's process killed by its container's OOM killer, the parent
// reporting only the signal: an Airflow task runner (Negsignal.SIGKILL,
// with its input sizes), a Celery pool process, a gunicorn worker and a
// PostgreSQL backend, with the kernel's lines from journalctl -k, dmesg
// and a node's kernel log; a SIGKILL without a kill of its process, and
// a kill of another process, are none.
func TestDetectChildOOMKill(t *testing.T) {
	kernel := func(pid, comm string) []string {
		return []string{
			"2026-11-26T03:41:18.770512+00:00 ip-10-0-1-7 kernel: memory: usage 4194304kB, limit 4194304kB, failcnt 212",
			"2026-11-26T03:41:18.770512+00:00 ip-10-0-1-7 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-7d1e.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/cri-containerd-7d1e.scope,task=" + comm + ",pid=" + pid + ",uid=50000",
			"2026-11-26T03:41:18.770512+00:00 ip-10-0-1-7 kernel: Memory cgroup out of memory: Killed process " + pid + " (" + comm + ") total-vm:5894520kB, anon-rss:4112044kB, file-rss:11240kB, shmem-rss:0kB, UID:50000 pgtables:12232kB oom_score_adj:999",
		}
	}
	airflow := evidence.CommandOutput{Command: "kubectl exec airflow-worker-0 -- cat /opt/airflow/logs/dag_id=orders_etl/run_id=scheduled__2026-11-25/task_id=explode_items/attempt=1.log", Exec: true, Lines: []string{
		"[2026-11-24T03:05:12.874+0000] {etl.py:40} INFO - input s3://raw/orders/2026-11-23.parquet size=0.9 GiB",
		"[2026-11-26T03:38:49.103+0000] {standard_task_runner.py:72} INFO - Started process 61877 to run task",
		"[2026-11-26T03:38:50.210+0000] {etl.py:40} INFO - input s3://raw/orders/2026-11-25.parquet size=2.7 GiB",
		"[2026-11-26T03:38:50.211+0000] {etl.py:52} INFO - exploding line items into a DataFrame ...",
		"[2026-11-26T03:41:18.904+0000] {local_task_job_runner.py:240} INFO - Task exited with return code Negsignal.SIGKILL",
		"[2026-11-26T03:41:18.951+0000] {taskinstance.py:1206} INFO - Marking task as FAILED. dag_id=orders_etl, task_id=explode_items, run_id=scheduled__2026-11-25, execution_date=20261125T030000",
	}}
	celery := []string{"[2026-11-26 03:41:19,066: ERROR/MainProcess] Process 'ForkPoolWorker-3' pid:4121 exited with 'signal 9 (SIGKILL)'"}
	gunicorn := []string{"[2026-11-26 03:41:19 +0000] [1] [ERROR] Worker (pid:4121) was sent SIGKILL! Perhaps out of memory?"}
	postgres := []string{"2026-11-26 03:41:19.012 UTC [1] LOG:  server process (PID 4121) was terminated by signal 9: Killed"}
	dmesg := evidence.CommandOutput{Command: "kubectl debug node/ip-10-0-1-7 -it --image=busybox -- dmesg -T", Lines: []string{
		"[Thu Nov 26 03:41:18 2026] Memory cgroup out of memory: Killed process 4121 (python) total-vm:5894520kB, anon-rss:4112044kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:9000kB oom_score_adj:999",
	}}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		service string
		subject string
		want    []string
	}{
		{"Airflow task runner, node kernel log", []LogSet{minedSet("ip-10-0-1-7", true, 0, kernel("61877", "airflow task ru")...)}, []evidence.CommandOutput{airflow}, "", "orders_etl",
			[]string{"task explode_items", "limit of 4.0 GiB", "Negsignal.SIGKILL", "exploding line items", "grew from 0.9 GiB to 2.7 GiB"}},
		{"Celery pool process, dmesg", []LogSet{minedSet("worker", false, 0, celery...)}, []evidence.CommandOutput{dmesg}, "billing-worker", "billing-worker", []string{"signal 9 (SIGKILL)"}},
		{"gunicorn worker, journalctl -k", []LogSet{minedSet("ip-10-0-1-7", true, 0, kernel("4121", "gunicorn")...), minedSet("web", false, 0, gunicorn...)}, nil, "web", "web", []string{"Perhaps out of memory"}},
		{"PostgreSQL backend", []LogSet{minedSet("ip-10-0-1-7", true, 0, kernel("4121", "postgres")...), minedSet("pg", false, 0, postgres...)}, nil, "pg", "pg", []string{"terminated by signal 9"}},
		{"a SIGKILL without a kill", []LogSet{minedSet("web", false, 0, gunicorn...)}, nil, "web", "", nil},
		{"a kill of another process", []LogSet{minedSet("ip-10-0-1-7", true, 0, kernel("999", "java")...), minedSet("web", false, 0, gunicorn...)}, nil, "web", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectChildOOMKill(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win, Scope: Scope{Service: tc.service}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindChildOOMKill, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
