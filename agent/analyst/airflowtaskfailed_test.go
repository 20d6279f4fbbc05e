package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An Airflow DAG run failed by one task, read from the CLI's task states
// and the failed task's log (a Slack webhook's 410 after every data task
// succeeded, a SQL error in the middle of the run); a task killed without
// an exception, and a run that succeeded, are none here.
func TestDetectAirflowTaskFailed(t *testing.T) {
	states := func(rows ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "airflow tasks states-for-dag-run crm_sync scheduled__2026-11-22T02:00:00+00:00", Lines: append([]string{
			"dag_id   | execution_date            | task_id  | state   | start_date                       | end_date",
			"=========+===========================+==========+=========+==================================+=================================",
		}, rows...)}
	}
	notifyLast := states(
		"crm_sync | 2026-11-22T02:00:00+00:00 | extract  | success | 2026-11-23T02:00:05.220117+00:00 | 2026-11-23T02:14:51.903221+00:00",
		"crm_sync | 2026-11-22T02:00:00+00:00 | publish  | success | 2026-11-23T02:14:55.330914+00:00 | 2026-11-23T02:41:18.226043+00:00",
		"crm_sync | 2026-11-22T02:00:00+00:00 | notify   | failed  | 2026-11-23T02:41:22.880310+00:00 | 2026-11-23T02:51:10.577204+00:00",
	)
	slackLog := evidence.CommandOutput{Command: "kubectl exec airflow-worker-0 -- cat /opt/airflow/logs/dag_id=crm_sync/run_id=scheduled__2026-11-22T02:00:00+00:00/task_id=notify/attempt=2.log", Exec: true, Lines: []string{
		"[2026-11-23T02:51:10.377+0000] {taskinstance.py:3311} ERROR - Task failed with exception",
		"Traceback (most recent call last):",
		`  File "/home/airflow/.local/lib/python3.12/site-packages/airflow/providers/slack/hooks/slack_webhook.py", line 57, in wrapper`,
		"airflow.exceptions.AirflowException: Response body: 'invalid_token', Status Code: 403. See: https://api.slack.com/messaging/webhooks#handling_errors",
		"[2026-11-23T02:51:10.389+0000] {taskinstance.py:1206} INFO - Marking task as FAILED. dag_id=crm_sync, task_id=notify, run_id=scheduled__2026-11-22T02:00:00+00:00",
	}}
	sqlMiddle := states(
		"crm_sync | 2026-11-22T02:00:00+00:00 | extract  | success         | 2026-11-23T02:00:05.220117+00:00 | 2026-11-23T02:14:51.903221+00:00",
		"crm_sync | 2026-11-22T02:00:00+00:00 | transform | failed         | 2026-11-23T02:14:55.330914+00:00 | 2026-11-23T02:15:18.226043+00:00",
		"crm_sync | 2026-11-22T02:00:00+00:00 | publish  | upstream_failed | None                             | 2026-11-23T02:15:19.226043+00:00",
	)
	sqlLog := evidence.CommandOutput{Command: "kubectl exec airflow-worker-1 -- tail -n 3 /opt/airflow/logs/dag_id=crm_sync/run_id=scheduled__2026-11-22T02:00:00+00:00/task_id=transform/attempt=1.log", Exec: true, Lines: []string{
		"snowflake.connector.errors.ProgrammingError: 002003 (42S02): SQL compilation error: Object 'RAW.CRM.CONTACTS' does not exist or not authorized.",
		"[2026-11-23T02:15:18.201+0000] {taskinstance.py:1206} INFO - Marking task as FAILED. dag_id=crm_sync, task_id=transform, run_id=scheduled__2026-11-22T02:00:00+00:00",
	}}
	killed := evidence.CommandOutput{Command: "kubectl exec airflow-worker-1 -- cat /opt/airflow/logs/dag_id=crm_sync/run_id=x/task_id=transform/attempt=1.log", Lines: []string{
		"[2026-11-23T02:15:18.101+0000] {local_task_job_runner.py:240} INFO - Task exited with return code Negsignal.SIGKILL",
	}}
	allOK := states("crm_sync | 2026-11-22T02:00:00+00:00 | extract  | success | 2026-11-23T02:00:05.220117+00:00 | 2026-11-23T02:14:51.903221+00:00")
	for _, tc := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"a notification failed after every data task", []evidence.CommandOutput{notifyLast, slackLog}, "crm_sync", []string{"task notify, the last task of the run", "publish at 2026-11-23 02:41 UTC", "invalid_token", "revoked or is invalid"}},
		{"a SQL error in the middle of the run", []evidence.CommandOutput{sqlMiddle, sqlLog}, "crm_sync", []string{"task transform (succeeded before it: extract)", "does not exist or not authorized"}},
		{"a task killed without an exception", []evidence.CommandOutput{sqlMiddle, killed}, "", nil},
		{"a run that succeeded", []evidence.CommandOutput{allOK}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectAirflowTaskFailed(&Gathered{Commands: tc.cmds, Window: win, Scope: Scope{Service: "crm_sync"}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindAirflowTaskFailed, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
