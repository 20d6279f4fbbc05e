package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestSearchTerms turns log-search questions into the terms searched:
// quoted phrases (whatever separates them), lists joined by or, and,
// commas and slashes (generic nouns shared), single words, with the time
// qualifiers that follow them cut off.
func TestSearchTerms(t *testing.T) {
	cases := []struct{ q, want string }{
		{"do the payments-api logs show any 'Peer down' or 'connection refused' since 10:00? captures are failing", "Peer down|connection refused"},
		{`Do the logs show "upstream timed out" and "no live upstreams" after the deploy?`, "upstream timed out|no live upstreams"},
		{"are there any “context deadline exceeded” errors in the gateway logs", "context deadline exceeded"},
		{"search the worker logs for `OutOfMemoryError`, please", "OutOfMemoryError"},
		{"does the api log show 'doesn't exist' today?", "doesn't exist"},
		{"Do the logs show OOMKilled or SIGTERM in the last hour?", "OOMKilled|SIGTERM"},
		{"are there any timeout, reset and refused errors in the checkout logs", "timeout errors|reset errors|refused errors"},
		{"do the logs show connection refused or broken pipe since 09:30?", "connection refused|broken pipe"},
		{"does the nginx log show 502/504 responses?", "502 responses|504 responses"},
		{"Do the logs show deadlocks?", "deadlocks"},
		{"grep the logs for panic", "panic"},
		{"Why is checkout slow?", ""},
	}
	for _, c := range cases {
		if got := strings.Join(searchTerms(c.q), "|"); got != c.want {
			t.Errorf("searchTerms(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

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
	}{{"is there a Peer down in the logs?", 1}, {"is there a Peer reset in the logs?", 0}, {"do the logs show 'Peer down' or 'connection refused'?", 1}} {
		fs := detectLogSearch(&Gathered{Logs: sets, Scope: Scope{Message: c.q}}, nil)
		if len(fs) != c.want {
			t.Errorf("%q: %d findings, want %d", c.q, len(fs), c.want)
		}
		if c.want == 1 && (fs[0].Subject != "bgp-speaker" || fs[0].fact("lines") != "4") {
			t.Errorf("%q: finding %+v", c.q, fs[0])
		}
		// What no line shows is said: the second phrase asked about.
		if want := strings.Contains(c.q, "refused"); c.want == 1 && (fs[0].fact("absent") == `"connection refused"`) != want {
			t.Errorf("%q: absent %q", c.q, fs[0].fact("absent"))
		}
	}
}

// TestLogSearchAlternatives checks a question that asks for one thing or
// another in the logs of a hyphenated service: each alternative is
// searched, and a proxy's line naming the service's upstream is about it.
func TestLogSearchAlternatives(t *testing.T) {
	if got := searchPhrase("Are there any 413 or timeout errors in the media-upload logs since lunchtime?"); got != "413 or timeout errors" {
		t.Fatalf("searchPhrase = %q", got)
	}
	if got := orAlternatives("413 or timeout errors"); strings.Join(got, "|") != "413 errors|timeout errors" {
		t.Errorf("orAlternatives = %q", got)
	}
	ingress := logSet("ingress-nginx", false,
		`2027-01-11T13:06:52.000Z 203.0.113.224 - - "POST /v1/uploads HTTP/2.0" 413 176 "-" "MediaApp/4.12 (iOS 18.2)" 1515 0.029 [media/media-upload-http] [] - - - - d63b583b8479cb9c`)
	app := logSet("media-upload", false, `2027-01-11T12:01:29.126Z info upload stored key=u/21da8978/206f5c66.mp4 bytes=49250094 duration_ms=33126`)
	sc := Scope{Message: "Are there any 413 or timeout errors in the media-upload logs since lunchtime?", Service: "media-upload", Window: win}
	fs := detectLogSearch(&Gathered{Logs: []LogSet{ingress, app}, Scope: sc, Window: win}, nil)
	if len(fs) != 1 || fs[0].Subject != "ingress-nginx" || !fs[0].relates("media-upload") || fs[0].fact("phrase") != "413 errors" {
		t.Errorf("findings %+v, want the ingress's 413 lines, about media-upload", fs)
	}
}
