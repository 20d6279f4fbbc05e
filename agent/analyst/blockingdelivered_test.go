package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The slow log an ElastiCache node delivers to CloudWatch Logs is kept
// line by line and read entry by entry: a KEYS call of seconds every
// fifteen minutes names the node, the client that sends it and the
// clients whose Redis calls time out; a slow log of quick commands, or a
// log group of application lines, is no blocking command.
func TestDeliveredSlowlog(t *testing.T) {
	start := time.Date(2026, 11, 25, 19, 20, 0, 0, time.UTC)
	w := Window{BaselineStart: start, Start: start.Add(time.Hour), End: start.Add(2 * time.Hour)}
	entry := func(at time.Time, us int, cmd, client string) evidence.LogLine {
		return evidence.LogLine{Time: at, Source: "/elasticache/sessions/slow-log", Text: fmt.Sprintf(`{"CacheClusterId": "sessions-prod-0001-001", "CacheNodeId": "0001", "Id": %d, "Timestamp": %d, "Duration (us)": %d, "Command": %q, "ClientAddress": "10.0.4.7:51330", "ClientName": %q}`, at.Unix()%100000, at.Unix(), us, cmd, client)}
	}
	var sweeps, quick []evidence.LogLine
	for at := start.Add(55 * time.Minute); at.Before(w.End); at = at.Add(15 * time.Minute) {
		sweeps = append(sweeps, entry(at, 2410332, "KEYS sess:* ", "session-sweeper"), entry(at.Add(3*time.Second), 11200, "DEL sess:7f1c... (101 more arguments)", "session-sweeper"))
		quick = append(quick, entry(at, 10422, "HGETALL cart:u:9912... ", ""))
	}
	victim := Finding{Kind: KindTimeout, Subject: "cart-api", Time: start.Add(70 * time.Minute), Summary: "cart-api logs timeouts",
		Facts: map[string]string{"line": `{"level":"warn","msg":"session lookup failed","err":"redis: connection pool timeout","took":"1.001s"}`}}
	other := Finding{Kind: KindTimeout, Subject: "billing-api", Time: start.Add(70 * time.Minute), Summary: "billing-api logs timeouts to payments-gw:443"}
	for _, c := range []struct {
		name    string
		lines   []evidence.LogLine
		subject string
		want    []string
	}{
		{"KEYS every 15 minutes from a CronJob", sweeps, "sessions-prod-0001-001", []string{"KEYS on sessions-prod-0001-001 blocks it", "2.41 s per call", "session-sweeper sends it", "the clients that time out: cart-api"}},
		{"quick commands only", quick, "", nil},
		{"application lines", []evidence.LogLine{{Time: start.Add(70 * time.Minute), Text: `{"level":"info","msg":"request","took":"2.4s","cmd":"KEYS"}`}}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cmds []evidence.CommandOutput
			if s, ok := slowlogStream("/elasticache/sessions/slow-log", c.lines); ok {
				cmds = append(cmds, s)
			}
			fs := detectBlockingCommand(&Gathered{Commands: cmds, Window: w}, []Finding{victim, other})
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("findings %+v, want one on %s", fs, c.subject)
			}
			h := &Hypothesis{Kind: KindBlockingCommand, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := describe(h, Scope{})
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("lacks %q: %s", s, d)
				}
			}
			if strings.Contains(d, "billing-api") {
				t.Errorf("a client of another server named: %s", d)
			}
			if fs[0].fact("why") == "" {
				t.Error("no why: the slow log names who sends it")
			}
		})
	}
}
