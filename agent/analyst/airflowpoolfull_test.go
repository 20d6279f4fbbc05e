package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An Airflow pool whose slots another DAG holds, read from the scheduler's
// log (Airflow 2.x's scheduler_job_runner and 2.0-2.5's scheduler_job), a
// task instance's "Pool Slots Available" dependency line, the pools REST
// API and its statsd gauges; a pool with open slots is none.
func TestDetectAirflowPoolFull(t *testing.T) {
	scheduler := []string{
		"[2026-11-25T07:29:11.208+0000] {scheduler_job_runner.py:438} INFO - Figuring out tasks to run in Pool(name=etl_pool) with 0 open slots and 6 task instances ready to be queued",
		"[2026-11-25T07:29:11.210+0000] {scheduler_job_runner.py:467} INFO - Not scheduling since there are 0 open slots in pool etl_pool",
		"[2026-11-25T07:29:17.046+0000] {scheduler_job_runner.py:509} INFO - DAG reprocess_events has 5/16 running and queued tasks",
		"\t<TaskInstance: reprocess_events.rebuild_sessions scheduled__2026-09-02T00:00:00+00:00 [scheduled]>",
	}
	oldScheduler := []string{
		"[2022-03-01 04:10:02,118] {scheduler_job.py:425} INFO - Figuring out tasks to run in Pool(name=default_pool) with 0 open slots and 12 task instances ready to be queued",
		"[2022-03-01 04:10:02,119] {scheduler_job.py:453} INFO - Not scheduling since there are 0 open slots in pool default_pool",
	}
	tiLog := []string{
		"[2026-11-25, 06:02:11 UTC] {taskinstance.py:1157} INFO - Dependencies not met for <TaskInstance: nightly_load.load_orders scheduled__2026-11-24T03:00:00+00:00 [scheduled]>, dependency 'Pool Slots Available' FAILED: ('Not scheduling since there are %s open slots in pool %s and require %s pool slots', 0, 'dwh', 1)",
	}
	states := evidence.CommandOutput{Command: "airflow tasks states-for-dag-run nightly_load scheduled__2026-11-24T03:00:00+00:00", Lines: []string{
		"dag_id       | execution_date            | task_id     | state     | start_date | end_date",
		"=============+===========================+=============+===========+============+=========",
		"nightly_load | 2026-11-24T03:00:00+00:00 | extract     | success   | 2026-11-25T03:00:05+00:00 | 2026-11-25T03:14:40+00:00",
		"nightly_load | 2026-11-24T03:00:00+00:00 | load_orders | scheduled | None       | None",
		"nightly_load | 2026-11-24T03:00:00+00:00 | load_users  | scheduled | None       | None",
	}}
	runs := evidence.CommandOutput{Command: "airflow dags list-runs -d ml_features_backfill --state running", Lines: []string{
		"ml_features_backfill | scheduled__2026-03-01T00:00:00+00:00 | running | 2026-03-01T00:00:00+00:00 | 2026-11-25T05:00:03+00:00 |",
		"ml_features_backfill | scheduled__2026-03-02T00:00:00+00:00 | running | 2026-03-02T00:00:00+00:00 | 2026-11-25T05:06:10+00:00 |",
	}}
	dagFile := evidence.CommandOutput{Command: "cat /opt/airflow/dags/ml/features_backfill.py", Lines: []string{
		`default_args = {"pool": "dwh", "priority_weight": 50}`,
		`with DAG(dag_id="ml_features_backfill", start_date=pendulum.datetime(2026, 3, 1, tz="UTC"), catchup=True, max_active_runs=4, default_args=default_args) as dag:`,
	}}
	api := evidence.CommandOutput{Command: "curl -s https://airflow.example/api/v1/pools/dwh", Lines: []string{
		`{"deferred_slots": 0, "description": "warehouse", "name": "dwh", "occupied_slots": 4, "open_slots": 0, "queued_slots": 0, "running_slots": 4, "scheduled_slots": 2, "slots": 4}`}}
	gauge := func(name string, v float64) MetricSet {
		return MetricSet{Name: name, Series: []evidence.Series{{Labels: evidence.Labels{"pool": "dwh"}, Points: []evidence.Point{{T: win.Start, V: v}, {T: win.End, V: v}}}}}
	}
	free := []string{"[2026-11-25T07:29:11.208+0000] {scheduler_job_runner.py:438} INFO - Figuring out tasks to run in Pool(name=etl_pool) with 3 open slots and 2 task instances ready to be queued"}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		metrics []MetricSet
		service string
		subject string
		want    []string
	}{
		{"Airflow 2.x scheduler log", []LogSet{minedSet("airflow-scheduler", false, 0, scheduler...)}, nil, nil, "hourly_etl", "hourly_etl", []string{"pool etl_pool", "6 task instances", "DAG reprocess_events"}},
		{"Airflow 2.0 scheduler log, no holder read", []LogSet{minedSet("airflow-scheduler", false, 0, oldScheduler...)}, nil, nil, "dwh_refresh", "dwh_refresh", []string{"pool default_pool", "12 task instances"}},
		{"task instance log, CLI states and runs, the holder's DAG file", []LogSet{minedSet("airflow-worker-0", false, 0, tiLog...)}, []evidence.CommandOutput{states, runs, dagFile}, nil, "", "nightly_load", []string{"pool dwh", "DAG ml_features_backfill", "2 active runs", "catchup=True since 2026-03-01", "priority_weight 50"}},
		{"REST API and statsd gauges", nil, []evidence.CommandOutput{api}, []MetricSet{gauge("airflow_pool_open_slots", 0), gauge("airflow_pool_starving_tasks", 3)}, "nightly_load", "nightly_load", []string{"pool dwh (4 slots)", "3 task instances"}},
		{"a pool with open slots", []LogSet{minedSet("airflow-scheduler", false, 0, free...)}, nil, []MetricSet{gauge("airflow_pool_open_slots", 2)}, "hourly_etl", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectAirflowPoolFull(&Gathered{Logs: tc.sets, Commands: tc.cmds, Metrics: tc.metrics, Window: win, Scope: Scope{Service: tc.service}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindAirflowPoolFull, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
