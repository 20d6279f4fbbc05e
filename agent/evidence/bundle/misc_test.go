package bundle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func openMisc(t testing.TB) *evidence.Sources {
	t.Helper()
	b, err := OpenDir("testdata/misc")
	if err != nil {
		t.Fatal(err)
	}
	return b.Sources(time.Time{})
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func collect(t *testing.T, l evidence.Logs, q evidence.LogQuery) []evidence.LogLine {
	t.Helper()
	var out []evidence.LogLine
	if err := l.Scan(context.Background(), q, func(line evidence.LogLine) error {
		out = append(out, line)
		return nil
	}); err != nil {
		t.Fatalf("scan %+v: %v", q, err)
	}
	return out
}

func TestLogsSources(t *testing.T) {
	s := openMisc(t)
	if s.Logs == nil {
		t.Fatal("Logs is nil")
	}
	got, err := s.Logs.Sources(context.Background())
	if err != nil || strings.Join(got, ",") != "checkout,nginx" {
		t.Fatalf("sources = %v, %v", got, err)
	}
	if !s.Clock().Equal(ts("2026-03-14T10:45:00Z")) {
		t.Fatalf("clock = %v", s.Clock())
	}
}

func TestLogsScan(t *testing.T) {
	l := openMisc(t).Logs
	tests := []struct {
		name      string
		q         evidence.LogQuery
		wantN     int
		wantFirst string
		wantTime  string // of the last line
	}{
		{"all of one source", evidence.LogQuery{Source: "nginx"}, 5, "2026-03-14T10:00:01Z 10.0.0.1 GET /health 200", "2026-03-14T10:40:00Z"},
		{"pattern", evidence.LogQuery{Source: "nginx", Pattern: ` 502 `}, 2, "2026-03-14T10:30:12Z 10.0.0.3 POST /checkout 502 upstream timed out", "2026-03-14T10:30:15Z"},
		{"window", evidence.LogQuery{Source: "nginx", Since: ts("2026-03-14T10:05:00Z"), Until: ts("2026-03-14T10:30:12Z")}, 2, "2026-03-14T10:05:00Z 10.0.0.2 GET /checkout 200", "2026-03-14T10:30:12Z"},
		{"continuation lines inherit time", evidence.LogQuery{Source: "checkout", Pattern: `^\s+at `}, 2, "    at com.shop.db.Pool.acquire(Pool.java:88)", "2026-03-14T10:30:00.5Z"},
		{"space separated zone-less time is UTC", evidence.LogQuery{Source: "checkout", Pattern: `retrying`}, 1, "2026-03-14 10:30:02 WARN retrying payment", "2026-03-14T10:30:02Z"},
		{"offset time normalised", evidence.LogQuery{Source: "checkout", Pattern: `another zone`}, 1, "2026-03-14T10:31:00+01:00 INFO clock in another zone", "2026-03-14T09:31:00Z"},
		{"every source", evidence.LogQuery{Pattern: `(?i)exhausted`}, 2, "2026-03-14T10:30:00.500Z ERROR checkout failed: pool exhausted", "2026-03-14T10:30:00.5Z"},
		{"binary garbage survives", evidence.LogQuery{Source: "checkout", Pattern: `garbage`}, 1, "2026-03-14T10:30:01Z binary \uFFFD\x00 garbage", "2026-03-14T10:30:01Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := collect(t, l, tt.q)
			if len(got) != tt.wantN {
				t.Fatalf("got %d lines, want %d: %+v", len(got), tt.wantN, got)
			}
			if got[0].Text != tt.wantFirst {
				t.Errorf("first = %q, want %q", got[0].Text, tt.wantFirst)
			}
			if last := got[len(got)-1]; !last.Time.Equal(ts(tt.wantTime)) {
				t.Errorf("last time = %v, want %s", last.Time, tt.wantTime)
			}
		})
	}
}

func TestLogsErrors(t *testing.T) {
	l := openMisc(t).Logs
	err := l.Scan(context.Background(), evidence.LogQuery{Pattern: "("}, func(evidence.LogLine) error { return nil })
	if evidence.CodeOf(err) != evidence.CodeInvalid || evidence.SourceOf(err) != "logs" {
		t.Errorf("bad pattern: %v (code %q)", err, evidence.CodeOf(err))
	}
	err = l.Scan(context.Background(), evidence.LogQuery{Source: "nope"}, func(evidence.LogLine) error { return nil })
	if evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("unknown source: %v", err)
	}
	n := 0
	err = l.Scan(context.Background(), evidence.LogQuery{Source: "nginx"}, func(evidence.LogLine) error {
		n++
		return evidence.ErrStop
	})
	if err != nil || n != 1 {
		t.Errorf("ErrStop: err %v after %d lines", err, n)
	}
	boom := errors.New("boom")
	if err := l.Scan(context.Background(), evidence.LogQuery{}, func(evidence.LogLine) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("callback error = %v", err)
	}
}

func TestLogsLongLineIsCut(t *testing.T) {
	long := strings.Repeat("x", 3*MaxLogLine)
	fsys := fstest.MapFS{"logs/big.log": {Data: []byte("2026-03-14T10:00:00Z first\n2026-03-14T10:00:01Z " + long + "\n2026-03-14T10:00:02Z last\n")}}
	b, _ := Open(fsys, "mem")
	got := collect(t, b.Sources(time.Time{}).Logs, evidence.LogQuery{})
	if len(got) != 3 {
		t.Fatalf("got %d lines", len(got))
	}
	if len(got[1].Text) != MaxLogLine || got[2].Text != "2026-03-14T10:00:02Z last" {
		t.Errorf("long line len %d, next %q", len(got[1].Text), got[2].Text)
	}
}

func TestNoParts(t *testing.T) {
	b, _ := Open(fstest.MapFS{"bundle.json": {Data: []byte(`{}`)}}, "empty")
	s := b.Sources(time.Time{})
	if s.Logs != nil || s.Changes != nil || s.CloudWatch != nil || s.Code != nil || s.Knowledge != nil {
		t.Errorf("empty bundle has sources: %+v", s)
	}
}

func TestChanges(t *testing.T) {
	c := openMisc(t).Changes
	all, err := c.List(context.Background(), time.Time{}, time.Time{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Service != "payments" || all[2].Revision != "cm-17" || all[1].Source != "changes.json" {
		t.Fatalf("not sorted by time: %+v", all)
	}
	got, _ := c.List(context.Background(), ts("2026-03-14T10:00:00Z"), ts("2026-03-14T10:22:00Z"), "checkout")
	if len(got) != 1 || got[0].Kind != "deploy" {
		t.Fatalf("filtered = %+v", got)
	}
}

func TestChangesMalformed(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{}`, "changes.json: want a JSON array"},
		{`[{"timestamp":"2026-03-14T10:00:00Z","service":"a","kind":"deploy"},{"timestamp":"yesterday","service":"a","kind":"deploy"}]`, "changes.json: [1].timestamp"},
		{`[{"timestamp":"2026-03-14T10:00:00Z","service":"a","kind":"rollback"}]`, `[0].kind: "rollback"`},
		{`[{"timestamp":"2026-03-14T10:00:00Z","kind":"infra"}]`, "[0].service: missing"},
	}
	for _, tt := range tests {
		b, _ := Open(fstest.MapFS{"changes.json": {Data: []byte(tt.data)}, "logs/a.log": {Data: []byte("2026-03-14T10:00:00Z ok\n")}}, "mem")
		s := b.Sources(time.Time{})
		_, err := s.Changes.List(context.Background(), time.Time{}, time.Time{}, "")
		if err == nil || !strings.Contains(err.Error(), tt.want) || evidence.CodeOf(err) != evidence.CodeMalformed {
			t.Errorf("%s: err = %v, want %q", tt.data, err, tt.want)
		}
		if lines := collect(t, s.Logs, evidence.LogQuery{}); len(lines) != 1 {
			t.Errorf("the rest of the bundle must still serve")
		}
	}
}

func TestFilterPattern(t *testing.T) {
	tests := []struct {
		pattern, msg string
		want         bool
	}{
		{"", "anything", true},
		{"ERROR", "ERROR x", true},
		{"ERROR", "error x", false},
		{"ERROR timed", "ERROR Task timed out", true},
		{"ERROR timed", "ERROR refused", false},
		{`"timed out"`, "Task timed out", true},
		{`"timed out"`, "timed, out", false},
		{"?ERROR ?WARN", "WARN x", true},
		{"?ERROR ?WARN", "INFO x", false},
		{"ERROR -healthcheck", "ERROR healthcheck", false},
		{"ERROR -healthcheck", "ERROR real", true},
	}
	for _, tt := range tests {
		fp, err := ParseFilterPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := fp.Match(tt.msg); got != tt.want {
			t.Errorf("%q on %q = %v", tt.pattern, tt.msg, got)
		}
	}
	for _, bad := range []string{`{ $.level = "error" }`, `"unterminated`} {
		if _, err := ParseFilterPattern(bad); evidence.CodeOf(err) != evidence.CodeInvalid {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestCloudWatchBundle(t *testing.T) {
	cw := openMisc(t).CloudWatch
	ctx := context.Background()
	groups, _ := cw.LogGroups(ctx, "")
	if strings.Join(groups, ",") != "/aws/lambda/checkout,app" {
		t.Fatalf("groups = %v", groups)
	}
	if g, _ := cw.LogGroups(ctx, "/aws/lambda/"); len(g) != 1 {
		t.Errorf("prefix: %v", g)
	}
	res, err := cw.FilterLogEvents(ctx, evidence.CloudWatchLogQuery{Group: "/aws/lambda/checkout", Pattern: "ERROR", Start: ts("2026-03-14T10:00:00Z"), End: ts("2026-03-14T11:00:00Z"), Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 3 || len(res.Lines) != 2 || !res.Truncated || res.Scanned != 6 {
		t.Fatalf("res = %+v", res)
	}
	if res.Lines[0].Text != "ERROR Task timed out after 3.00 seconds" || !res.Lines[0].Time.Equal(ts("2026-03-14T10:30:00Z")) ||
		res.Lines[0].Source != "/aws/lambda/checkout/2026/03/14/[$LATEST]abc" {
		t.Errorf("line 0 = %+v", res.Lines[0])
	}
	if _, err := cw.FilterLogEvents(ctx, evidence.CloudWatchLogQuery{Group: "/nope"}); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("missing group: %v", err)
	}
	ms, _ := cw.ListMetrics(ctx, "AWS/Lambda")
	if len(ms) != 2 || ms[0].Name != "Duration" || ms[1].Dimensions["FunctionName"] != "checkout" {
		t.Fatalf("metrics = %+v", ms)
	}
	series, err := cw.GetMetricData(ctx, []evidence.MetricDataQuery{
		{ID: "e", Metric: evidence.MetricID{Namespace: "AWS/Lambda", Name: "Errors", Dimensions: map[string]string{"FunctionName": "checkout"}}, Stat: "Sum", Period: 300},
		{ID: "cpu"},
		{ID: "x", Metric: evidence.MetricID{Namespace: "AWS/Lambda", Name: "Errors", Dimensions: map[string]string{"FunctionName": "other"}}},
	}, ts("2026-03-14T10:25:00Z"), ts("2026-03-14T10:40:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || len(series[0].Points) != 4 || series[0].Points[1].V != 7 || series[0].Labels["FunctionName"] != "checkout" || series[0].Labels["id"] != "e" {
		t.Fatalf("series = %+v", series)
	}
	if len(series[1].Points) != 0 || series[1].Labels["label"] != "CPUUtilization" {
		t.Errorf("cpu (by Id, outside window) = %+v", series[1])
	}
}

func TestInsightsSubset(t *testing.T) {
	cw := openMisc(t).CloudWatch.(interface {
		InsightsQuery(context.Context, []string, string, time.Time, time.Time) ([]map[string]string, error)
	})
	ctx := context.Background()
	start, end := ts("2026-03-14T10:00:00Z"), ts("2026-03-14T11:00:00Z")
	rows, err := cw.InsightsQuery(ctx, []string{"/aws/lambda/checkout"}, `fields @timestamp, @message | filter @message like /ERROR/ | sort @timestamp desc | limit 2`, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["@timestamp"] != "2026-03-14 10:31:40.000" || !strings.HasPrefix(rows[1]["@message"], "ERROR connection refused") {
		t.Fatalf("rows = %v", rows)
	}
	rows, err = cw.InsightsQuery(ctx, []string{"/aws/lambda/checkout"}, `filter @message like "ERROR" | stats count(*) as n by bin(5m)`, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["n"] != "3" || rows[0]["bin(5m)"] != "2026-03-14 10:30:00.000" {
		t.Fatalf("stats rows = %v", rows)
	}
	if _, err := cw.InsightsQuery(ctx, []string{"/aws/lambda/checkout"}, `parse @message "* *" as a, b`, start, end); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("unsupported: %v", err)
	}
}

func TestCloudWatchMalformed(t *testing.T) {
	b, _ := Open(fstest.MapFS{
		"cloudwatch/logs/g.jsonl": {Data: []byte("{\"timestamp\": 1, \"message\": \"ok\"}\nnot json\n")},
		"cloudwatch/metrics.json": {Data: []byte(`{"MetricDataResults": [{"Id": "a", "Timestamps": ["2026-03-14T10:00:00Z"], "Values": []}]}`)},
	}, "mem")
	cw := b.Sources(time.Time{}).CloudWatch
	_, err := cw.FilterLogEvents(context.Background(), evidence.CloudWatchLogQuery{Group: "g"})
	if err == nil || !strings.Contains(err.Error(), "cloudwatch/logs/g.jsonl:2") {
		t.Errorf("jsonl: %v", err)
	}
	_, err = cw.ListMetrics(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "1 timestamps but 0 values") {
		t.Errorf("metrics: %v", err)
	}
}

func TestCodeBundle(t *testing.T) {
	c := openMisc(t).Code
	ctx := context.Background()
	repos, _ := c.Repos(ctx)
	if strings.Join(repos, ",") != "checkout" {
		t.Fatalf("repos = %v", repos)
	}
	m, err := c.Search(ctx, "Connection Pool Exhausted", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[0].Path != "src/pool.go" || m[0].Line != 7 {
		t.Fatalf("matches = %+v (vendor, node_modules and binaries must be skipped)", m)
	}
	m, _ = c.Search(ctx, `/envInt\("DB_\w+"/`, "checkout", 10)
	if len(m) != 1 || m[0].Line != 4 {
		t.Fatalf("regexp matches = %+v", m)
	}
	if m, _ := c.Search(ctx, "e", "checkout", 2); len(m) != 2 {
		t.Errorf("limit: %d matches", len(m))
	}
	text, err := c.ReadFile(ctx, "checkout", "src/pool.go")
	if err != nil || !strings.Contains(text, "MaxOpen") {
		t.Fatalf("read: %v", err)
	}
	for _, bad := range []string{"../checkout.commits.json", "/etc/passwd", "src/../../x", "src"} {
		if _, err := c.ReadFile(ctx, "checkout", bad); evidence.CodeOf(err) != evidence.CodeInvalid {
			t.Errorf("ReadFile(%q) = %v, want invalid", bad, err)
		}
	}
	if _, err := c.ReadFile(ctx, "checkout", "missing.go"); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("missing: %v", err)
	}
	commits, _ := c.Commits(ctx, "checkout", ts("2026-03-14T00:00:00Z"))
	if len(commits) != 1 || commits[0].Author != "alice" {
		t.Errorf("commits = %+v", commits)
	}
	pulls, _ := c.PullRequests(ctx, "checkout", ts("2026-03-14T00:00:00Z"))
	if len(pulls) != 2 || pulls[0].Number != 42 || pulls[1].Number != 41 {
		t.Errorf("pulls = %+v", pulls)
	}
}

func TestCodeSymlinkEscape(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o600)
	os.MkdirAll(filepath.Join(dir, "repos", "r"), 0o755)
	os.WriteFile(filepath.Join(dir, "repos", "r", "ok.txt"), []byte("fine"), 0o644)
	if err := os.Symlink(secret, filepath.Join(dir, "repos", "r", "link.txt")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	os.Symlink(filepath.Dir(secret), filepath.Join(dir, "repos", "r", "dirlink"))
	b, _ := OpenDir(dir)
	c := b.Sources(time.Time{}).Code
	for _, p := range []string{"link.txt", "dirlink/secret.txt"} {
		if text, err := c.ReadFile(context.Background(), "r", p); err == nil {
			t.Errorf("ReadFile(%s) escaped the bundle: %q", p, text)
		}
	}
	if m, _ := c.Search(context.Background(), "secret", "", 10); len(m) != 0 {
		t.Errorf("search followed a symlink: %+v", m)
	}
}

func TestRunbooks(t *testing.T) {
	k := openMisc(t).Knowledge
	got, err := k.Search(context.Background(), "oom memory limit", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Location != "runbooks/oom.md#raising-the-memory-limit" {
		t.Fatalf("ranking = %+v", got)
	}
	got, _ = k.Search(context.Background(), "connection pool exhausted", 1)
	if len(got) != 1 || got[0].Location != "runbooks/db.md#pool-exhausted" {
		t.Fatalf("ranking = %+v", got)
	}
}

// BenchmarkScan200MB scans a generated 200 MB log for a rare pattern and
// reports peak heap in use, to show memory stays bounded.
//
//	go test ./agent/evidence/bundle -run '^$' -bench Scan200MB -benchtime 1x
func BenchmarkScan200MB(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "logs", "big.log"))
	if err != nil {
		b.Fatal(err)
	}
	base := ts("2026-03-14T00:00:00Z")
	var size int64
	line := 0
	for size < 200<<20 {
		var s string
		switch {
		case line%50000 == 7:
			s = fmt.Sprintf("%s ERROR payment failed: connection pool exhausted id=%d\n", base.Add(time.Duration(line)*time.Millisecond).Format(time.RFC3339Nano), line)
		case line%1000 == 3:
			s = "    at com.shop.Service.call(Service.java:42)\n"
		default:
			s = fmt.Sprintf("%s INFO request handled path=/api/v1/items/%d status=200 duration_ms=%d\n", base.Add(time.Duration(line)*time.Millisecond).Format(time.RFC3339Nano), line, line%300)
		}
		n, _ := f.WriteString(s)
		size += int64(n)
		line++
	}
	f.Close()
	bd, _ := OpenDir(dir)
	logs := bd.Sources(time.Time{}).Logs
	b.SetBytes(size)
	var before runtimeMemStats
	readMem(&before)
	b.ResetTimer()
	var peak uint64
	for b.Loop() {
		matched := 0
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // sample the heap while scanning
			defer close(done)
			var ms runtimeMemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					readMem(&ms)
					peak = max(peak, ms.HeapInuse)
				}
			}
		}()
		err := logs.Scan(context.Background(), evidence.LogQuery{Pattern: "connection pool exhausted"}, func(evidence.LogLine) error {
			matched++
			return nil
		})
		close(stop)
		<-done
		if err != nil || matched == 0 {
			b.Fatalf("matched %d, err %v", matched, err)
		}
	}
	var ms runtimeMemStats
	readMem(&ms)
	peak = max(peak, ms.HeapInuse)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(ms.TotalAlloc-before.TotalAlloc)/(1<<20)/float64(b.N), "alloc-MB/op")
	if peak > 100<<20 {
		b.Errorf("peak heap %d MB, want under 100 MB", peak>>20)
	}
}
