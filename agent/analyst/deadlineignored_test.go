package analyst

import (
	"fmt"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A server whose request log shows its requests waiting in its queue far
// longer than a caller's deadline, while that caller's calls to it end in
// deadline exceeded (gRPC-Go's zap JSON, grpc-js's DEADLINE_EXCEEDED), is
// working on abandoned requests. A queue wait under the deadline, or no
// caller cut at its deadline, is not this.
func TestDetectDeadlineIgnored(t *testing.T) {
	ask := "search is timing out for everyone since 10:02, the gateway says deadline exceeded but the server logs say every request succeeds"
	server := func(name, format string, slowAt time.Time, queued float64) LogSet {
		var lines []evidence.LogLine
		for i := 0; i < 60; i++ {
			at := win.BaselineStart.Add(time.Duration(i) * 2 * time.Minute)
			q := 2.0 + float64(i%3)
			if !at.Before(slowAt) {
				q = queued + float64(i%7)*10
			}
			lines = append(lines, evidence.LogLine{Time: at, Text: fmt.Sprintf(format, at.Format("2006-01-02 15:04:05.000"), q, 30+i%9, 10+i%5)})
		}
		return LogSet{Source: name + "-84f6c9d7b-h2cxs", Subject: name, Origin: SrcLogs, Namespace: "search", Lines: lines}
	}
	javaFmt := "%s INFO  [rank-exec-27] c.a.ranking.server.RankService - Rank finished status=OK docs=101 queue_ms=%.0f handle_ms=%d es_took_ms=%d"
	pyFmt := "%s INFO scorer.server: request done method=Score status=OK queued_ms=%.0f handle_ms=%d db_ms=%d"
	goCaller := logSet("search-gateway", false,
		`{"level":"warn","ts":"2026-11-23T10:02:06.417Z","caller":"ranking/client.go:142","msg":"rank attempt failed, retrying","attempt":1,"timeout":"800ms","error":"rpc error: code = DeadlineExceeded desc = context deadline exceeded"}`,
		`{"level":"error","ts":"2026-11-23T10:02:07.257Z","caller":"api/search.go:97","msg":"search failed","status":504,"error":"ranking: rpc error: code = DeadlineExceeded desc = context deadline exceeded","attempts":2}`)
	nodeCaller := logSet("feed-api", false,
		`2026-11-23T10:02:06.417Z error: score call to scorer failed: Error: 4 DEADLINE_EXCEEDED: Deadline exceeded after 0.501s deadline=500ms`)
	cases := []struct {
		name     string
		logs     []LogSet
		subject  string
		caller   string
		deadline string
	}{
		{"Java executor queue behind a Go gateway's 800 ms deadline", []LogSet{server("ranking-service", javaFmt, win.Start.Add(10*time.Minute), 4200), goCaller}, "ranking-service", "search-gateway", "800 ms"},
		{"Python worker's wait behind grpc-js's deadline", []LogSet{server("scorer", pyFmt, win.Start.Add(10*time.Minute), 2500), nodeCaller}, "scorer", "feed-api", "500 ms"},
		{"queue wait under the deadline", []LogSet{server("ranking-service", javaFmt, win.Start.Add(10*time.Minute), 600), goCaller}, "", "", ""},
		{"no caller cut at its deadline", []LogSet{server("ranking-service", javaFmt, win.Start.Add(10*time.Minute), 4200)}, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Window: win, Scope: Scope{Message: ask}}
			f := onlyFinding(t, detectDeadlineIgnored(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("caller") != c.caller || f.fact("deadline") != c.deadline {
				t.Errorf("caller %q deadline %q", f.fact("caller"), f.fact("deadline"))
			}
			h := &Hypothesis{Kind: KindDeadlineIgnored, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "does not honour its callers' deadlines", "abandoned", c.deadline)
		})
	}
}
