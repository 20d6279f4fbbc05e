package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// minedSet mines real log lines (one every 10 s from offset after the
// window's start) into a log set, as the gatherer does.
func minedSet(subject string, host bool, offset time.Duration, lines ...string) LogSet {
	m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
	for i, l := range lines {
		m.Add(win.Start.Add(offset+time.Duration(i)*10*time.Second), subject, MiningText(l))
	}
	return LogSet{Source: subject, Subject: subject, Namespace: "comms", Origin: SrcLogs, Host: host, Templates: m.Templates()}
}

func TestResourceAlarms(t *testing.T) {
	rabbitDisk := []string{
		`2026-11-20T08:39:07.881502+00:00 [info] <0.488.0> Free disk space is insufficient. Free bytes: 1998372864. Limit: 2000000000`,
		`2026-11-20T08:39:07.882019+00:00 [warning] <0.484.0> disk resource limit alarm set on node 'rabbit@mq-01'.`,
		`2026-11-20T08:39:07.882019+00:00 [warning] <0.484.0> *** Publishers will be blocked until this alarm clears ***`,
	}
	blockedClient := []string{
		`2026-11-20T08:39:07.904Z WARN  amqp: connection.blocked received from amqp://mq-01.msg.internal:5672 reason="low on disk"`,
		`2026-11-20T08:39:12.906Z ERROR publish sms.outbound: confirm timeout after 5000ms (connection blocked by broker)`,
	}
	cases := []struct {
		name     string
		sets     []LogSet
		subject  string // "" for no finding
		host     string
		resource string
		weight   float64 // at least (or, when resolved, at most)
		clients  string
		resolved bool
	}{
		{"RabbitMQ free-disk alarm in the broker's own log, a client blocked",
			[]LogSet{minedSet("rabbitmq-mq-01", true, 0, rabbitDisk...), minedSet("sms-gateway", false, time.Second, blockedClient...)},
			"rabbitmq", "rabbitmq-mq-01", "disk", 0.9, "sms-gateway", false},
		{"RabbitMQ memory alarm (3.x console format)",
			[]LogSet{minedSet("rmq-0", true, 0,
				`2024-01-10 12:00:00.123 [warning] <0.147.0> memory resource limit alarm set on node 'rabbit@rmq-0'.`,
				`2024-01-10 12:00:00.124 [warning] <0.147.0> *** Publishers will be blocked until this alarm clears ***`)},
			"rabbitmq", "rmq-0", "memory", 0.9, "", false},
		{"the alarm cleared later",
			[]LogSet{minedSet("rabbitmq-mq-01", true, 0, append(rabbitDisk,
				`2026-11-20T08:52:10.101010+00:00 [warning] <0.484.0> disk resource limit alarm cleared on node 'rabbit@mq-01'`)...)},
			"rabbitmq", "rabbitmq-mq-01", "disk", 0.4, "", true},
		{"Elasticsearch flood-stage watermark",
			[]LogSet{minedSet("es-data-1", true, 0,
				`[2024-03-01T10:00:00,123][WARN ][o.e.c.r.a.DiskThresholdMonitor] [es-data-1] flood stage disk watermark [95%] exceeded on [x1][es-data-1][/usr/share/elasticsearch/data/nodes/0] free: 2.1gb[4.2%], all indices on this node will be marked read-only`)},
			"elasticsearch", "es-data-1", "disk", 0.9, "", false},
		{"a client quoting Redis refusing writes (one hop away)",
			[]LogSet{minedSet("cart-api", false, 0,
				`2024-05-02T10:11:12Z ERROR cart save failed: MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist on disk.`,
				`2024-05-02T10:11:22Z ERROR cart save failed: MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist on disk.`)},
			"redis", "", "disk", 0.8, "cart-api", false},
		{"ordinary broker lines are no alarm",
			[]LogSet{minedSet("rabbitmq-mq-01", true, 0,
				`2026-11-20T08:12:44.102311+00:00 [info] <0.1193.0> accepting AMQP connection <0.1193.0> (10.20.14.51:40122 -> 10.20.9.7:5672)`,
				`2026-11-20T08:12:44.108845+00:00 [info] <0.1193.0> connection <0.1193.0> (10.20.14.51:40122 -> 10.20.9.7:5672): user 'sms-gateway' authenticated and granted access to vhost 'comms'`)},
			"", "", "", 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectResourceAlarms(&Gathered{Logs: c.sets, Window: win}, nil)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %d: %+v", len(fs), fs)
			}
			f := fs[0]
			if f.Subject != c.subject || f.fact("host") != c.host || f.fact("resource") != c.resource || f.fact("clients") != c.clients {
				t.Errorf("subject %q host %q resource %q clients %q; want %q %q %q %q", f.Subject, f.fact("host"), f.fact("resource"), f.fact("clients"), c.subject, c.host, c.resource, c.clients)
			}
			if c.resolved != (f.fact("resolved") != "") || !c.resolved && f.Weight < c.weight || c.resolved && f.Weight > c.weight {
				t.Errorf("weight %.2f resolved %q; want %.2f resolved %v", f.Weight, f.fact("resolved"), c.weight, c.resolved)
			}
		})
	}
}

func TestResourceAlarmDescription(t *testing.T) {
	fs := detectResourceAlarms(&Gathered{Logs: []LogSet{
		minedSet("rabbitmq-mq-01", true, 0,
			`2026-11-20T08:39:07.881502+00:00 [info] <0.488.0> Free disk space is insufficient. Free bytes: 1998372864. Limit: 2000000000`,
			`2026-11-20T08:39:07.882019+00:00 [warning] <0.484.0> disk resource limit alarm set on node 'rabbit@mq-01'.`),
		minedSet("sms-gateway", false, time.Second, `2026-11-20T08:39:07.904Z WARN  amqp: connection.blocked received from amqp://mq-01.msg.internal:5672 reason="low on disk"`),
	}, Window: win}, nil)
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	h := &Hypothesis{Kind: KindResourceAlarm, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
	d := resourceAlarm.describe(h, Scope{})
	for _, want := range []string{"rabbitmq server rabbitmq-mq-01", "free-disk alarm", "blocks its clients' publishes", "free 1.998 GB, below its limit of 2.000 GB", "clients are blocked: sms-gateway"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
	// A client's timeout supports the alarm; its deploy does not trigger it.
	timeout := &Finding{Kind: KindTimeout, Subject: "sms-gateway", Facts: map[string]string{"caller": "sms-gateway"}}
	if !supports(h, timeout) {
		t.Error("a blocked client's timeout should support the alarm")
	}
	deploy := &Finding{Kind: KindDeploy, Subject: "sms-gateway"}
	if resourceAlarm.fitsChange(h, deploy) {
		t.Error("a client's deploy should not trigger the server's alarm")
	}
}
