package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPrefetchCut: a change cutting a consumer's prefetch before its
// queue's backlog began is the cause, in the spellings changes use; a
// prefetch raised, a change after the onset, or no backlog is nothing.
func TestPrefetchCut(t *testing.T) {
	onset := time.Date(2026, 5, 4, 13, 45, 0, 0, time.UTC)
	backlog := Finding{Kind: KindBacklog, Subject: "label-jobs", Time: onset, Weight: 0.5, Summary: "queue backlog of label-jobs grows from 1400 to 18000",
		Evidence: []string{"queue backlog (rabbitmq_detailed_queue_messages_ready) of label-jobs grows"}}
	logs := []LogSet{{Source: "printer-worker.log", Subject: "printer-worker", Templates: []analysis.LogTemplate{
		{Example: "2026-05-04T13:07:01Z INFO [amqp] printer-worker-6c8f-2kq9p connected to amqps://rabbitmq:5671/wms, channel 1 basic_qos(prefetch_count=1)"}}}}
	cases := []struct {
		name, desc string
		at         time.Duration
		found      bool
		want       bool
		from, to   string
	}{
		{"env var", "AMQP_PREFETCH_COUNT 200 -> 1 (fair dispatch)", -40 * time.Minute, true, true, "200", "1"},
		{"words", "printer-worker: basic.qos prefetch from 50 to 5", -20 * time.Minute, true, true, "50", "5"},
		{"spring", "spring.rabbitmq.listener.simple.prefetch: 250 => 10", -2 * time.Hour, true, true, "250", "10"},
		{"raised", "AMQP_PREFETCH_COUNT 1 -> 200", -40 * time.Minute, true, false, "", ""},
		{"after onset", "AMQP_PREFETCH_COUNT 200 -> 1", 10 * time.Minute, true, false, "", ""},
		{"no backlog", "AMQP_PREFETCH_COUNT 200 -> 1", -40 * time.Minute, false, false, "", ""},
	}
	for _, tc := range cases {
		ev := &Gathered{Logs: logs, Changes: []evidence.Change{{Timestamp: onset.Add(tc.at), Service: "printer-worker", Kind: "config", Description: tc.desc, Revision: "cfg@1"}}}
		var found []Finding
		if tc.found {
			found = []Finding{backlog}
		}
		fs := detectPrefetchCut(ev, found)
		if (len(fs) == 1) != tc.want {
			t.Fatalf("%s: findings %+v", tc.name, fs)
		}
		if !tc.want {
			continue
		}
		f := fs[0]
		if f.Subject != "printer-worker" || f.fact("from") != tc.from || f.fact("to") != tc.to || f.Weight < 0.9 {
			t.Errorf("%s: %+v", tc.name, f)
		}
		h := &Hypothesis{Kind: KindPrefetchCut, Subject: f.Subject, Primary: []*Finding{&f}}
		d := describe(h, Scope{})
		for _, w := range []string{"prefetch", "from " + tc.from + " to " + tc.to, "label-jobs"} {
			if !strings.Contains(d, w) {
				t.Errorf("%s: %q does not say %q", tc.name, d, w)
			}
		}
		if tc.to == "1" && !strings.Contains(d, "basic_qos(prefetch_count=1)") {
			t.Errorf("%s: consumer's QoS line not quoted: %q", tc.name, d)
		}
	}
}
