package evidence

import (
	"testing"
	"time"
)

// lineTimeRef is the time of reading lineTimeCases (klog and syslog take
// their year from it).
var lineTimeRef = time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)

// lineTimeCase is a log line and the time it carries (zero: none).
type lineTimeCase struct {
	name, line string
	want       time.Time
}

// lineTimeCases are every form of log line the pod logs and the log
// files are read in, and lines that carry no time.
func lineTimeCases() []lineTimeCase {
	at := func(h, m, s, ns int) time.Time { return time.Date(2026, 11, 24, h, m, s, ns, time.UTC) }
	return []lineTimeCase{
		// RFC 3339 and its variants.
		{"RFC 3339 UTC", "2026-11-24T14:04:17Z INFO x", at(14, 4, 17, 0)},
		{"RFC 3339 nanoseconds", "2026-11-24T14:04:17.123456789Z INFO x", at(14, 4, 17, 123456789)},
		{"RFC 3339 offset", "2026-11-24T15:04:17.5+01:00 x", at(14, 4, 17, 5e8)},
		{"space, no zone", "2026-11-24 14:04:17 INFO x", at(14, 4, 17, 0)},
		{"space, fraction, no zone", "2026-11-24 14:04:17.250 x", at(14, 4, 17, 25e7)},
		{"brackets (Envoy)", "[2026-11-24 14:04:17.512][1][warning] x", at(14, 4, 17, 512e6)},
		{"brackets RFC 3339", `[2026-11-24T14:04:17.5Z] "POST /v1/stock HTTP/1.1" 200`, at(14, 4, 17, 5e8)},
		{"day 29 and on, read by the time package", "2024-02-29T10:42:00Z leap day", time.Date(2024, 2, 29, 10, 42, 0, 0, time.UTC)},
		{"Spring Boot", "2026-11-24 14:04:17.377  INFO 1 --- [           main] liquibase.lockservice : Waiting for changelog lock....", at(14, 4, 17, 377e6)},
		// Java's log4j / logback and Python's logging put a comma before
		// the milliseconds.
		{"log4j", "2026-11-24 14:04:17,123 ERROR [main] c.e.App - failed", at(14, 4, 17, 123e6)},
		{"Python logging", "2026-11-24 14:04:17,250 WARNING billing.invoices: retrying", at(14, 4, 17, 25e7)},
		// Postgres prints the zone's name after a space.
		{"Postgres", "2026-11-24 14:04:17.123 UTC [4711] LOG:  checkpoint starting: time", at(14, 4, 17, 123e6)},
		{"Postgres RDS prefix", "2026-11-24 14:04:17 UTC::@:[3121]:LOG:  redo done", at(14, 4, 17, 0)},
		// klog and syslog take their year from ref.
		{"klog", "I1124 14:04:17.123456       1 main.go:42] x", at(14, 4, 17, 123456e3)},
		{"klog, last year", "E1231 23:59:59.000000 1 x.go:1] x", time.Date(2025, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"syslog", "Nov 24 14:04:17 ip-10-0-1-7 kernel: Out of memory: Killed process 4711 (java)", at(14, 4, 17, 0)},
		{"syslog, day padded", "Nov  4 14:04:17 host sshd[1]: x", time.Date(2026, 11, 4, 14, 4, 17, 0, time.UTC)},
		// Redis and Sentinel: pid, role, then day, month, year.
		{"Redis master", "1:M 24 Nov 2026 14:04:17.720 * Background saving started by pid 7912", at(14, 4, 17, 720e6)},
		{"Redis Sentinel", "1:X 24 Nov 2026 14:04:17.000 # +switch-master mymaster 10.50.1.17 6379 10.50.2.9 6379", at(14, 4, 17, 0)},
		{"Redis pid only, no role", "4711 24 Nov 2026 14:04:17.000 x", time.Time{}},
		// log4j layouts that lead with the level and thread (Cassandra).
		{"Cassandra system.log", "ERROR [ReadStage-1] 2026-11-24 14:04:17,187 ReadCommand.java:571 - Scanned over 100001 tombstones during query", at(14, 4, 17, 187e6)},
		{"Cassandra, padded level", "INFO  [CompactionExecutor:412] 2026-11-24 14:04:17,551 CompactionTask.java:253 - Compacted", at(14, 4, 17, 551e6)},
		{"level and thread, no time", "ERROR [main] failed to start", time.Time{}},
		// ClickHouse's server log, dots in the date.
		{"ClickHouse server", "2026.11.24 14:04:17.118220 [ 812 ] {d3f1} <Error> executeQuery: Code: 252. DB::Exception: Too many parts", at(14, 4, 17, 118220e3)},
		{"ClickHouse, no fraction", "2026.11.24 14:04:17 [ 1 ] {} <Information> Application: Ready", at(14, 4, 17, 0)},
		// logfmt with the time first.
		{"logfmt time=", `time="2026-11-24T14:04:17Z" level=error msg="x"`, at(14, 4, 17, 0)},
		{"logfmt ts=", "ts=2026-11-24T14:04:17.5Z caller=x.go:1 level=warn", at(14, 4, 17, 5e8)},
		// JSON: strings and numbers since the epoch.
		// A time in a JSON string is read to the second (the closing
		// quote ends it).
		{"JSON ts string (zap)", `{"level":"error","ts":"2026-11-24T14:04:17.100Z","caller":"acquirer/client.go:97","msg":"authorize failed"}`, at(14, 4, 17, 0)},
		{"JSON time string, late field", `{"level":"info","msg":"started","time":"2026-11-24T14:04:17Z"}`, at(14, 4, 17, 0)},
		{"JSON timestamp string", `{"timestamp": "2026-11-24T14:04:17Z", "msg": "x"}`, at(14, 4, 17, 0)},
		{"JSON @timestamp", `{"@timestamp":"2026-11-24T14:04:17.000Z","log.level":"warn"}`, at(14, 4, 17, 0)},
		{"JSON epoch seconds (zap)", `{"level":"info","ts":1795529057.2591,"caller":"x.go:1","msg":"m"}`, at(14, 4, 17, 259100e3)},
		{"JSON epoch seconds, spaced", `{"ts": 1795529057, "msg": "m"}`, at(14, 4, 17, 0)},
		{"JSON epoch milliseconds (pino)", `{"level":30,"time":1795529057100,"pid":1,"msg":"request completed"}`, at(14, 4, 17, 1e8)},
		{"MongoDB structured log ($date)", `{"t":{"$date":"2026-11-24T14:04:17.100+00:00"},"s":"I","c":"COMMAND","id":51803,"msg":"Slow query"}`, at(14, 4, 17, 0)},
		{"JSON epoch microseconds", `{"timestamp":1795529057100000,"msg":"us"}`, at(14, 4, 17, 1e8)},
		{"JSON epoch nanoseconds", `{"time":1795529057100000000,"msg":"ns"}`, at(14, 4, 17, 1e8)},
		// Web servers.
		{"nginx error log", "2026/11/24 14:04:17 [crit] 31#31: *482110 connect() to 10.42.2.19:8080 failed (99: Cannot assign requested address)", at(14, 4, 17, 0)},
		{"Go log package", "2026/11/24 14:04:17 error: Dirty database version 16. Fix and force version.", at(14, 4, 17, 0)},
		{"CLF (nginx access)", `10.20.0.14 - - [24/Nov/2026:14:04:17 +0000] "GET /v1/quotes?zip=10000 HTTP/1.1" 200 812 "-" "okhttp/4.12.0" 0.018 0.016`, at(14, 4, 17, 0)},
		{"CLF with offset (Apache)", `203.0.113.9 - frank [24/Nov/2026:15:04:17 +0100] "POST /login HTTP/1.0" 302 0`, at(14, 4, 17, 0)},
		{"CLF ingress-nginx", `192.168.3.4 - - [24/Nov/2026:14:04:17 +0000] "GET /api/cart HTTP/2.0" 502 150 "-" "Mozilla/5.0" 412 0.002 [shop-cart-8080] [] 10.42.1.7:8080 0 0.002 502 4f3c`, at(14, 4, 17, 0)},
		// CDN and load balancer access logs.
		{"Cloudflare Logpush rfc3339", `{"EdgeStartTimestamp":"2026-11-24T14:04:17Z","RayID":"8e8f2a1c9b7d4e31","EdgeResponseStatus":526,"OriginResponseStatus":0}`, at(14, 4, 17, 0)},
		{"Cloudflare Logpush unixnano", `{"ClientIP":"203.0.113.7","EdgeStartTimestamp":1795529057100000000,"EdgeResponseStatus":200}`, at(14, 4, 17, 1e8)},
		{"Cloudflare firewall event", `{"Action":"block","ClientIP":"203.0.113.7","Datetime":"2026-11-24T14:04:17Z","RuleID":"c2f1"}`, at(14, 4, 17, 0)},
		{"CloudFront standard log (W3C)", "2026-11-24\t14:04:17\tSYD62-P1\t2390\t203.0.113.7\tGET\td111111abcdef8.cloudfront.net\t/index.html\t200", at(14, 4, 17, 0)},
		{"ALB access log", `https 2026-11-24T14:04:17.372378Z app/reports-prod-alb/5f1e2d3c4b5a6978 198.51.100.140:58444 10.30.5.92:8080 0.000 1.372 0.000 200 200 1100 46832 "GET https://r.example.com:443/ HTTP/1.1"`, at(14, 4, 17, 372378e3)},
		{"ALB h2 access log", `h2 2026-11-24T14:04:17.000000Z app/web/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET https://www.example.com:443/ HTTP/2.0"`, at(14, 4, 17, 0)},
		{"NLB TLS access log", `tls 2.0 2026-11-24T14:04:17 net/my-network-loadbalancer/c6e77e28c25b2234 g3d4b5e8bb8464cd 72.21.218.154:51341 172.100.100.185:443 5 2`, at(14, 4, 17, 0)},
		// Lines that carry no time.
		{"http word, no time", "http request failed for the third time today", time.Time{}},
		{"stack frame", "\tat com.example.X(X.java:1)", time.Time{}},
		{"exception", "java.lang.OutOfMemoryError: Java heap space", time.Time{}},
		{"short", "short", time.Time{}},
		{"bad date", "2026-99-14T10:02:03Z bad date", time.Time{}},
		{"bad nginx date", "2026/13/24 14:04:17 not a date", time.Time{}},
		{"brackets without a time", `10.20.0.14 - - [not a time at all in these brackets] "GET / HTTP/1.1" 200`, time.Time{}},
		{"CLF cut at its end", `1.2.3.4 - - [24/Nov/2026:14:04:17 +0000`, time.Time{}},
		{"JSON without a time", `{"level":"info","msg":"no time field in this line at all"}`, time.Time{}},
		{"JSON small number", `{"time":12,"msg":"not an epoch"}`, time.Time{}},
		{"JSON number cut", `{"time":1795529057100x,"msg":"m"}`, time.Time{}},
		{"words", "Info: 1234 5678 more words", time.Time{}},
		// Redis prints "1:M 24 Nov 2026 14:04:17.123 *" (read above).
		{"Redis", "1:M 24 Nov 2026 14:04:17.123 * Ready to accept connections tcp", at(14, 4, 17, 123e6)},
		{"Ruby Logger", "E, [2026-11-24T14:04:17.123456 #1] ERROR -- : LabelJob failed (the server responded with status 410)", at(14, 4, 17, 123456e3)},
		{"Ruby Logger with a program name", "I, [2026-11-24T14:04:17.500000 #12]  INFO -- sidekiq: done", at(14, 4, 17, 500e6)},
		{"a level and a comma with no bracket", "E, 2026 something happened here", time.Time{}},
	}
}

// TestLineTime reads the time of every form of log line the pod logs and
// the log files are read in, from either a string or bytes, and the lines
// that carry none.
func TestLineTime(t *testing.T) {
	ref := lineTimeRef
	for _, c := range lineTimeCases() {
		got := ParseLogTime(c.line, ref)
		if !got.Equal(c.want) || !got.IsZero() && got.Location() != time.UTC {
			t.Errorf("%s: ParseLogTime(%q) = %v, want %v", c.name, c.line, got, c.want)
		}
		b, ok := LineTime([]byte(c.line), ref)
		if ok == c.want.IsZero() || !b.Equal(c.want) {
			t.Errorf("%s: LineTime(%q) = %v, %v; want %v", c.name, c.line, b, ok, c.want)
		}
	}
}

// fastPathCases are the common timestamp form and its near misses.
var fastPathCases = []string{
	"2026-03-14T10:42:00Z",
	"2026-03-14T10:42:00.1Z",
	"2026-03-14T10:42:00.123Z",
	"2026-03-14T10:42:00.123456Z",
	"2026-03-14T10:42:00.123456789Z",
	"2026-03-14T10:42:00.1234567891Z",
	"2026-03-14 10:42:00.5Z",
	"2026-03-14T10:42:00.Z",
	"2026-03-14T10:42:00.12aZ",
	"2026-03-14T10:42:00+02:00",
	"2026-03-14T10:42:00.25-07:00",
	"2026-03-14T10:42:00",
	"2026-02-29T10:42:00Z",
	"2024-02-29T10:42:00Z",
	"2026-04-31T10:42:00Z",
	"2026-12-31T23:59:59.999999999Z",
	"2026-00-10T10:42:00Z",
	"2026-13-10T10:42:00Z",
	"2026-03-00T10:42:00Z",
	"2026-03-14T24:00:00Z",
	"2026-03-14T10:60:00Z",
	"2026-03-14T10:42:60Z",
	"2026-03-14T1a:42:00Z",
	"0000-01-01T00:00:00Z",
	"2026-03-14X10:42:00Z",
}

// TestLineTimeFastPath checks that the allocation-free reading of the
// common timestamp form answers exactly as the time package does, on that
// form and on its near misses.
func TestLineTimeFastPath(t *testing.T) {
	cases := fastPathCases
	for _, c := range cases {
		fast, fastOK := utcTime([]byte(c))
		if !fastOK {
			continue // left to the time package
		}
		want, wantOK := parseISO(c)
		if !wantOK || !fast.Equal(want) || fast.Location() != want.Location() {
			t.Errorf("%q: fast %v, the time package %v, %v", c, fast, want, wantOK)
		}
	}
	for _, c := range cases {
		got, gotOK := LineTime([]byte(c+" rest"), time.Time{})
		want, wantOK := parseISO(c)
		if gotOK != wantOK || !got.Equal(want) {
			t.Errorf("%q: LineTime = %v, %v; the time package: %v, %v", c, got, gotOK, want, wantOK)
		}
	}
}

// TestLineTimeEveryDay compares the fast path with the time package on
// every day from 0001 to 2200 at a varying time of day.
func TestLineTimeEveryDay(t *testing.T) {
	day := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2200, 12, 31, 0, 0, 0, 0, time.UTC)
	for i := 0; !day.After(end); i++ {
		at := day.Add(time.Duration(i%86400) * time.Second).Add(time.Duration(i%1000) * time.Millisecond)
		s := at.Format("2006-01-02T15:04:05.000Z")
		got, ok := LineTime([]byte(s+" x"), time.Time{})
		want, wantOK := parseISO(s)
		if ok != wantOK || got != want {
			t.Fatalf("%s: LineTime = %v %v, the time package: %v %v", s, got, ok, want, wantOK)
		}
		day = day.AddDate(0, 0, 1)
	}
}

// TestLineTimeNoAllocation: the common form is read from bytes without
// allocating, as a log scanner reads every line.
func TestLineTimeNoAllocation(t *testing.T) {
	line := []byte("2026-11-24T14:04:17.123Z INFO request handled path=/api/v1/items/7 status=200")
	if n := testing.AllocsPerRun(100, func() { LineTime(line, time.Time{}) }); n != 0 {
		t.Errorf("LineTime allocates %.0f times per line", n)
	}
}

// BenchmarkLineTime reads the time of a line in the common form, as the
// log scanner does for every line.
//
//	go test ./agent/evidence -run '^$' -bench LineTime
func BenchmarkLineTime(b *testing.B) {
	line := []byte("2026-11-24T14:04:17.123Z INFO request handled path=/api/v1/items/7 status=200 duration_ms=12")
	for b.Loop() {
		LineTime(line, time.Time{})
	}
}

// TestParseLogTimeNoAllocation: a string line in the common form is read
// without allocating either (the pod log collector reads strings).
func TestParseLogTimeNoAllocation(t *testing.T) {
	line := "2026-11-24T14:04:17.123Z INFO request handled path=/api/v1/items/7 status=200"
	if n := testing.AllocsPerRun(100, func() { ParseLogTime(line, time.Time{}) }); n != 0 {
		t.Errorf("ParseLogTime allocates %.0f times per line", n)
	}
}
