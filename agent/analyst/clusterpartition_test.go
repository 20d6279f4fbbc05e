package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A broker cluster partitioned: RabbitMQ's paused minority node, the
// majority's Mnesia report and a consumer refused its queue, with the
// full conntrack table that dropped the packets; autoheal; a memory
// alarm is not a partition.
func TestDetectClusterPartition(t *testing.T) {
	minority := []string{
		`2026-11-25 13:04:48.159367+00:00 [error] <0.471.0> ** Node 'rabbit@rabbitmq-server-0.rabbitmq-nodes.messaging' not responding **`,
		`2026-11-25 13:04:49.978604+00:00 [warning] <0.512.0> Cluster minority/secondary status detected - awaiting recovery`,
	}
	majority := `2026-11-25 13:04:47.735567+00:00 [error] <0.488.0> Mnesia('rabbit@rabbitmq-server-0.rabbitmq-nodes.messaging'): ** ERROR ** mnesia_event got {inconsistent_database, running_partitioned_network, 'rabbit@rabbitmq-server-2.rabbitmq-nodes.messaging'}`
	partial := `2026-11-25 13:04:48.324646+00:00 [warning] <0.512.0> Partial partition disconnect from rabbit@mq-3.internal`
	autoheal := `2026-11-25 13:04:52.100000+00:00 [info] <0.522.0> Autoheal decision`
	consumer := `2026-11-25 13:29:25,777 ERROR shipping_consumer.amqp: basic_consume on shipping.labels failed: ChannelClosedByBroker: (404, "NOT_FOUND - home node 'rabbit@rabbitmq-server-2.rabbitmq-nodes.messaging' of durable queue 'shipping.labels' in vhost '/' is down or inaccessible")`
	kern := `Nov 25 13:04:31 ip-10-40-3-18 kernel: [812331.200000] nf_conntrack: nf_conntrack: table full, dropping packet`
	memAlarm := `2026-11-25 13:04:49.978604+00:00 [warning] <0.484.0> memory resource limit alarm set on node 'rabbit@rabbitmq-server-0'.`
	mode := evidence.CommandOutput{Command: "kubectl get cm rabbitmq-server-conf -n messaging -o jsonpath='{.data.userDefinedConfiguration\\.conf}'", Lines: []string{"cluster_partition_handling = pause_minority"}}
	cases := []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"pause_minority, a consumer stalled, conntrack full on the node",
			[]LogSet{minedSet("rabbitmq-server", false, 0, append(minority, majority)...), minedSet("shipping-consumer", false, time.Minute, consumer, consumer), minedSet("ip-10-40-3-18-kern", true, -10*time.Second, kern, kern)},
			[]evidence.CommandOutput{mode},
			"rabbitmq-server", []string{"partitioned", "rabbitmq-server-2", "paused itself", "pause_minority", "shipping.labels", "shipping-consumer", "ip-10-40-3-18", "not a memory"}},
		{"the majority's view only", []LogSet{minedSet("mq", true, 0, partial, partial)}, nil, "mq", []string{"partitioned", "mq-3"}},
		{"autoheal", []LogSet{minedSet("rabbitmq", false, 0, autoheal, autoheal)}, nil, "rabbitmq", []string{"partitioned"}},
		{"a memory alarm is not a partition", []LogSet{minedSet("rabbitmq", false, 0, memAlarm, memAlarm)}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectClusterPartition(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindClusterPartition, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
