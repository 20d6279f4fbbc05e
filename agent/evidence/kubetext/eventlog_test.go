package kubetext_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// An event exporter's log read with kubectl logs holds events: the Event
// objects as the API serves them (kubernetes-event-exporter's stdout, both
// APIs), eventrouter's {"verb","event"} wrapper, and what a jq filter
// projected of them. A projection without a namespace takes its object's
// from the transcript. The exporter's own lines are no events, and the log
// stays a log.
func TestExportedEvents(t *testing.T) {
	ref := time.Date(2026, 3, 18, 7, 45, 0, 0, time.UTC)
	cases := []struct {
		name, text string
		want       []string // kind/namespace/name reason @time of each event read
	}{
		{"jq projection, the namespace from the Job described", `$ kubectl describe job etl-29563320 -n data
Name:             etl-29563320
Namespace:        data
Parallelism:      1
Completions:      1
Start Time:       Wed, 18 Mar 2026 02:00:00 +0000
Pods Statuses:    0 Active (0 Ready) / 0 Succeeded / 3 Failed
$ kubectl logs -n monitoring deploy/kubernetes-event-exporter --since=7h | grep etl-29563320 | jq -c '{t: .lastTimestamp, obj: (.involvedObject.kind + "/" + .involvedObject.name), reason, msg: .message, src: .source.component}'
Found 1 pods, using pod/kubernetes-event-exporter-5b7c9d6f48-wq2zn
{"t":"2026-03-18T02:31:12Z","obj":"Pod/etl-29563320-8kqlp","reason":"Preempted","msg":"Preempted by pod 3c9e7b1f-2a4d-4e6b-8f0a-1b2c3d4e5f60 on node w-04","src":"default-scheduler"}
{"t":"2026-03-18T03:02:59Z","obj":"Job/etl-29563320","reason":"BackoffLimitExceeded","msg":"Job has reached the specified backoff limit","src":"job-controller"}
`, []string{"Pod/data/etl-29563320-8kqlp Preempted @02:31", "Job/data/etl-29563320 BackoffLimitExceeded @03:02"}},
		{"whole core/v1 events, with --timestamps", `$ kubectl logs -n monitoring event-exporter-7d9c8b6f5-x2k4p --timestamps
2026-03-18T02:31:13.000000000Z {"metadata":{"name":"etl-1.17d","namespace":"data"},"involvedObject":{"kind":"Pod","namespace":"data","name":"etl-1-8kqlp"},"reason":"Preempted","message":"Preempted by pod 9f1a on node w-02","source":{"component":"default-scheduler"},"firstTimestamp":"2026-03-18T02:31:12Z","lastTimestamp":"2026-03-18T02:31:12Z","count":1,"type":"Normal"}
2026-03-18T02:31:14.000000000Z level=info msg="sink stdout: 1 event written"
`, []string{"Pod/data/etl-1-8kqlp Preempted @02:31"}},
		{"eventrouter's wrapper", `$ kubectl logs -n kube-system eventrouter-6d8f7c9b54-hxw2q
{"verb":"ADDED","event":{"metadata":{"name":"w.1","namespace":"ml"},"involvedObject":{"kind":"Pod","namespace":"ml","name":"w-7f8d9c6b5d-8bq4m"},"reason":"FailedScheduling","message":"0/14 nodes are available","source":{"component":"default-scheduler"},"lastTimestamp":"2026-03-18T06:10:00Z","type":"Warning"}}
`, []string{"Pod/ml/w-7f8d9c6b5d-8bq4m FailedScheduling @06:10"}},
		{"events.k8s.io/v1", `$ kubectl logs -n monitoring event-exporter-7d9c8b6f5-x2k4p
{"metadata":{"name":"db-0.1","namespace":"shop"},"regarding":{"kind":"Pod","namespace":"shop","name":"db-0"},"reason":"Killing","note":"Stopping container db","reportingController":"kubelet","eventTime":"2026-03-18T05:00:00.000000Z","type":"Normal"}
`, []string{"Pod/shop/db-0 Killing @05:00"}},
		{"projection with kind and name keys and a namespace", `$ kubectl logs -n monitoring event-exporter-7d9c8b6f5-x2k4p | jq -c '{ts: .lastTimestamp, kind: .involvedObject.kind, name: .involvedObject.name, ns: .involvedObject.namespace, reason, message}'
{"ts":"2026-03-18T04:00:00Z","kind":"Pod","name":"api-1","ns":"web","reason":"BackOff","message":"Back-off restarting failed container"}
`, []string{"Pod/web/api-1 BackOff @04:00"}},
		{"an application's JSON log is no events", `$ kubectl logs -n web api-7d9c8b6f5-x2k4p
{"ts":"2026-03-18T04:00:00Z","level":"error","msg":"request failed","reason":"timeout","path":"/v1/orders"}
{"level":"info","message":"started","object":"cache"}
`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := parseEvents(t, c.text, ref, c.want)
			if len(res.Logs) == 0 {
				t.Errorf("the log itself was not kept")
			}
		})
	}
}

// parseEvents reads text as a transcript captured at ref, checks the
// events read, one "kind/namespace/name reason @HH:MM" each, against want,
// and returns what was read.
func parseEvents(t *testing.T, text string, ref time.Time, want []string) *kubetext.Result {
	t.Helper()
	res := kubetext.Parse([]byte(text), ref)
	var got []string
	for _, e := range res.Events {
		got = append(got, fmt.Sprintf("%s/%s/%s %s @%s", e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Reason, e.LastTimestamp.UTC().Format("15:04")))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return res
}

// The same exporter stream read from Loki with logcli: each entry after
// its time and stream labels (logcli query's default output, and with
// --output=raw none). The query's other entries are no events.
func TestExportedEventsLogcli(t *testing.T) {
	ref := time.Date(2026, 3, 18, 7, 45, 0, 0, time.UTC)
	cases := []struct {
		name, text string
		want       []string
	}{
		{"default output", `$ logcli query --since=12h '{namespace="monitoring", app="kubernetes-event-exporter"} |= "CronJob"'
2026-03-18T02:19:40Z {app="kubernetes-event-exporter", namespace="monitoring"} {"metadata":{"name":"nightly.1","namespace":"billing"},"involvedObject":{"kind":"CronJob","namespace":"billing","name":"nightly"},"reason":"MissSchedule","message":"Missed scheduled time to start a job: Wed, 18 Mar 2026 02:00:00 +0000","source":{"component":"cronjob-controller"},"lastTimestamp":"2026-03-18T02:19:40Z","type":"Warning"}
2026-03-18T01:30:00Z {app="kubernetes-event-exporter", namespace="monitoring"} {"metadata":{"name":"snap.1","namespace":"billing"},"involvedObject":{"kind":"CronJob","namespace":"billing","name":"snap"},"reason":"SuccessfulCreate","message":"Created job snap-29929050","source":{"component":"cronjob-controller"},"lastTimestamp":"2026-03-18T01:30:00Z","type":"Normal"}
`, []string{"CronJob/billing/nightly MissSchedule @02:19", "CronJob/billing/snap SuccessfulCreate @01:30"}},
		{"raw output", `$ logcli query -o raw '{app="event-exporter"}'
{"metadata":{"name":"db-0.1","namespace":"shop"},"regarding":{"kind":"Pod","namespace":"shop","name":"db-0"},"reason":"Killing","note":"Stopping container db","reportingController":"kubelet","eventTime":"2026-03-18T05:00:00.000000Z","type":"Normal"}
`, []string{"Pod/shop/db-0 Killing @05:00"}},
		{"an application's stream is no events", `$ logcli query '{app="api"}'
2026-03-18T04:00:00Z {app="api", pod="api-1"} {"ts":"2026-03-18T04:00:00Z","level":"error","msg":"request failed","reason":"timeout"}
`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { parseEvents(t, c.text, ref, c.want) })
	}
}
