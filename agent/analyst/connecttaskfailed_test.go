package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Kafka Connect task failed on a record, read from a worker's log4j
// output (Strimzi's and Confluent's layouts), from the REST status JSON
// with its trace, and with the connector's configuration; a running
// connector and a tolerated error are none.
func TestDetectConnectTaskFailed(t *testing.T) {
	strimzi := []string{
		"2026-11-19 13:41:07,220 ERROR [orders-sink|task-1] WorkerSinkTask{id=orders-sink-1} Task threw an uncaught and unrecoverable exception. Task is being killed and will not recover until manually restarted (org.apache.kafka.connect.runtime.WorkerTask) [task-thread-orders-sink-1]",
		"org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler",
		"Caused by: org.apache.kafka.common.errors.SerializationException: Unknown magic byte!",
	}
	confluent := []string{
		"[2026-11-19 13:41:07,220] ERROR WorkerSinkTask{id=pg-sink-0} Task threw an uncaught and unrecoverable exception. Task is being killed and will not recover until manually restarted (org.apache.kafka.connect.runtime.WorkerTask:193)",
		"org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler",
		"Caused by: org.apache.kafka.connect.errors.DataException: JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not contain additional fields.",
	}
	status := evidence.CommandOutput{Command: "curl -s http://connect:8083/connectors/s3-sink/status", Lines: []string{
		`{"name":"s3-sink","connector":{"state":"RUNNING","worker_id":"10.0.0.5:8083"},"tasks":[{"id":0,"state":"FAILED","worker_id":"10.0.0.5:8083","trace":"org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler\n\tat org.apache.kafka.connect.runtime.errors.RetryWithToleranceOperator.execAndHandleError(RetryWithToleranceOperator.java:206)\nCaused by: org.apache.kafka.common.errors.SerializationException: Error deserializing Avro message for id -1\n"}],"type":"sink"}`}}
	config := evidence.CommandOutput{Command: "curl -s http://connect:8083/connectors/s3-sink/config | jq .", Lines: []string{
		`  "connector.class": "io.confluent.connect.s3.S3SinkConnector",`, `  "value.converter": "io.confluent.connect.avro.AvroConverter",`}}
	running := evidence.CommandOutput{Command: "curl -s http://connect:8083/connectors/s3-sink/status", Lines: []string{
		`{"name":"s3-sink","connector":{"state":"RUNNING","worker_id":"10.0.0.5:8083"},"tasks":[{"id":0,"state":"RUNNING","worker_id":"10.0.0.5:8083"}],"type":"sink"}`}}
	tolerated := []string{"2026-11-19 13:41:07,220 WARN [orders-sink|task-1] Error encountered in task orders-sink-1. Executing stage 'VALUE_CONVERTER' with class 'io.confluent.connect.avro.AvroConverter'. Tolerance exceeded? no: record sent to the dead letter queue"}
	for _, tc := range []struct {
		name      string
		sets      []LogSet
		cmds      []evidence.CommandOutput
		connector string
		want      []string
	}{
		{"Strimzi worker log, Avro magic byte", []LogSet{minedSet("connect-0", false, 0, strimzi...)}, nil, "orders-sink", []string{"tasks 1 FAILED", "Unknown magic byte", "schema registry's wire format"}},
		{"Confluent worker log, JsonConverter envelope", []LogSet{minedSet("connect-worker", false, 0, confluent...)}, nil, "pg-sink", []string{"schema/payload envelope"}},
		{"REST status and config without a dead letter queue", nil, []evidence.CommandOutput{status, config}, "s3-sink", []string{"tasks 0 FAILED", "Error deserializing Avro message", "no dead letter queue"}},
		{"running", nil, []evidence.CommandOutput{running, config}, "", nil},
		{"a tolerated record", []LogSet{minedSet("connect-0", false, 0, tolerated...)}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectConnectTaskFailed(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win}, nil)
			f := onlyFinding(t, fs, tc.connector)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindConnectTaskFailed, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
