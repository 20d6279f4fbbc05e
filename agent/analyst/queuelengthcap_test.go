package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestQueueLengthCap reads a queue's depth flat at a ceiling that a change
// or rabbitmqctl's policies give as its max-length, or flat while the
// broker counts messages dropped for max-length; a queue merely busy is
// not this.
func TestQueueLengthCap(t *testing.T) {
	w := testWindow()
	depth := func(name string, vs ...float64) MetricSet {
		s := evidence.Series{Labels: evidence.Labels{"__name__": name, "queue": "jobs.outbound", "vhost": "/"}}
		for i, v := range vs {
			s.Points = append(s.Points, evidence.Point{T: w.Start.Add(time.Duration(i) * 2 * time.Minute), V: v})
		}
		return MetricSet{Name: name, Series: []evidence.Series{s}}
	}
	full := []float64{900, 4000, 9000, 10000, 10000, 10000, 10000, 10000, 7000, 1200}
	busy := []float64{900, 4000, 9000, 9400, 9800, 9100, 8000, 6000, 3000, 1200}
	dropped := MetricSet{Name: "rabbitmq_global_messages_dead_lettered_maxlen_total", Series: []evidence.Series{{
		Labels: evidence.Labels{"queue_type": "rabbit_classic_queue", "dead_letter_strategy": "disabled"},
		Points: []evidence.Point{{T: w.Start, V: 0}, {T: w.End, V: 21500}}}}}
	change := evidence.Change{Timestamp: w.Start.Add(-24 * time.Hour), Service: "rabbitmq", Kind: "config", Description: `policy cap: {"max-length":10000} on ^jobs\.`}
	policies := evidence.CommandOutput{Run: "rabbitmqctl list_policies -p /", Lines: []string{
		"vhost\tname\tpattern\tapply-to\tdefinition\tpriority",
		"/\tjobs-dlx\t^jobs\\.outbound$\tqueues\t{\"dead-letter-exchange\":\"jobs.dlx\"}\t0",
		"/\tcap\t^jobs\\.\tqueues\t{\"max-length\":10000}\t5",
	}}
	for _, c := range []struct {
		name    string
		metrics []MetricSet
		changes []evidence.Change
		cmds    []evidence.CommandOutput
		says    []string
	}{
		{"prometheus plugin depth and drops, the policy change", []MetricSet{depth("rabbitmq_queue_messages_ready", full...), dropped}, []evidence.Change{change}, nil,
			[]string{"queue jobs.outbound sat at its max-length limit of 10000 messages", "21500 messages were discarded", "no dead-letter target", `the limit came with the config change of rabbitmq`}},
		{"rabbitmqctl policies, dead-lettering replaced", []MetricSet{depth("rabbitmq_queue_messages", full...)}, nil, []evidence.CommandOutput{policies},
			[]string{"max-length limit of 10000", "the policy cap (priority 5) outranks the queue's dead-letter policy jobs-dlx (priority 0)"}},
		{"a busy queue under no limit", []MetricSet{depth("rabbitmq_queue_messages_ready", busy...)}, []evidence.Change{change}, nil, nil},
		{"flat with nothing saying a limit", []MetricSet{depth("rabbitmq_queue_messages_ready", full...)}, nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectQueueLengthCap(&Gathered{Metrics: c.metrics, Earlier: c.changes, Commands: c.cmds, Window: w}, nil)
			wantWritten(t, KindQueueLengthCap, fs, c.says)
		})
	}
}
