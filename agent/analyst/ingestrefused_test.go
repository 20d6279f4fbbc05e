package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A store's refusals as shippers log them: Loki's per-stream rate limit
// through its distributor's gRPC log, Promtail's "timestamp too new" with
// the app's time zone and the timestamp stage, Mimir's per-user series
// limit through Prometheus' remote_write with a TSDB status naming the
// label, Loki's tenant ingestion rate limit through Vector; a line that
// only names a limit is not a refusal.
func TestIngestRefused(t *testing.T) {
	end := time.Date(2026, 11, 27, 15, 20, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-6 * time.Hour), Start: end.Add(-2 * time.Hour), End: end}
	cmd := func(run, pod string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Pod: pod, Lines: lines}
	}
	for _, tc := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"loki per-stream rate limit, counted", []evidence.CommandOutput{
			cmd("kubectl -n logging logs loki-write-1 --since=90m", "loki-write-1",
				`level=warn ts=2026-11-27T14:00:41.228104Z caller=grpc_logging.go:78 method=/logproto.Pusher/Push msg=gRPC err="rpc error: code = Code(429) desc = Per stream rate limit exceeded (limit: 3MB/sec) while attempting to ingest for stream '{app=\"ledger-sync\", namespace=\"finance\"}' totaling 1048210B"`),
			cmd(`curl -s prometheus/api/v1/query --data-urlencode 'query=sum by (tenant, reason) (increase(loki_discarded_samples_total[1h]))'`, "",
				`["fake","per_stream_rate_limit","18240"]`, `["fake","line_too_long","6"]`)},
			"ledger-sync", []string{"per_stream_rate_limit", "18240 log lines were discarded", "ledger-sync's", "3MB/sec"}},
		{"promtail timestamp too new", []evidence.CommandOutput{
			cmd("kubectl -n logging logs promtail-2xv9c --since=80m", "promtail-2xv9c",
				`level=error ts=2026-11-27T14:01:41.733208776Z caller=client.go:430 component=client msg="final error sending batch" status=400 error="server returned HTTP status 400 Bad Request (400): entry for stream '{app=\"payments-api\", namespace=\"payments\"}' has timestamp too new: 2026-11-27 15:01:40.914 +0000 UTC"`),
			cmd("kubectl -n payments exec payments-api-7d9c6b5f48-x2kqp -- sh -c 'echo TZ=$TZ'", "payments-api-7d9c6b5f48-x2kqp", "TZ=Europe/Berlin"),
			cmd("kubectl -n logging get configmap promtail -o yaml", "", "            - timestamp:", "                source: time", `                format: "2006-01-02 15:04:05.000"`)},
			"payments-api", []string{"too_far_in_future", "TZ=Europe/Berlin", "read as UTC", "timestamp stage", "promtail"}},
		{"mimir per-user series limit", []evidence.CommandOutput{
			cmd("kubectl -n monitoring logs prometheus-k8s-0 -c prometheus", "prometheus-k8s-0",
				`ts=2026-11-27T14:41:22.118Z caller=dedupe.go:112 component=remote level=error remote_name=mimir-prod msg="non-recoverable error" err="server returned HTTP status 400 Bad Request: send data to ingesters: user=prod: per-user series limit of 1500000 exceeded (err-mimir-max-series-per-user). This is for series {__name__=\"http_server_requests_seconds_bucket\", app=\"search-api\", path=\"/api/search/products/8812731\"}"`,
				`ts=2026-11-27T14:41:22.974Z caller=dedupe.go:112 component=remote level=error remote_name=mimir-prod msg="non-recoverable error" err="server returned HTTP status 400 Bad Request: per-user series limit of 1500000 exceeded (err-mimir-max-series-per-user). This is for series {__name__=\"node_network_receive_bytes_total\", job=\"node-exporter\"}"`),
			cmd("kubectl -n monitoring exec prometheus-k8s-0 -- wget -qO- http://localhost:9090/api/v1/status/tsdb", "prometheus-k8s-0",
				`[{"name":"path","value":89418},{"name":"le","value":214},{"name":"pod","value":781}]`)},
			"search-api", []string{"per_user_series_limit", "series limit (1500000)", "label path has 89418 values", "cardinality"}},
		{"vector, loki tenant ingestion rate", []evidence.CommandOutput{
			cmd("kubectl -n logging logs vector-7xk2p", "vector-7xk2p",
				`2026-11-27T14:10:02.118Z ERROR sink{component_kind="sink" component_id=loki component_type=loki}: vector::sinks::util::retries: Not retriable; dropping the request. reason="Http status: 429 Too Many Requests: Ingestion rate limit exceeded for user fake (limit: 4194304 bytes/sec) while attempting to ingest '2210' lines totaling '1048201' bytes, reduce log volume or contact your Loki administrator to see if the limit can be increased"`)},
			"loki", []string{"rate_limited", "ingestion rate limit", "4194304 bytes/sec"}},
		{"a limit named, nothing refused", []evidence.CommandOutput{
			cmd("kubectl -n logging get cm loki -o yaml", "", "  per_stream_rate_limit: 3MB", "  ingestion_rate_mb: 4")},
			"", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectIngestRefused(&Gathered{Window: w, Commands: tc.cmds}, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, tc.subject)
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := ingestRefused.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
		})
	}
}
