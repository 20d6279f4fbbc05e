package rediscli

import (
	"strings"
	"testing"
)

// The fuzz targets feed hostile output to each reader of what redis-cli
// prints: each must return (no panic); INFO commandstats gives no more
// commands than lines.
// Seeds are the forms the tests read: SLOWLOG GET as printed to a
// terminal (padded past nine entries, and before Redis 4.0), raw and
// --json; INFO commandstats; an entry ElastiCache delivers to a log.

func FuzzParseSlowlog(f *testing.F) {
	for _, s := range []string{
		"1) 1) (integer) 88412\n   2) (integer) 1795364402\n   3) (integer) 1912204\n   4) 1) \"KEYS\"\n      2) \"session:*\"\n   5) \"10.60.7.41:51822\"\n   6) \"session-cleanup\"\n2) 1) (integer) 88409\n   2) (integer) 1795363501\n   3) (integer) 12840\n   4) 1) \"HGETALL\"\n      2) \"notify:prefs:8812231\"\n   5) \"10.60.2.19:60114\"\n   6) \"\"",
		" 9) 1) (integer) 7\n    2) (integer) 1700000000\n    3) (integer) 250000\n    4) 1) \"SMEMBERS\"\n       2) \"online-users\"\n    5) \"[::1]:50112\"\n    6) \"presence-sweeper\"\n10) 1) (integer) 6\n    2) (integer) 1699999990\n    3) (integer) 12000\n    4) 1) \"GET\"\n       2) \"a\"\n    5) \"127.0.0.1:6000\"\n    6) \"\"",
		"1) 1) (integer) 14\n   2) (integer) 1309448221\n   3) (integer) 15\n   4) 1) \"ping\"\n2) 1) (integer) 13\n   2) (integer) 1309448128\n   3) (integer) 30\n   4) 1) \"slowlog\"\n      2) \"get\"\n      3) \"100\"",
		"88412\n1795364402\n1912204\nKEYS\nsession:*\n10.60.7.41:51822\nsession-cleanup\n88409\n1795363501\n12840\nHGETALL\nnotify:prefs:8812231\n10.60.2.19:60114\n\n",
		`[[88412,1795364402,1912204,["KEYS","session:*"],"10.60.7.41:51822","session-cleanup"],[88409,1795363501,12840,["HGETALL","notify:prefs:8812231"],"10.60.2.19:60114",""]]`,
		"(empty array)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		for _, e := range ParseSlowlog(strings.Split(out, "\n")) {
			_ = e.Command()
		}
	})
}

func FuzzParseCommandStats(f *testing.F) {
	f.Add("# Commandstats\ncmdstat_keys:calls=88,usec=164933120,usec_per_call=1874240.00,rejected_calls=0,failed_calls=0\ncmdstat_get:calls=912338841,usec=8816210934,usec_per_call=9.66\ncmdstat_client|setname:calls=3,usec=4,usec_per_call=1.33\ngarbage")
	f.Add("cmdstat_set:calls=1,usec=,usec_per_call=1e400")
	f.Fuzz(func(t *testing.T, out string) {
		lines := strings.Split(out, "\n")
		if got := ParseCommandStats(lines); len(got) > len(lines) {
			t.Fatalf("%d commands from %d lines", len(got), len(lines))
		}
	})
}

func FuzzParseDeliveredEntry(f *testing.F) {
	for _, s := range []string{
		`{"CacheClusterId": "cart-sessions-prod-0001-001", "CacheNodeId": "0001", "Id": 88210, "Timestamp": 1795637703, "Duration (us)": 2410332, "Command": "KEYS sess:* ", "ClientAddress": "10.12.41.207:51330", "ClientName": "session-sweeper"}`,
		`{"CacheClusterId": "cache-0002-001", "CacheNodeId": "0001", "Id": 7, "Timestamp": 1795637706, "Duration (us)": 11200, "Command": "DEL sess:7f1c... (101 more arguments)", "ClientAddress": "10.0.0.7:5133", "ClientName": ""}`,
		`2026-11-25T20:15:03Z {"CacheClusterId": "c-0001-001", "Timestamp": 1795637703, "Duration (us)": 1500000, "Command": "HGETALL big:hash", "ClientName": "report"}`,
		`{"level":"warn","msg":"session lookup failed","took":"1.000s"}`,
		`KEYS took 2s`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if e, _, ok := ParseDeliveredEntry(line); ok {
			_ = e.Command()
		}
	})
}
