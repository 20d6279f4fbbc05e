package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestCalledHosts(t *testing.T) {
	texts := []string{
		// A Go client's lookup of a StatefulSet pod's name.
		`dial tcp: lookup kafka-1.kafka-headless.streaming.svc.cluster.local on 172.20.0.10:53: no such host`,
		// An init container waiting on a dependency.
		`sh -c until nc -z -w 2 kafka-headless.streaming.svc.cluster.local 9092; do sleep 5; done`,
		// Same namespace and the cluster DNS: not followed.
		`GET http://ledger.messaging.svc:8080/health`,
		`coredns.kube-system.svc`,
		// A third namespace beyond the limit of two.
		`redis-master.cache.svc:6379`,
		`pg.billing.svc:5432`,
	}
	got := calledHosts("messaging", texts, 2)
	want := []calledHost{{"kafka-1", "kafka-headless", "streaming"}, {"", "kafka-headless", "streaming"}, {"", "redis-master", "cache"}}
	if len(got) != len(want) {
		t.Fatalf("calledHosts = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("host %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBacksHost(t *testing.T) {
	sts := func(name, owner string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "streaming",
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: owner}}}}
	}
	cases := []struct {
		pod  *corev1.Pod
		host calledHost
		want bool
	}{
		{sts("kafka-1", "kafka"), calledHost{"kafka-1", "kafka-headless", "streaming"}, true},
		{sts("kafka-2", "kafka"), calledHost{"", "kafka-headless", "streaming"}, true},
		{sts("kafka-2", "kafka"), calledHost{"", "kafka", "streaming"}, true},
		{sts("zookeeper-0", "zookeeper"), calledHost{"", "kafka-headless", "streaming"}, false},
		{sts("kafka-0", "kafka"), calledHost{"", "kafka-headless", "other"}, false},
		{sts("kafka-exporter-0", "kafka-exporter"), calledHost{"", "kafka-headless", "streaming"}, false},
	}
	for _, c := range cases {
		if got := backsHost(c.pod, c.host); got != c.want {
			t.Errorf("backsHost(%s, %+v) = %v, want %v", c.pod.Name, c.host, got, c.want)
		}
	}
}

func TestCauseLineThrown(t *testing.T) {
	// A Kafka broker's last lines: the thrown exception carries the cause,
	// not the final "Exiting ... fatal exception" line.
	lines := []evidence.LogLine{
		{Text: `[2026-11-16 09:18:23,247] ERROR Fatal error during KafkaServer startup. Prepare to shutdown (kafka.server.KafkaServer)`},
		{Text: `kafka.common.InconsistentClusterIdException: The Cluster ID 3rXf8mYgT1q6Zc4bVn0kLw doesn't match stored clusterId Some(Qm2pX7wK9dRzL5vT8nJc1A) in meta.properties.`},
		{Text: `	at kafka.server.KafkaServer.startup(KafkaServer.scala:262)`},
		{Text: `[2026-11-16 09:18:23,364] INFO shut down completed (kafka.server.KafkaServer)`},
		{Text: `[2026-11-16 09:18:23,364] ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)`},
	}
	if got := causeLine(lines); got != lines[1].Text {
		t.Errorf("causeLine = %q, want the thrown exception", got)
	}
}
