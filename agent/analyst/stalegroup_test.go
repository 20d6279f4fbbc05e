package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

func TestStaleGroupDetected(t *testing.T) {
	header := "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID"
	old := evidence.CommandOutput{Run: "bin/kafka-consumer-groups.sh --bootstrap-server localhost:9092 --describe --group orders-old", Lines: []string{
		"", "Consumer group 'orders-old' has no active members.", "", header,
		"orders-old      orders          0          1000            901000          900000          -               -               -",
		"orders-old      orders          1          1000            801000          800000          -               -               -",
	}}
	caughtUp := evidence.CommandOutput{Run: "kafka-consumer-groups --bootstrap-server b:9092 --describe --group orders-new", Lines: []string{
		header,
		"orders-new      orders          0          900990          901000          10              consumer-1-abc  /10.0.0.1       consumer-1",
		"orders-new      orders          1          801000          801000          0               consumer-2-def  /10.0.0.2       consumer-2",
	}}
	lagging := evidence.CommandOutput{Run: "kafka-consumer-groups --describe --group orders-new", Lines: []string{
		header,
		"orders-new      orders          0          1000            901000          900000          consumer-1-abc  /10.0.0.1       consumer-1",
	}}
	withMembers := evidence.CommandOutput{Run: "kafka-consumer-groups --describe --group orders-old", Lines: []string{
		header,
		"orders-old      orders          0          1000            901000          900000          consumer-9-x    /10.0.0.9       consumer-9",
	}}
	cases := []struct {
		name string
		cmds []evidence.CommandOutput
		want string
	}{
		{"retired group beside a caught-up successor", []evidence.CommandOutput{old, caughtUp}, "orders-old"},
		{"successor lags too: not a stale alert", []evidence.CommandOutput{old, lagging}, ""},
		{"no other group read", []evidence.CommandOutput{old}, ""},
		{"the lagging group has members", []evidence.CommandOutput{withMembers, caughtUp}, ""},
	}
	// Its consumers' own logs fail under the group's name (the Java
	// client's groupId=, librdkafka's group.id, a structured field): the
	// group is not retired, it cannot consume.
	failing := []string{
		"2026-11-25T14:00:19.844Z ERROR 1 --- [main] org.apache.kafka.clients.NetworkClient : [Consumer clientId=consumer-orders-old-1, groupId=orders-old] Connection to node 2 failed authentication due to: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		"%3|1732543219.844|FAIL|rdkafka#consumer-1| [thrd:sasl_ssl://b:9094/2]: group.id=orders-old: SASL authentication error: Authentication failed during authentication due to invalid credentials",
		`{"level":"error","group":"orders-old","msg":"consumer stopped: kafka server: SASL Authentication failed"}`,
	}
	for _, l := range failing {
		ev := &Gathered{Commands: []evidence.CommandOutput{old, caughtUp}, Scope: Scope{Service: "orders-consumer"},
			Logs: []LogSet{{Subject: "orders-consumer", Templates: []analysis.LogTemplate{{Example: l, Incident: 1}}}}}
		if fs := detectStaleGroup(ev, nil); len(fs) != 0 {
			t.Errorf("consumers failing (%q): want none, got %+v", l, fs)
		}
	}
	// A running workload named as the group holds no member of it: its
	// consumer cannot join, the group is not retired.
	running := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-old-6d9f7b8c45-7xq2m", Namespace: "shop",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "orders-old-6d9f7b8c45"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if fs := detectStaleGroup(&Gathered{Commands: []evidence.CommandOutput{old, caughtUp}, K8s: K8sEvidence{Pods: []corev1.Pod{running}}, Scope: Scope{Service: "orders-consumer"}}, nil); len(fs) != 0 {
		t.Errorf("namesake workload running: want none, got %+v", fs)
	}
	// A line of another group, or an informational one, leaves it retired.
	for _, l := range []string{
		"ERROR [Consumer clientId=c-1, groupId=orders-old-v2] failed authentication",
		"INFO [Consumer clientId=c-1, groupId=orders-old] Resetting offset for partition orders-0",
	} {
		ev := &Gathered{Commands: []evidence.CommandOutput{old, caughtUp}, Scope: Scope{Service: "orders-consumer"},
			Logs: []LogSet{{Subject: "orders-consumer", Templates: []analysis.LogTemplate{{Example: l, Incident: 1}}}}}
		if fs := detectStaleGroup(ev, nil); len(fs) != 1 {
			t.Errorf("%q: want the retired group, got %+v", l, fs)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectStaleGroup(&Gathered{Commands: c.cmds, Scope: Scope{Service: "orders-consumer"}}, nil)
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("want none, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].fact("group") != c.want || fs[0].fact("successor") != "orders-new" || fs[0].fact("lag") != "1700000" || fs[0].Subject != "orders-consumer" {
				t.Fatalf("got %+v", fs)
			}
		})
	}
}
