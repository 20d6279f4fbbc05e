package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Pipeline agents' own lines, in several products' wording: the store's
// mapping refusal through Fluentd and Fluent Bit, a read-only index
// through Vector, a CRI line under Fluentd's JSON parser, Fluent Bit's
// parser, an OTLP/HTTP exporter at the gRPC port, a provider's 503
// through Alloy and an in-cluster 503 through Promtail, Fluent Bit's
// paused input with files rotated away and Fluentd's buffer overflow; an
// application's own line naming the same words is not the pipeline's.
func TestPipelineState(t *testing.T) {
	end := time.Date(2026, 11, 27, 15, 10, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-6 * time.Hour), Start: end.Add(-2 * time.Hour), End: end}
	cmd := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Lines: lines}
	}
	for _, tc := range []struct {
		name    string
		msg     string
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string
		want    []string
	}{
		{"fluentd, elasticsearch mapping", "billing-api logs are gone from kibana",
			[]evidence.CommandOutput{cmd("kubectl -n logging logs fluentd-2tqlx --since=70m",
				`2026-11-27 14:05:12 +0000 [warn]: #0 dump an error event: error_class=Fluent::Plugin::ElasticsearchErrorHandler::ElasticsearchError error="400 - Rejected by Elasticsearch [error type]: mapper_parsing_exception [reason]: 'object mapping for [error] tried to parse field [error] as object, but found a concrete value'" location=nil tag="kubernetes.var.log.containers.billing-api-6b8f9d7c45-4xkpt_billing_billing-api-3f0c9e1d7b.log" time=2026-11-27 14:05:11.880000000 +0000 record={"service.name"=>"billing-api", "error"=>"avalara: 503"}`)},
			[]evidence.Change{{Timestamp: end.Add(-66 * time.Minute), Service: "billing-api", Kind: "deploy", Description: "billing-api 7.3.0: error flattened into a string"}},
			"billing-api", []string{"elasticsearch refuses billing-api's documents", "mapper_parsing_exception", "field [error]", "concrete", "billing-api 7.3.0", "not stuck"}},
		{"fluent bit, opensearch field type", "checkout logs missing in opensearch",
			[]evidence.CommandOutput{cmd("kubectl -n logging logs fluent-bit-8kq2x",
				`[2026/11/27 14:20:03] [error] [output:opensearch:opensearch.0] error: Output {"took":3,"errors":true,"items":[{"create":{"_index":"logs-2026.11.27","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [status] of type [long] in document with id 'x1'. Preview of field's value: 'OK'"}}}]} kubernetes.var.log.containers.checkout-7d9f8b6c5-x2k4p_shop_checkout-0a1b2c3d4e5f.log`)},
			nil, "checkout", []string{"opensearch refuses checkout's documents", "field [status]", "type [long]"}},
		{"vector, read-only index", "logs missing in kibana since 9",
			[]evidence.CommandOutput{cmd("kubectl -n logging logs vector-agent-7xk2p",
				`2026-11-27T14:10:02.118Z ERROR sink{component_kind="sink" component_id=es component_type=elasticsearch}: vector::sinks::elasticsearch::service: Response contained errors. error_code="http_response_403" response=Response { status: 403, body: "{\"error\":{\"type\":\"cluster_block_exception\",\"reason\":\"index [logs-2026.11.27] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];\"}}" }`)},
			nil, "vector", []string{"blocks writes", "cluster_block_exception"}},
		{"fluentd, CRI lines under a JSON parser", "kibana has no logs for half our services",
			[]evidence.CommandOutput{
				cmd("kubectl get nodes -o wide", "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME",
					"ip-10-12-1-33.eu-west-1.compute.internal Ready <none> 3h v1.24.17 10.12.1.33 <none> AL2 5.10 containerd://1.7.22",
					"ip-10-12-2-201.eu-west-1.compute.internal Ready <none> 97d v1.23.17 10.12.2.201 <none> AL2 5.4 docker://20.10.25"),
				cmd("kubectl -n logging logs fluentd-8wz4n --tail=2",
					`2026-11-24 11:29:41 +0000 [warn]: #0 pattern not matched: "2026-11-24T11:29:41.118734512Z stdout F {\"level\":\"info\",\"msg\":\"POST /v1/checkout 200\"}"`),
				cmd("kubectl -n logging get cm fluentd-config -o yaml", "  <parse>", "    @type json", "  </parse>")},
			nil, "fluentd", []string{"CRI log format", "containerd", "json parser", "1 node (ip-10-12-1-33.eu-west-1.compute.internal)"}},
		{"fluent bit parser", "app logs missing in loki",
			[]evidence.CommandOutput{cmd("kubectl -n logging logs fluent-bit-2m4kd",
				`[2026/11/27 14:02:11] [ warn] [parser:json] cannot parse '2026-11-27T14:02:11.2Z stdout F plain text line'`)},
			nil, "fluent-bit", []string{"parser does not match", "CRI log format"}},
		{"otel collector, otlphttp at the grpc port", "no traces in jaeger since 13:30",
			[]evidence.CommandOutput{cmd("kubectl -n observability logs otel-collector-6c9b7f5d84-8k2tw",
				`2026-11-27T13:28:14.512Z	info	internal/retry_sender.go:118	Exporting failed. Will retry the request after interval.	{"kind": "exporter", "data_type": "traces", "name": "otlphttp/jaeger", "error": "failed to make an HTTP request: Post \"http://jaeger-collector.tracing.svc:4317/v1/traces\": net/http: HTTP/1.x transport connection broken: malformed HTTP response \"\\x00\\x00\\x06\\x04\"", "interval": "5.21s"}`,
				`2026-11-27T13:33:20.118Z	error	internal/queue_sender.go:101	Exporting failed. Dropping data.	{"kind": "exporter", "data_type": "traces", "name": "otlphttp/jaeger", "error": "no more retries left: malformed HTTP response", "dropped_items": 512}`)},
			nil, "otel-collector", []string{"otlphttp/jaeger", "gRPC port 4317", "malformed HTTP response", "512 items dropped"}},
		{"alloy, a provider's 503", "prod logs missing in grafana cloud since 13:40",
			[]evidence.CommandOutput{
				cmd("kubectl --context prod-eu -n monitoring logs alloy-4kq8z -c alloy",
					`ts=2026-11-27T13:38:52.114Z level=warn msg="error sending batch, will retry" component_id=loki.write.grafana_cloud component=client host=logs-prod-012.grafana.net status=503 tenant="" error="server returned HTTP status 503 Service Unavailable (503): upstream connect error"`),
				cmd("kubectl --context staging-eu -n monitoring logs alloy-7bq4d -c alloy",
					`ts=2026-11-27T13:38:57.640Z level=warn msg="error sending batch, will retry" component_id=loki.write.grafana_cloud component=client host=logs-prod-012.grafana.net status=503 tenant="" error="server returned HTTP status 503 Service Unavailable (503)"`),
				cmd("curl -s https://status.grafana.com/api/v2/incidents/unresolved.json | jq -r '.incidents[]'",
					"2026-11-27T13:44:18.392Z identified Degraded log ingestion in prod-eu-west-2 (logs-prod-012)")},
			nil, "alloy", []string{"provider's endpoint", "503", "upstream", "Degraded log ingestion", "staging-eu's alloy"}},
		{"promtail, an in-cluster 503", "no logs in loki",
			[]evidence.CommandOutput{cmd("kubectl -n logging logs promtail-x2kq9",
				`level=warn ts=2026-11-27T14:01:41.7Z caller=client.go:419 component=client host=loki-gateway.logging.svc.cluster.local msg="error sending batch, will retry" status=503 error="server returned HTTP status 503 Service Unavailable (503)"`)},
			nil, "promtail", []string{"loki-gateway.logging.svc.cluster.local answers 503"}},
		{"fluent bit paused, files rotated away", "ingress access logs have holes at every traffic peak",
			[]evidence.CommandOutput{
				cmd("diff <(helm get values fluent-bit --revision 26 -a | grep -i mem_buf) <(helm get values fluent-bit --revision 27 -a | grep -i mem_buf)", "1c1", "<         Mem_Buf_Limit 50MB", "---", ">         Mem_Buf_Limit 5MB"),
				cmd("kubectl -n logging logs fluent-bit-w2f7k --since=45m",
					"[2026/11/27 12:00:41] [ warn] [input] tail.0 paused (mem buf overlimit)",
					"[2026/11/27 12:01:09] [ info] [input:tail:tail.0] inode=3148811 handle rotation(): /var/log/containers/ingress-nginx-controller-7d9f8c6b5d-4hx2q_ingress-nginx_controller-5b1e9c7d3a.log => /var/log/pods/x/controller/0.log.20261127-120109"),
				cmd(`kubectl get --raw "/api/v1/nodes/n1/proxy/configz" | jq '.kubeletconfig'`, `  "containerLogMaxSize": "10Mi",`)},
			[]evidence.Change{{Timestamp: end.Add(-72 * time.Hour), Service: "fluent-bit", Kind: "deploy", Description: "fluent-bit chart 0.47.7 -> 0.48.1"}},
			"fluent-bit", []string{"stops taking lines", "Mem_Buf_Limit) is 5MB, down from 50MB", "rotates ingress-nginx-controller's log files at 10Mi", "chart 0.47.7 -> 0.48.1"}},
		{"fluentd buffer overflow", "logs missing in elasticsearch",
			[]evidence.CommandOutput{cmd("kubectl -n logging logs fluentd-9hwzc",
				`2026-11-27 14:12:01 +0000 [warn]: #0 emit transaction failed: error_class=Fluent::Plugin::Buffer::BufferOverflowError error="buffer space has too many data" location="/fluentd/vendor/bundle/ruby/3.1.0/gems/fluentd-1.16.2/lib/fluent/plugin/buffer.rb:330:in 'write'" tag="kubernetes.var.log.containers.api-7d9f8b6c5-x2k4p_shop_api-0a1b2c3d4e5f.log"`)},
			nil, "fluentd", []string{"memory buffer limit", "api's"}},
		{"an application naming the words", "orders failing",
			[]evidence.CommandOutput{cmd("kubectl -n shop logs orders-7d9f8b6c5-x2k4p",
				`2026-11-27T14:05:12Z ERROR search index failed: mapper_parsing_exception failed to parse field [price] of type [long]`)},
			nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Window: w, Commands: tc.cmds, Scope: Scope{Message: tc.msg}}
			for _, c := range tc.changes {
				ev.Changes = append(ev.Changes, c)
			}
			fs := detectPipelineState(ev, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, tc.subject)
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := pipelineState.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) && !strings.Contains(strings.Join(f.Evidence, "\n"), s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
		})
	}
}
