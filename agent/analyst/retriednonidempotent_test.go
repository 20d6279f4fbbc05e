package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestRetriedNonIdempotent reads a retry policy with a per-try timeout (an
// Istio VirtualService as kubectl prints it, Envoy's route config as JSON,
// a change's text) and non-idempotent requests cut off by the downstream
// at that timeout in the server's access log (Envoy's default text format
// and its JSON form), with the server's line of work finished after the
// caller left. Requests cut at other times, or GETs, are not this.
func TestRetriedNonIdempotent(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	logs := func(ls ...string) []LogSet {
		s := LogSet{Source: "bookings-api-6f8d-cvdjk", Subject: "bookings-api", Origin: SrcLogs, HasBaseline: true}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 4, Incident: 4, FirstSeen: at, FirstIncident: at})
		}
		return []LogSet{s}
	}
	envoyText := func(method, code, flags, took string) string {
		return `[2026-05-01T11:10:03.904Z] "` + method + ` /v2/bookings HTTP/1.1" ` + code + ` ` + flags + ` downstream_remote_disconnect - "-" 412 0 ` + took + ` - "-" "okhttp/4.12.0" "6895e294-b48c-4896-a705-424a66fadbcc" "bookings-api.travel.svc.cluster.local:8080" "10.42.6.31:8080" inbound|8080|| 127.0.0.6:40604 10.42.6.31:8080 10.42.4.212:0 outbound_.8080_._.bookings-api.travel.svc.cluster.local default`
	}
	envoyJSON := `{"start_time":"2026-05-01T11:10:03.904Z","method":"POST","path":"/v2/bookings?src=app","protocol":"HTTP/1.1","response_code":0,"response_flags":"DC","bytes_received":412,"bytes_sent":0,"duration":1503,"upstream_host":"10.42.6.31:8080"}`
	finished := `{"time":"2026-05-01T11:10:06.27Z","level":"WARN","msg":"response not written","request_id":"6895e294","err":"context canceled"}`
	vs := evidence.CommandOutput{Run: "kubectl get virtualservice bookings-api -n travel -o yaml", Lines: []string{
		"apiVersion: networking.istio.io/v1", "kind: VirtualService", "metadata:", "  name: bookings-api", "  namespace: travel", "spec:", "  http:", "  - retries:",
		"      attempts: 3", "      perTryTimeout: 2s", "      retryOn: 5xx,reset,connect-failure", "    timeout: 10s"}}
	route := evidence.CommandOutput{Run: "istioctl proxy-config route deploy/checkout-web -o json", Lines: []string{
		`"retryPolicy": {`, `    "retryOn": "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",`, `    "numRetries": 2,`, `    "perTryTimeout": "1.500s",`, `}`}}
	change := evidence.Change{Timestamp: w.Start.Add(-20 * time.Hour), Service: "mesh-routes", Kind: "config", Description: "tier-1 defaults: retries (attempts 3, perTryTimeout 2s, retryOn 5xx) on VirtualServices labelled tier=tier-1"}
	for _, c := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		logs    []LogSet
		says    []string
	}{
		{"virtualservice, envoy text log, its change", []evidence.CommandOutput{vs}, []evidence.Change{change}, logs(envoyText("POST", "0", "DC", "2001"), finished),
			[]string{"retry its POST /v2/bookings requests (VirtualService travel/bookings-api: retries attempts 3, perTryTimeout 2s, retryOn 5xx,reset,connect-failure)",
				"finishes the cut attempts after the caller is gone", "the retries came with the config change of mesh-routes"}},
		{"envoy route json, json access log", []evidence.CommandOutput{route}, nil, logs(envoyJSON),
			[]string{"retry its POST /v2/bookings requests", "perTryTimeout 1.500s, retryOn connect-failure,refused-stream"}},
		{"policy only in a change", nil, []evidence.Change{change}, logs(envoyText("PATCH", "0", "DC", "2040")),
			[]string{"retry its PATCH /v2/bookings requests (the config change of mesh-routes: retries attempts 3, perTryTimeout 2s"}},
		{"cut at another time", []evidence.CommandOutput{vs}, nil, logs(envoyText("POST", "0", "DC", "30001")), nil},
		{"a GET cut at the timeout", []evidence.CommandOutput{vs}, nil, logs(envoyText("GET", "0", "DC", "2001")), nil},
		{"no retry policy", nil, nil, logs(envoyText("POST", "0", "DC", "2001")), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectRetriedNonIdempotent(&Gathered{Logs: c.logs, Commands: c.cmds, Earlier: c.changes, Window: w}, nil)
			wantWritten(t, KindRetriedNonIdempotent, fs, c.says)
		})
	}
}
