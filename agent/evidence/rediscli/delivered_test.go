package rediscli

import (
	"testing"
	"time"
)

func TestParseDeliveredEntry(t *testing.T) {
	for _, c := range []struct {
		name, line   string
		ok           bool
		cmd, node    string
		client, addr string
		dur          time.Duration
		at           int64
	}{
		{"ElastiCache JSON, as the log event's message",
			`{"CacheClusterId": "cart-sessions-prod-0001-001", "CacheNodeId": "0001", "Id": 88210, "Timestamp": 1795637703, "Duration (us)": 2410332, "Command": "KEYS sess:* ", "ClientAddress": "10.12.41.207:51330", "ClientName": "session-sweeper"}`,
			true, "KEYS", "cart-sessions-prod-0001-001", "session-sweeper", "10.12.41.207:51330", 2410332 * time.Microsecond, 1795637703},
		{"arguments cut by the service, no client name",
			`{"CacheClusterId": "cache-0002-001", "CacheNodeId": "0001", "Id": 7, "Timestamp": 1795637706, "Duration (us)": 11200, "Command": "DEL sess:7f1c... (101 more arguments)", "ClientAddress": "10.0.0.7:5133", "ClientName": ""}`,
			true, "DEL", "cache-0002-001", "", "10.0.0.7:5133", 11200 * time.Microsecond, 1795637706},
		{"prefixed by a timestamp (a stream's text export)",
			`2026-11-25T20:15:03Z {"CacheClusterId": "c-0001-001", "Timestamp": 1795637703, "Duration (us)": 1500000, "Command": "HGETALL big:hash", "ClientName": "report"}`,
			true, "HGETALL", "c-0001-001", "report", "", 1500 * time.Millisecond, 1795637703},
		{"an application's JSON log is no entry", `{"level":"warn","msg":"session lookup failed","took":"1.000s"}`, false, "", "", "", "", 0, 0},
		{"plain text", `KEYS took 2s`, false, "", "", "", "", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, node, ok := ParseDeliveredEntry(c.line)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if e.Command() != c.cmd || node != c.node || e.Client != c.client || e.Addr != c.addr || e.Duration != c.dur || e.At.Unix() != c.at {
				t.Errorf("got %+v node %q", e, node)
			}
		})
	}
}
