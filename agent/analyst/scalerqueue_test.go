package analyst

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A KEDA ScaledObject watching a queue nobody writes to while its
// consumer sits at 0 replicas and the queue it moved to fills with no
// consumer: the ScaledObject as kubectl prints it in YAML (RabbitMQ
// queueName) and JSON (SQS queueURL), the queues from rabbitmqctl
// list_queues (two column sets) and from the RabbitMQ exporter's series.
// A watched queue with messages, a consumer still running, a full queue
// that has consumers and one that nothing links to the consumer are none.
func TestScalerQueue(t *testing.T) {
	zero, two := int32(0), int32(2)
	dep := func(n *int32) []appsv1.Deployment {
		return []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "billing-consumer", Namespace: "pay"}, Spec: appsv1.DeploymentSpec{Replicas: n}}}
	}
	soYAML := evidence.CommandOutput{Command: "kubectl get scaledobject billing-consumer -n pay -o yaml", Lines: []string{
		"apiVersion: keda.sh/v1alpha1", "kind: ScaledObject", "metadata:", "  name: billing-consumer", "spec:", "  minReplicaCount: 0", "  maxReplicaCount: 10",
		"  scaleTargetRef:", "    name: billing-consumer", "  triggers:", "  - type: rabbitmq", "    metadata:", "      queueName: invoices", "      mode: QueueLength", "      value: \"20\"",
		"status:", "  conditions:", "  - type: Ready", "    status: \"True\"", "  - type: Active", "    status: \"False\"", "  originalReplicaCount: 3"}}
	soJSON := evidence.CommandOutput{Command: "kubectl get scaledobjects.keda.sh billing-consumer -n pay -o json | jq .spec", Lines: []string{
		"{", `  "minReplicaCount": 0,`, `  "scaleTargetRef": {`, `    "name": "billing-consumer"`, "  },", `  "triggers": [`, "    {", `      "type": "aws-sqs-queue",`, `      "metadata": {`,
		`        "queueURL": "https://sqs.eu-west-1.amazonaws.com/123456789012/invoices",`, `        "queueLength": "20"`, "      }", "    }", "  ]", "}"}}
	listQueues := evidence.CommandOutput{Command: "kubectl exec -n pay rabbitmq-0 -- rabbitmqctl list_queues name messages consumers", Lines: []string{
		"Timeout: 60.0 seconds ...", "Listing queues for vhost / ...", "name\tmessages\tconsumers", "invoices\t0\t0", "invoices-v2\t5120\t0", "audit\t3\t1"}}
	listReady := evidence.CommandOutput{Command: "rabbitmqctl list_queues name type messages_ready messages_unacknowledged consumers", Lines: []string{
		"name\ttype\tmessages_ready\tmessages_unacknowledged\tconsumers", "invoices\tclassic\t0\t0\t0", "billing.jobs\tquorum\t880\t0\t0"}}
	withConsumers := evidence.CommandOutput{Command: "rabbitmqctl list_queues name messages consumers", Lines: []string{
		"name\tmessages\tconsumers", "invoices\t0\t0", "invoices-v2\t5120\t2"}}
	watchedFull := evidence.CommandOutput{Command: "rabbitmqctl list_queues name messages consumers", Lines: []string{
		"name\tmessages\tconsumers", "invoices\t900\t0", "invoices-v2\t5120\t0"}}
	moved := evidence.Change{Timestamp: win.Start.Add(-5 * time.Hour), Service: "billing-consumer", Kind: "deploy", Description: "billing-consumer 2.0: read from billing.jobs"}
	metricQueues := []MetricSet{
		{Name: "rabbitmq_queue_messages_ready", Series: []evidence.Series{
			{Labels: evidence.Labels{"queue": "invoices"}, Points: pts(win.Start, time.Minute, 0, 0, 0)},
			{Labels: evidence.Labels{"queue": "invoices_v2"}, Points: pts(win.Start, time.Minute, 4000, 4100, 4200)}}},
		{Name: "rabbitmq_queue_consumers", Series: []evidence.Series{
			{Labels: evidence.Labels{"queue": "invoices"}, Points: pts(win.Start, time.Minute, 0, 0, 0)},
			{Labels: evidence.Labels{"queue": "invoices_v2"}, Points: pts(win.Start, time.Minute, 0, 0, 0)}}},
	}
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		metrics []MetricSet
		deps    []appsv1.Deployment
		changes []evidence.Change
		subject string
		want    []string
	}{
		{"yaml, list_queues messages, renamed queue", []evidence.CommandOutput{soYAML, listQueues}, nil, dep(&zero), nil, "billing-consumer",
			[]string{"watches the queue invoices", "invoices-v2", "5120 messages"}},
		{"json sqs url, exporter series", []evidence.CommandOutput{soJSON}, metricQueues, dep(&zero), nil, "billing-consumer",
			[]string{"aws-sqs-queue", "invoices_v2", "4200 messages"}},
		{"list_queues messages_ready, the consumer's change names the queue", []evidence.CommandOutput{soYAML, listReady}, nil, dep(&zero), []evidence.Change{moved}, "billing-consumer",
			[]string{"billing.jobs", "880 messages", "read from billing.jobs"}},
		{"consumer still running: none", []evidence.CommandOutput{soYAML, listQueues}, nil, dep(&two), nil, "", nil},
		{"the new queue has consumers: none", []evidence.CommandOutput{soYAML, withConsumers}, nil, dep(&zero), nil, "", nil},
		{"the watched queue has messages: none", []evidence.CommandOutput{soYAML, watchedFull}, nil, dep(&zero), nil, "", nil},
		{"nothing links the full queue: none", []evidence.CommandOutput{soYAML, listReady}, nil, dep(&zero), nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Deployments: c.deps}, Commands: c.cmds, Metrics: c.metrics, Changes: c.changes, Window: win, Scope: Scope{Namespace: "pay"}}
			f := onlyFinding(t, detectScalerQueue(g), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindScalerQueue, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
