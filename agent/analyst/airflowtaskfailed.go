package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// An Airflow DAG run failed by one task, read from where Airflow says it:
// the run's task states (airflow tasks states-for-dag-run, the UI's grid
// as a table) name the task that failed and the ones that succeeded, and
// that task's log ends in the exception that failed it ("Task failed with
// exception" ... "AirflowException: Response body: 'channel_is_archived',
// Status Code: 410"). A run is marked failed whenever any task fails, so
// the answer says which task failed and with what, and whether the work
// before it (the data tasks) succeeded: a run failed only by its last
// task, a notification after every data task succeeded, has its data in
// place; the failure is the notification's own.

// KindAirflowTaskFailed is an Airflow DAG run failed by one task's
// exception.
const KindAirflowTaskFailed Kind = "airflow_task_failed"

var airflowTaskFailed = &mechanism{
	kind:   KindAirflowTaskFailed,
	class:  classCause,
	label:  "Airflow DAG run failed by one task's exception",
	detect: detectAirflowTaskFailed,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		return strings.Contains(t, strings.ToLower(h.Subject)) || h.fact("task") != "" && strings.Contains(t, strings.ToLower(h.fact("task")))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		task := h.fact("task")
		d := fmt.Sprintf("%s's DAG run is marked failed by its task %s", h.Subject, task)
		if h.fact("only_last") != "" {
			d += fmt.Sprintf(", the last task of the run: every task before it succeeded (%s)", h.fact("succeeded"))
			if s := h.fact("last_data"); s != "" {
				d += ", the last of them " + s
			}
			d += ", so the run's data is in place and only " + task + " failed"
		} else if s := h.fact("succeeded"); s != "" {
			d += " (succeeded before it: " + s + ")"
		}
		if e := h.fact("exception"); e != "" {
			d += "; " + task + " fails with " + quote(e, 220)
		}
		if w := h.fact("meaning"); w != "" {
			d += ": " + w
		}
		if n := h.fact("runs"); n != "" && n != "1" {
			d += fmt.Sprintf("; %s runs in a row failed", n)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		task := h.fact("task")
		if h.fact("meaning") != "" {
			r.high("Fix what %s reaches: %s", task, h.fact("meaning"))
		} else {
			r.high("Fix the failure of %s from its exception and clear it (airflow tasks clear %s -t %s) to complete the run", task, h.Subject, task)
		}
		if h.fact("only_last") != "" {
			r.med("Keep %s's data tasks apart from its notification: a notification that fails should not mark the run (and its data) failed (trigger_rule, on_failure_callback or a separate alerting path)", h.Subject)
		}
		r.low("Alert on the failed task and its exception, not only on the DAG run's state")
	},
}

var (
	airflowStateRowRE = regexp.MustCompile(`^\s*([\w.-]+)\s*\|\s*(\S+)\s*\|\s*([\w.-]+)\s*\|\s*(success|failed|upstream_failed|skipped|running|queued|scheduled|up_for_retry|None)\s*\|\s*(\S+)\s*\|\s*(\S*)\s*$`)
	airflowRunRowRE   = regexp.MustCompile(`^\s*([\w.-]+)\s*\|\s*(\S+__\S+)\s*\|\s*(failed|success)\s*\|`)
	pyExceptionRE     = regexp.MustCompile(`^(?:[\w]+\.)*[\w]*(?:Error|Exception|Exit|Timeout)\w*: \S`)
	airflowMarkFailRE = regexp.MustCompile(`Marking task as FAILED\. dag_id=([\w.-]+), task_id=([\w.-]+)`)
)

// airflowMeaning says what a known response in a task's exception means.
func airflowMeaning(e string) string {
	l := strings.ToLower(e)
	switch {
	case strings.Contains(l, "channel_is_archived"):
		return "the Slack channel its webhook posts to is archived (HTTP 410), so every message is refused; unarchive the channel or point the connection's webhook at a live channel"
	case strings.Contains(l, "channel_not_found") || strings.Contains(l, "no_service"):
		return "the Slack webhook's channel or app no longer exists; recreate the webhook and update the connection"
	case strings.Contains(l, "invalid_token") || strings.Contains(l, "invalid_auth") || strings.Contains(l, "token_revoked"):
		return "the credential the task's connection holds was revoked or is invalid; renew it in the connection"
	}
	return ""
}

type airflowTaskRow struct {
	task, state string
	start, end  time.Time
}

func detectAirflowTaskFailed(ev *Gathered, _ []Finding) []Finding {
	if fs := airflowTaskFailedOf(ev, ev.Scope.Service); fs != nil || ev.Scope.Service == "" {
		return fs
	}
	return airflowTaskFailedOf(ev, "")
}

// airflowTaskFailedOf reads the failed run of dag (any DAG when "").
func airflowTaskFailedOf(ev *Gathered, dag string) []Finding {
	var rows []airflowTaskRow
	failedRuns := 0
	for _, c := range ev.Commands {
		var cur []airflowTaskRow
		for _, l := range c.Lines {
			if m := findSubmatch(airflowStateRowRE, l); m != nil && (dag == "" || m[1] == dag) {
				dag = m[1]
				st, _ := time.Parse(time.RFC3339Nano, m[5])
				en, _ := time.Parse(time.RFC3339Nano, m[6])
				cur = append(cur, airflowTaskRow{m[3], m[4], st, en})
			}
			if m := findSubmatch(airflowRunRowRE, l); m != nil && m[1] == dag && m[3] == "failed" {
				failedRuns++
			}
		}
		if len(cur) > 0 && len(rows) == 0 {
			rows = cur
		}
	}
	if dag == "" || len(rows) == 0 {
		return nil
	}
	var failed []airflowTaskRow
	var succeeded []string
	var lastOK airflowTaskRow
	for _, r := range rows {
		switch r.state {
		case "failed":
			failed = append(failed, r)
		case "success":
			succeeded = append(succeeded, r.task)
			if r.end.After(lastOK.end) {
				lastOK = r
			}
		}
	}
	if len(failed) != 1 {
		return nil
	}
	task := failed[0]
	// The exception that failed it: its log's last exception line before
	// "Marking task as FAILED".
	exception := ""
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "task_id="+task.task) && !strings.Contains(c.Command, task.task) {
			continue
		}
		last := ""
		for _, l := range c.Lines {
			if matchLine(pyExceptionRE, strings.TrimSpace(l)) {
				last = strings.TrimSpace(l)
			}
			if m := findSubmatch(airflowMarkFailRE, l); m != nil && m[1] == dag && m[2] == task.task && last != "" {
				exception = last
			}
		}
		if exception == "" && last != "" {
			exception = last
		}
		if exception != "" {
			break
		}
	}
	if exception == "" {
		return nil
	}
	at := task.end
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindAirflowTaskFailed, Subject: dag, Object: "task " + task.task, Time: at, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
	f.setFact("task", task.task)
	f.setFact("exception", exception)
	f.setFact("meaning", airflowMeaning(exception))
	if failedRuns > 0 {
		f.setFact("runs", fmt.Sprint(failedRuns))
	}
	others := 0
	for _, r := range rows {
		if r.task != task.task && r.state != "success" {
			others++
		}
	}
	if len(succeeded) > 0 {
		f.setFact("succeeded", strings.Join(succeeded, ", "))
	}
	if others == 0 && len(succeeded) > 0 && !task.start.IsZero() && !task.start.Before(lastOK.end) {
		f.setFact("only_last", "true")
		f.setFact("last_data", fmt.Sprintf("%s at %s", lastOK.task, lastOK.end.UTC().Format("2006-01-02 15:04 UTC")))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s's run: task %s failed, %d tasks succeeded", dag, task.task, len(succeeded)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s failed with %s", task.task, quote(exception, 220)))
	f.Summary = fmt.Sprintf("Airflow DAG %s: task %s failed (%s)", dag, task.task, quote(exception, 120))
	return []Finding{f}
}
