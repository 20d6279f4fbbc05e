package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestMiningText: JSON lines reach the miner with their level and message
// as words; other lines are unchanged.
func TestMiningText(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"ts": "2026-04-22T09:25:01.441Z", "level": "warn", "service": "session-api", "msg": "token validation failed", "err": "Token used before issued", "iat": 1776849997, "now": 1776849901, "client_id": "web-3"}`,
			`2026-04-22T09:25:01.441Z warn token validation failed client_id=web-3 err=Token used before issued iat=1776849997 now=1776849901 service=session-api`},
		{`{"time":"2026-03-02T11:04:05Z","severity":"ERROR","message":"upstream connect error","upstream":{"host":"10.0.4.7","port":5432}}`,
			`2026-03-02T11:04:05Z ERROR upstream connect error upstream={"host":"10.0.4.7","port":5432}`},
		{`2026-04-22T09:28:15.653Z ip-10-0-2-57 chronyd[812]: Can't synchronise: no selectable sources (2 unreachable)`,
			`2026-04-22T09:28:15.653Z ip-10-0-2-57 chronyd[812]: Can't synchronise: no selectable sources (2 unreachable)`},
		// pino (Node.js) and bunyan: the level is a number, named here.
		{`{"level":30,"time":1792487112771,"pid":1,"hostname":"mailer-7hx2q","msg":"batch sent","sent":120,"failed":0}`,
			`1792487112771 INFO batch sent failed=0 hostname=mailer-7hx2q pid=1 sent=120`},
		{`{"name":"api","hostname":"h1","pid":9,"level":50,"err":{"message":"connect ECONNREFUSED 10.0.0.5:5432"},"msg":"query failed","time":"2026-05-02T10:33:02.000Z","v":0}`,
			`2026-05-02T10:33:02.000Z ERROR query failed err={"message":"connect ECONNREFUSED 10.0.0.5:5432"} hostname=h1 name=api pid=9 v=0`},
		{`{"a": 1, "b": "x"}`, `{"a": 1, "b": "x"}`}, // no time, level or message: kept
		{`{not json at all}`, `{not json at all}`},
	}
	for _, c := range cases {
		if got := MiningText(c.line); got != c.want {
			t.Errorf("MiningText(%q)\n got %q\nwant %q", c.line, got, c.want)
		}
	}
}

// TestMiningTextSeparatesWarnings: a JSON service's warning lines and its
// access lines have the same number of fields; mined as they are, the
// miner masks every quoted value and folds the warnings into the access
// template. Flattened, the warning is a template of its own.
func TestMiningTextSeparatesWarnings(t *testing.T) {
	t0 := time.Date(2026, 4, 22, 9, 0, 0, 0, time.UTC)
	access := `{"ts": "2026-04-22T09:15:02.570Z", "level": "info", "service": "session-api", "msg": "request completed", "method": "GET", "path": "/v1/session", "status": 200, "duration_ms": 2.66}`
	warn := `{"ts": "2026-04-22T09:25:01.441Z", "level": "warn", "service": "session-api", "msg": "token validation failed", "err": "Token used before issued", "iat": 1776849997, "now": 1776849901, "client_id": "web-3"}`
	for _, flatten := range []bool{false, true} {
		m := analysis.NewMiner(t0.Add(-time.Hour), t0, t0.Add(time.Hour))
		for i := range 60 {
			at := t0.Add(time.Duration(i) * time.Minute)
			for _, l := range []string{access, warn} {
				if flatten {
					l = MiningText(l)
				}
				m.Add(at, "session-api-5c5hnwqhb2-fwssf", l)
			}
		}
		found := false
		for _, tp := range m.Templates() {
			if strings.Contains(tp.Example, "Token used before issued") && tp.Incident == 60 {
				found = true
			}
		}
		if found != flatten {
			t.Errorf("flatten=%v: warning template of its own = %v", flatten, found)
		}
	}
}
