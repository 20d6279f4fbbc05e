package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Kafka Connect task that failed and stays failed. A connector's task
// that meets a record it cannot convert or write (a record not in the
// converter's format: Avro's "Unknown magic byte!" on a plain JSON
// message published by hand, a JsonConverter expecting schema and
// payload) with errors.tolerance=none and no dead letter queue throws
// "Tolerance exceeded in error handler" and is killed "until manually
// restarted"; the worker reports it FAILED in the REST status while the
// connector itself stays RUNNING, so nothing restarts and the consumer
// group's lag grows from that moment (its consequence). The answer names
// the connector, its failed tasks, the exception behind the tolerance
// error, and whether a dead letter queue was configured.

// KindConnectTaskFailed is a Kafka Connect task failed on a record.
const KindConnectTaskFailed Kind = "connect_task_failed"

var connectTaskFailed = &mechanism{
	kind:   KindConnectTaskFailed,
	class:  classCause,
	label:  "Kafka Connect task failed on a record it cannot process (stays FAILED)",
	detect: detectConnectTaskFailed,
	// The connector's consumer group (connect-NAME) and its workers'
	// logs belong to it.
	related: exceptOwnAndChanges(KindConnectTaskFailed, func(h *Hypothesis, f *Finding) bool {
		n := h.top().Subject
		return f.Subject == "connect-"+n || strings.Contains(f.Summary, "connect-"+n) || strings.Contains(f.Object, n)
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, h.Subject) || strings.Contains(t, "converter") || strings.Contains(t, "schema")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the Kafka Connect connector %s stopped: its tasks %s FAILED", h.Subject, orWord(h.fact("tasks"), ""))
		d = strings.Replace(d, "tasks  FAILED", "tasks FAILED", 1)
		d += h.wrapped(" at ", "at", "")
		d += " with \"Tolerance exceeded in error handler\""
		if c := h.fact("cause"); c != "" {
			d += ", caused by " + quote(c, 200)
		}
		if h.fact("format") != "" {
			d += ": " + h.fact("format")
		}
		d += "; a failed task is not restarted (\"will not recover until manually restarted\") while the connector shows RUNNING, so nothing is consumed and the group's lag grows"
		if h.fact("no_dlq") != "" {
			d += "; its configuration sets no errors.tolerance and no dead letter queue, so one record it cannot process kills each task assigned its partition"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Skip or remove the record the tasks fail on (its partition and offset from the task's trace), then restart the failed tasks: POST /connectors/%s/tasks/<id>/restart (or /restart?includeTasks=true&onlyFailed=true)", h.Subject)
		r.med("Configure errors.tolerance=all with errors.deadletterqueue.topic.name (and errors.log.enable) on %s so records it cannot convert go to a dead letter queue instead of killing the task", h.Subject)
		r.low("Alert on Kafka Connect task state FAILED (the REST status or kafka_connect_connector_task_status), not only on consumer lag; restrict who can produce to the topic outside its serializer")
	},
}

var (
	connectKilledRE    = regexp.MustCompile(`Worker(?:Sink|Source)Task\{id=([\w.-]+?)-(\d+)\} Task threw an uncaught and unrecoverable exception`)
	connectToleranceRE = regexp.MustCompile(`Tolerance exceeded in error handler`)
	connectCausedRE    = regexp.MustCompile(`Caused by: ((?:[\w.$]+\.)?(?:SerializationException|DataException|ConnectException|JsonParseException|SchemaException|RestClientException|SnowflakeKafkaConnectorException|[\w$]+Exception)(?:: [^\\]+)?)`)
	connectStatusRE    = regexp.MustCompile(`"name"\s*:\s*"([\w.-]+)"`)
	connectTaskRE      = regexp.MustCompile(`\{\s*"id"\s*:\s*(\d+)\s*,\s*"state"\s*:\s*"FAILED"`)
)

// connectFormat says what a conversion failure means.
func connectFormat(cause string) string {
	l := strings.ToLower(cause)
	switch {
	case strings.Contains(l, "unknown magic byte"):
		return "a record not written in the schema registry's wire format (plain JSON or text published outside the serializer, a poison record) that the Avro/Protobuf converter cannot deserialize"
	case strings.Contains(l, "schemas.enable") || strings.Contains(l, "\"schema\" and \"payload\""):
		return "a record without the schema/payload envelope the JsonConverter expects"
	case strings.Contains(l, "deserializ") || strings.Contains(l, "serializationexception") || strings.Contains(l, "jsonparse"):
		return "a record the converter cannot deserialize (a poison record)"
	}
	return ""
}

func detectConnectTaskFailed(ev *Gathered, _ []Finding) []Finding {
	name, cause := "", ""
	tasks := map[string]bool{}
	var order []string
	var at time.Time
	tolerance := false
	addTask := func(id string) {
		if !tasks[id] {
			tasks[id] = true
			order = append(order, id)
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range []string{t.Example, t.Last} {
				if m := findSubmatch(connectKilledRE, l); m != nil && (name == "" || m[1] == name) {
					name = m[1]
					addTask(m[2])
					lt := firstOf(t.FirstIncident, t.FirstSeen)
					if x, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
						lt = x
					}
					if at.IsZero() || lt.Before(at) {
						at = lt
					}
				}
				if matchLine(connectToleranceRE, l) {
					tolerance = true
				}
				if m := findSubmatch(connectCausedRE, l); m != nil && cause == "" && connectFormat(m[1]) != "" {
					cause = m[1]
				}
			}
		}
	}
	noDLQ, config := true, false
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if strings.Contains(l, `"state"`) && strings.Contains(l, "FAILED") && matchLine(connectToleranceRE, l) {
				tolerance = true
				if m := findSubmatch(connectStatusRE, l); m != nil && name == "" {
					name = m[1]
				}
				if m := findSubmatch(connectStatusRE, l); m != nil && m[1] == name {
					for _, t := range findAllSubmatch(connectTaskRE, l, -1) {
						addTask(t[1])
					}
					if m := findSubmatch(connectCausedRE, l); m != nil && cause == "" {
						cause = m[1]
					}
				}
			}
			if strings.Contains(l, `"connector.class"`) {
				config = true
			}
			if strings.Contains(l, "errors.deadletterqueue.topic.name") || strings.Contains(l, `"errors.tolerance": "all"`) {
				noDLQ = false
			}
		}
	}
	if name == "" || !tolerance {
		return nil
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindConnectTaskFailed, Subject: name, Object: "connector " + name, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	var ids []string
	for _, id := range order {
		ids = append(ids, id)
	}
	f.setFact("tasks", strings.Join(ids, ", "))
	f.setFact("at", hm(at))
	f.setFact("cause", cause)
	f.setFact("format", connectFormat(cause))
	if config && noDLQ {
		f.setFact("no_dlq", "true")
		f.Evidence = append(f.Evidence, fmt.Sprintf("the configuration of %s sets no errors.tolerance=all and no errors.deadletterqueue.topic.name", name))
	}
	f.Evidence = append([]string{fmt.Sprintf("tasks %s of %s FAILED from %s: Tolerance exceeded in error handler, caused by %s", f.fact("tasks"), name, hm(at), quote(orWord(cause, "?"), 200))}, f.Evidence...)
	f.Summary = fmt.Sprintf("Kafka Connect connector %s: tasks FAILED (Tolerance exceeded in error handler)", name)
	return []Finding{f}
}
