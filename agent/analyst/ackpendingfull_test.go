package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestAckPendingFull reads a consumer's outstanding acks at its maximum
// (nats consumer info, as the current and older nats CLI print it), names
// the workload whose log names the consumer, and quotes its new lines of
// messages skipped without an ack.
func TestAckPendingFull(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(5 * time.Minute)
	info := func(outst, maxv string) evidence.CommandOutput {
		return evidence.CommandOutput{Exec: true, Run: "nats consumer info ORDERS fulfil", Lines: []string{
			"Information for Consumer ORDERS > fulfil created 2025-06-11T08:15:40Z",
			"         Max Ack Pending: " + maxv,
			"    Acknowledgment Floor: Consumer sequence: 9,381,207 Stream sequence: 11,931,876 Last Ack: 12m3s ago",
			"        Outstanding Acks: " + outst + " out of maximum " + maxv,
			"    Unprocessed Messages: 12,004",
		}}
	}
	logs := func(ls ...string) []LogSet {
		s := LogSet{Source: "fulfil-worker-7c9d-x2k4q", Subject: "fulfil-worker", Origin: SrcLogs, HasBaseline: true}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 6, Incident: 6, FirstSeen: at, FirstIncident: at, LastSeen: w.End})
		}
		return []LogSet{s}
	}
	for _, c := range []struct {
		name string
		cmd  evidence.CommandOutput
		logs []LogSet
		says []string
	}{
		{"zap json, skipped messages", info("1,000", "1,000"), logs(
			`{"level":"info","ts":1795687501.0,"msg":"worker starting","consumer":"fulfil"}`,
			`{"level":"warn","ts":1795687502.5,"msg":"unsupported order type, skipping","type":"preorder","seq":11931957}`),
			[]string{"fulfil-worker's consumer ORDERS > fulfil has reached its max ack pending: 1,000 outstanding acks out of a maximum of 1,000", "last ack was 12m3s ago", "skips without acking", "unsupported order type, skipping"}},
		{"older cli, pull refused", info("20000", "20000"), logs(
			`time="2026-05-01T11:05:00Z" level=warning msg="fetch failed" error="nats: Exceeded MaxAckPending"`),
			[]string{"fulfil-worker's consumer ORDERS > fulfil has reached its max ack pending: 20000 outstanding acks"}},
		{"window not full", info("12", "1,000"), logs(`{"msg":"skipping","consumer":"fulfil"}`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectAckPendingFull(&Gathered{Logs: c.logs, Commands: []evidence.CommandOutput{c.cmd}, Window: w}, nil)
			wantWritten(t, KindAckPendingFull, fs, c.says)
		})
	}
}
