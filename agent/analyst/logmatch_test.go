package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

func TestSearchPhrase(t *testing.T) {
	cases := []struct{ q, want string }{
		{"Is there a Peer down in the logs?", "Peer down"},
		{"is there any 'connection reset' in the gateway logs", "connection reset"},
		{"Do the logs show OutOfMemory errors?", "OutOfMemory errors"},
		{"Search the logs for \"deadlock detected\".", "deadlock detected"},
		{"Why is checkout slow?", ""},
	}
	for _, c := range cases {
		if got := searchPhrase(c.q); got != c.want {
			t.Errorf("searchPhrase(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

// TestLogSearch answers a log-search question from mined templates, and
// finds nothing when no line has every word of the phrase.
func TestLogSearch(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	sets := []LogSet{{Source: "bgp-speaker-0", Subject: "bgp-speaker", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		{Template: "<TS> BGP: %BGP-5-ADJCHANGE: neighbor <IP> Down Peer closed the session", Example: "2026-06-01T09:41:02Z BGP: %BGP-5-ADJCHANGE: neighbor 10.0.0.2 Down Peer closed the session",
			Incident: 4, FirstSeen: t0.Add(-19 * time.Minute), LastSeen: t0.Add(-2 * time.Minute)},
		{Template: "<TS> keepalive sent", Example: "2026-06-01T09:40:00Z keepalive sent", Incident: 60},
	}}}
	for _, c := range []struct {
		q    string
		want int
	}{{"is there a Peer down in the logs?", 1}, {"is there a Peer reset in the logs?", 0}} {
		fs := detectLogSearch(&Gathered{Logs: sets, Scope: Scope{Message: c.q}}, nil)
		if len(fs) != c.want {
			t.Errorf("%q: %d findings, want %d", c.q, len(fs), c.want)
		}
		if c.want == 1 && (fs[0].Subject != "bgp-speaker" || fs[0].fact("lines") != "4") {
			t.Errorf("%q: finding %+v", c.q, fs[0])
		}
	}
}
