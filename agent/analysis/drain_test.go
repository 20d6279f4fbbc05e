package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMaskToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"12345", "<NUM>"},
		{"-3.5", "<NUM>"},
		{"250ms", "<NUM>"},
		{"256Mi", "<NUM>"},
		{"2h45m0s", "<NUM>"},
		{"0xdeadbeef", "<HEX>"},
		{"9f86d081884c7d65", "<HEX>"},
		{"123e4567-e89b-12d3-a456-426614174000", "<UUID>"},
		{"10.0.3.17", "<IP>"},
		{"10.0.3.17:5432", "<IP>"},
		{"(10.0.3.17:5432),", "(<IP>),"},
		{"fe80::1", "<IP>"},
		{"10.0.0.1:5432:", "<IP>:"},
		{"postgres.shop.svc:5432", "postgres.shop.svc:<NUM>"},
		{"2026-03-14T10:42:00Z", "<TS>"},
		{"10:42:00", "<TS>"},
		{"user_id=42", "user_id=<NUM>"},
		{"status=ok", "status=ok"},
		{"/api/v1/orders/9912", "/api/v1/orders/<NUM>"},
		{"x509:", "x509:"},
		{"checkout", "checkout"},
		{"ERROR", "ERROR"},
		{"refused", "refused"},
		{"deadbeef", "deadbeef"}, // no digit: a word
	}
	for _, tt := range tests {
		if got := MaskToken(tt.in); got != tt.want {
			t.Errorf("MaskToken(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTokensQuoted(t *testing.T) {
	got := strings.Join(Tokens(`user "john smith" logged in from 10.1.1.1 after 35ms`), " ")
	want := "user <STR> logged in from <IP> after <NUM>"
	if got != want {
		t.Fatalf("Tokens = %q, want %q", got, want)
	}
}

func TestDrainClusters(t *testing.T) {
	lines := []string{
		"connection refused to payments:8080 after 3 retries",
		"connection refused to payments:8080 after 5 retries",
		"request GET /api/orders/1 served in 12ms",
		"request GET /api/orders/2 served in 15ms",
		"request POST /api/orders/3 served in 40ms",
		"user alice logged in",
		"user bob logged in",
		"cache warmed",
	}
	d := NewDrain()
	for _, l := range lines {
		d.Add(l)
	}
	got := map[string]int{}
	for _, c := range d.Clusters() {
		got[c.Template()] = c.Count
	}
	want := map[string]int{
		"connection refused to payments:<NUM> after <NUM> retries": 2,
		"request <*> /api/orders/<NUM> served in <NUM>":            3,
		"user <*> logged in": 2,
		"cache warmed":       1,
	}
	if len(got) != len(want) {
		t.Fatalf("clusters = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("cluster %q = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func TestDrainMaxClusters(t *testing.T) {
	d := NewDrain()
	d.MaxClusters = 3
	for i := 0; i < 50; i++ {
		d.Add(fmt.Sprintf("word%c alpha beta gamma", 'a'+i%26))
		d.Add(fmt.Sprintf("distinct%c one two three four five", 'a'+i%26))
	}
	if n := len(d.Clusters()); n > 3 {
		t.Fatalf("clusters = %d, want at most 3", n)
	}
}

func TestMinerNewAndSurging(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	incStart := t0.Add(time.Hour)
	m := NewMiner(t0, incStart, incStart.Add(time.Hour))
	// Baseline: steady traffic and a rare warning.
	for i := 0; i < 60; i++ {
		ts := t0.Add(time.Duration(i) * time.Minute)
		m.Add(ts, "app.log", fmt.Sprintf("GET /health 200 %dms", i%7+1))
		if i%30 == 0 {
			m.Add(ts, "app.log", "slow query took 1200ms")
		}
	}
	// Incident: traffic, warnings surge, a new error appears.
	for i := 0; i < 60; i++ {
		ts := incStart.Add(time.Duration(i) * time.Minute)
		m.Add(ts, "app.log", fmt.Sprintf("GET /health 200 %dms", i%7+1))
		m.Add(ts, "app.log", fmt.Sprintf("slow query took %dms", 1000+i))
		if i >= 30 {
			m.Add(ts, "app.log", fmt.Sprintf("dial tcp 10.0.0.%d:5432: connect: connection refused", i%5+1))
		}
	}
	// Outside both windows: ignored.
	if m.Add(incStart.Add(2*time.Hour), "app.log", "late line") {
		t.Fatal("line after the incident window was counted")
	}
	byTmpl := map[string]LogTemplate{}
	for _, tp := range m.Templates() {
		byTmpl[tp.Template] = tp
	}
	tests := []struct {
		tmpl            string
		base, inc       int
		isNew, surging  bool
		firstIncidentAt time.Time
	}{
		{"GET /health <NUM> <NUM>", 60, 60, false, false, incStart},
		{"slow query took <NUM>", 2, 60, false, true, incStart},
		{"dial tcp <IP>: connect: connection refused", 0, 30, true, true, incStart.Add(30 * time.Minute)},
	}
	for _, tt := range tests {
		tp, ok := byTmpl[tt.tmpl]
		if !ok {
			t.Fatalf("template %q missing; have %v", tt.tmpl, byTmpl)
		}
		if tp.Baseline != tt.base || tp.Incident != tt.inc {
			t.Errorf("%q: baseline %d incident %d, want %d %d", tt.tmpl, tp.Baseline, tp.Incident, tt.base, tt.inc)
		}
		if tp.New != tt.isNew || tp.Surging(3, 5) != tt.surging {
			t.Errorf("%q: new %v surging %v (surge %.1f), want %v %v", tt.tmpl, tp.New, tp.Surging(3, 5), tp.Surge, tt.isNew, tt.surging)
		}
		if !tp.FirstIncident.Equal(tt.firstIncidentAt) {
			t.Errorf("%q: first incident %v, want %v", tt.tmpl, tp.FirstIncident, tt.firstIncidentAt)
		}
	}
	if got := m.Templates()[0].Template; got != "GET /health <NUM> <NUM>" && got != "slow query took <NUM>" {
		t.Errorf("first template %q is not one of the most frequent", got)
	}
}

func BenchmarkDrainAdd(b *testing.B) {
	lines := []string{
		"2026-03-14T10:42:00.123Z INFO request GET /api/orders/12345 served in 12ms status=200",
		"2026-03-14T10:42:00.456Z ERROR dial tcp 10.0.3.17:5432: connect: connection refused",
		"2026-03-14T10:42:01.000Z WARN slow query took 1200ms table=orders",
	}
	d := NewDrain()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Add(lines[i%len(lines)])
	}
}

func TestStatusCodesSeparateTemplates(t *testing.T) {
	d := NewDrain()
	a := d.Add(`2026-05-11T13:35:00.000Z "GET /v1/orders HTTP/1.1" 200 - 0 4034 66 59 "10.0.0.1" "okhttp" "id1" "orders"`)
	b := d.Add(`2026-05-11T13:35:01.000Z "GET /v1/orders HTTP/1.1" 429 RL 0 1332 0 - "10.0.0.2" "okhttp" "id2" "orders"`)
	c := d.Add(`2026-05-11T13:35:02.000Z "GET /v1/search HTTP/1.1" 200 - 0 4034 61 50 "10.0.0.3" "okhttp" "id3" "search"`)
	if a == b || a != c {
		t.Errorf("200 and 429 lines: clusters %d %d %d, want 200s together and 429s apart", a.ID, b.ID, c.ID)
	}
	if got := MaskToken("status=503"); got != "status=503" {
		t.Errorf("MaskToken(status=503) = %q", got)
	}
}

func TestTemplateOnsetIsChangePoint(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	m := NewMiner(t0, t0.Add(30*time.Minute), t0.Add(60*time.Minute))
	// One line every 10 minutes, then 20 a minute from 10:40.
	for i := 0; i < 40; i += 10 {
		m.Add(t0.Add(time.Duration(i)*time.Minute), "p", "request rejected: over limit")
	}
	for i := 40; i < 60; i++ {
		for j := 0; j < 20; j++ {
			m.Add(t0.Add(time.Duration(i)*time.Minute+time.Duration(j)*time.Second), "p", "request rejected: over limit")
		}
	}
	ts := m.Templates()
	if len(ts) != 1 || !ts[0].Onset.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("onset %v, want 10:40", ts[0].Onset)
	}
}

func TestTokensMaskDatesAndJoinedNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"connection from 1.2.3.4 () at Fri Jun 17 20:55:07 2005", "connection from <IP> () at <TS> <TS> <NUM> <TS> <NUM>"},
		{"may I come in", "may I come in"}, // a month name alone is a word
		{"on Jun, 17 at 10", "on <TS> <NUM> at <NUM>"},
		{"Sun. Mar. 3 2024", "<TS> <TS> <NUM> <NUM>"},
		{"released 3, March 2024", "released <NUM>, <TS> <NUM>"},
		{"JAN 5 12:00:01 host", "<TS> <NUM> <TS> host"},
		{"took 5 ms Dec 3", "took <NUM> ms <TS> <NUM>"},
		{"steps=15140##7014##5483", "steps=<NUM>##<NUM>##<NUM>"},
		{"size = 4,totalTime = 12", "size = <NUM>,totalTime = <NUM>"},
	} {
		if got := strings.Join(Tokens(tc.in), " "); got != tc.want {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGroupBatch(t *testing.T) {
	// Variables in the leading position, constants that differ by one
	// word, and a value of few distinct forms.
	lines := []string{
		"alice logged in from 10.0.0.1",
		"bob logged in from 10.0.0.2",
		"carol logged in from 10.0.0.3",
		"dave logged in from 10.0.0.4",
		"erin logged in from 10.0.0.5",
		"instance abc spawned successfully",
		"instance abd spawned successfully",
		"instance abe destroyed successfully",
		"instance abf destroyed successfully",
		"proxy.example.org:443 open through proxy p1:8080 HTTPS",
		"proxy.example.org:443 open through proxy p1:8080 SOCKS5",
		"proxy.example.org:443 open through proxy p1:8080 HTTPS",
	}
	got := GroupBatch(lines)
	want := []int{1, 1, 1, 1, 1, 2, 2, 3, 3, 4, 5, 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GroupBatch = %v, want %v", got, want)
	}
	toks := make([][]string, len(lines))
	for i, l := range lines {
		toks[i] = Tokens(l)
	}
	_, tmpls := BatchGroups(toks, nil)
	if g := strings.Join(tmpls[0], " "); g != "<*> logged in from <IP>" {
		t.Errorf("first template %q", g)
	}
	if g := strings.Join(tmpls[1], " "); g != "instance <*> spawned successfully" {
		t.Errorf("second template %q", g)
	}
}

func TestValueLike(t *testing.T) {
	for tok, want := range map[string]bool{
		"<NUM>": true, "/10.10.34.12:<NUM>": true, "rhost=<IP>": true, "<NUM> bytes": true, "<<NUM> sec": true,
		"db-3.eu.example.com": true, "rdd_<NUM>_<NUM>": true, "broadcast_<NUM>_piece0": true,
		"mapreduce.task.id": true, // a dotted name of three labels reads as a host
		"HTTPS":             false, "SOCKS5": false, "200": false, "tty=NODEVssh": false, `"GET <STR>"`: false, "node-<NUM>": false,
	} {
		if got := valueLike(tok); got != want {
			t.Errorf("valueLike(%q) = %v, want %v", tok, got, want)
		}
	}
}

func TestMinerBatchAndFallback(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	lines := []string{
		"user alice logged in from 10.0.0.1",
		"user bob logged in from 10.0.0.2",
		"user carol logged in from 10.0.0.3",
		"user dave logged in from 10.0.0.4",
		"disk full on /var",
		"user erin logged in from 10.0.0.5",
		"disk full on /var",
	}
	for _, maxForms := range []int{0, 3} {
		m := NewMiner(t0, t0.Add(30*time.Minute), t0.Add(60*time.Minute))
		m.MaxForms = maxForms
		for i, l := range lines {
			m.Add(t0.Add(time.Duration(25+i)*time.Minute), "p", l)
		}
		got := map[string]LogTemplate{}
		total := 0
		for _, tp := range m.Templates() {
			got[tp.Template] = tp
			total += tp.Count
		}
		if total != len(lines) {
			t.Errorf("MaxForms %d: %d lines counted, want %d", maxForms, total, len(lines))
		}
		login, disk := got["user <*> logged in from <IP>"], got["disk full on /var"]
		if login.Count != 5 || login.Baseline != 4 || login.Incident != 1 || login.Example != lines[0] || login.Last != lines[5] {
			t.Errorf("MaxForms %d: login template %+v (templates %v)", maxForms, login, got)
		}
		if disk.Count != 2 || disk.Baseline != 1 || disk.Incident != 1 || disk.Last != "" ||
			!disk.FirstSeen.Equal(t0.Add(29*time.Minute)) || !disk.LastSeen.Equal(t0.Add(31*time.Minute)) {
			t.Errorf("MaxForms %d: disk template %+v", maxForms, disk)
		}
		if len(login.Sources) != 1 || len(login.PerMinute) != 5 {
			t.Errorf("MaxForms %d: sources %v, per minute %v", maxForms, login.Sources, login.PerMinute)
		}
	}
}

func TestGroupBatchSeverityIsNotTemplate(t *testing.T) {
	got := GroupBatch([]string{
		"FATAL: could not write to file x: No space left on device",
		"PANIC: could not write to file x: No space left on device",
		"LOG: checkpoint starting",
	})
	if got[0] != got[1] || got[0] == got[2] {
		t.Errorf("groups %v: want the FATAL and PANIC lines together", got)
	}
}

// BenchmarkMiner counts 10,000 lines of a few templates with varying values
// (as a service's log) and mines their templates: the cost per line of
// Add plus the batch pass of Templates.
func BenchmarkMiner(b *testing.B) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	lines := make([]string, 10000)
	for i := range lines {
		switch i % 5 {
		case 0:
			lines[i] = fmt.Sprintf("2026-03-14T10:42:%02d.123Z INFO request GET /api/orders/%d served in %dms status=200", i%60, i, i%97)
		case 1:
			lines[i] = fmt.Sprintf("2026-03-14T10:42:%02d.456Z ERROR dial tcp 10.0.%d.%d:5432: connect: connection refused", i%60, i%7, i%250)
		case 2:
			lines[i] = fmt.Sprintf("2026-03-14T10:42:%02d.000Z WARN slow query took %dms table=%s", i%60, i%1000, []string{"orders", "items", "users"}[i%3])
		case 3:
			lines[i] = fmt.Sprintf("user%d logged in from 10.1.%d.%d session %x", i%40, i%9, i%200, i*7919)
		default:
			lines[i] = fmt.Sprintf("cache miss for key product:%d, fetched in %d.%d ms", i, i%50, i%10)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		m := NewMiner(t0, t0.Add(30*time.Minute), t0.Add(60*time.Minute))
		for i, l := range lines {
			m.Add(t0.Add(time.Duration(i)*100*time.Millisecond), "p", l)
		}
		if len(m.Templates()) == 0 {
			b.Fatal("no template")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// TestMinerPerMinute: the per-minute counts hold lines out of time order
// and lines added after Templates was called.
func TestMinerPerMinute(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	m := NewMiner(t0, t0.Add(30*time.Minute), t0.Add(40*time.Minute))
	want := map[int64]int{}
	add := func(min int) {
		at := t0.Add(time.Duration(min)*time.Minute + 5*time.Second)
		m.Add(at, "p", fmt.Sprintf("request %d served", min))
		want[at.Unix()/60]++
	}
	for _, min := range []int{1, 1, 2, 1, 5, 5, 5, 2, 39} {
		add(min)
	}
	if ts := m.Templates(); len(ts) != 1 || fmt.Sprint(ts[0].PerMinute) != fmt.Sprint(want) {
		t.Fatalf("per minute %v, want %v", ts[0].PerMinute, want)
	}
	for _, min := range []int{39, 5, 6, 6} {
		add(min)
	}
	if ts := m.Templates(); len(ts) != 1 || fmt.Sprint(ts[0].PerMinute) != fmt.Sprint(want) || ts[0].Count != 13 {
		t.Fatalf("per minute %v (%d lines), want %v (13)", ts[0].PerMinute, ts[0].Count, want)
	}
}
