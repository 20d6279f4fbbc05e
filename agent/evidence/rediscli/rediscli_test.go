package rediscli

import (
	"strings"
	"testing"
	"time"
)

func TestParseSlowlog(t *testing.T) {
	tty := `1) 1) (integer) 88412
   2) (integer) 1795364402
   3) (integer) 1912204
   4) 1) "KEYS"
      2) "session:*"
   5) "10.60.7.41:51822"
   6) "session-cleanup"
2) 1) (integer) 88409
   2) (integer) 1795363501
   3) (integer) 12840
   4) 1) "HGETALL"
      2) "notify:prefs:8812231"
   5) "10.60.2.19:60114"
   6) ""`
	// redis-cli pads the numbers of ten entries and more.
	padded := ` 9) 1) (integer) 7
    2) (integer) 1700000000
    3) (integer) 250000
    4) 1) "SMEMBERS"
       2) "online-users"
    5) "[::1]:50112"
    6) "presence-sweeper"
10) 1) (integer) 6
    2) (integer) 1699999990
    3) (integer) 12000
    4) 1) "GET"
       2) "a"
    5) "127.0.0.1:6000"
    6) ""`
	// Redis before 4.0 logs neither the client's address nor its name.
	old := `1) 1) (integer) 14
   2) (integer) 1309448221
   3) (integer) 15
   4) 1) "ping"
2) 1) (integer) 13
   2) (integer) 1309448128
   3) (integer) 30
   4) 1) "slowlog"
      2) "get"
      3) "100"`
	// Not a terminal (kubectl exec without -t): one value a line.
	raw := "88412\n1795364402\n1912204\nKEYS\nsession:*\n10.60.7.41:51822\nsession-cleanup\n88409\n1795363501\n12840\nHGETALL\nnotify:prefs:8812231\n10.60.2.19:60114\n\n"
	js := `[[88412,1795364402,1912204,["KEYS","session:*"],"10.60.7.41:51822","session-cleanup"],[88409,1795363501,12840,["HGETALL","notify:prefs:8812231"],"10.60.2.19:60114",""]]`
	type want struct {
		cmd, arg, client, addr string
		id                     int64
		dur                    time.Duration
	}
	keys := want{"KEYS", "session:*", "session-cleanup", "10.60.7.41:51822", 88412, 1912204 * time.Microsecond}
	hget := want{"HGETALL", "notify:prefs:8812231", "", "10.60.2.19:60114", 88409, 12840 * time.Microsecond}
	cases := []struct {
		name string
		in   string
		want []want
	}{
		{"terminal", tty, []want{keys, hget}},
		{"padded", padded, []want{{"SMEMBERS", "online-users", "presence-sweeper", "[::1]:50112", 7, 250 * time.Millisecond}, {"GET", "a", "", "127.0.0.1:6000", 6, 12 * time.Millisecond}}},
		{"before 4.0", old, []want{{"PING", "", "", "", 14, 15 * time.Microsecond}, {"SLOWLOG", "get", "", "", 13, 30 * time.Microsecond}}},
		{"raw", raw, []want{keys, hget}},
		{"json", js, []want{keys, hget}},
		{"empty", "(empty array)", nil},
		{"not a slowlog", "Error: Connection refused", nil},
	}
	for _, c := range cases {
		got := ParseSlowlog(strings.Split(c.in, "\n"))
		if len(got) != len(c.want) {
			t.Errorf("%s: %d entries %+v, want %d", c.name, len(got), got, len(c.want))
			continue
		}
		for i, w := range c.want {
			g := got[i]
			arg := ""
			if len(g.Args) > 1 {
				arg = g.Args[1]
			}
			if g.Command() != w.cmd || arg != w.arg || g.Client != w.client || g.Addr != w.addr || g.ID != w.id || g.Duration != w.dur {
				t.Errorf("%s: entry %d = %+v, want %+v", c.name, i, g, w)
			}
		}
	}
	if got := ParseSlowlog(strings.Split(tty, "\n")); !got[0].At.Equal(time.Unix(1795364402, 0)) {
		t.Errorf("time %s", got[0].At)
	}
}

func TestParseCommandStats(t *testing.T) {
	in := []string{
		"# Commandstats",
		"cmdstat_keys:calls=88,usec=164933120,usec_per_call=1874240.00,rejected_calls=0,failed_calls=0",
		"cmdstat_get:calls=912338841,usec=8816210934,usec_per_call=9.66",
		"cmdstat_client|setname:calls=3,usec=4,usec_per_call=1.33",
		"garbage",
	}
	got := ParseCommandStats(in)
	if k := got["KEYS"]; k.Calls != 88 || k.PerCall != 1874240*time.Microsecond {
		t.Errorf("KEYS %+v", k)
	}
	if g := got["GET"]; g.Calls != 912338841 || g.PerCall < 9*time.Microsecond || g.PerCall > 10*time.Microsecond {
		t.Errorf("GET %+v", g)
	}
	if _, ok := got["CLIENT|SETNAME"]; !ok || len(got) != 3 {
		t.Errorf("stats %v", got)
	}
}
