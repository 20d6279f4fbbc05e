package localize

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

var (
	t0  = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) // baseline start
	win = Window{BaselineStart: t0, Start: t0.Add(30 * time.Minute), End: t0.Add(40 * time.Minute), Step: time.Minute}
	// The symptom begins 3 minutes before the end of the window.
	onset = t0.Add(37 * time.Minute)
)

// wave returns a series of 41 one-minute points: level plus a small
// deterministic wobble, and the value of f(minute) where f returns ok.
func wave(level, wobble float64, f func(m int) (float64, bool)) []evidence.Point {
	var ps []evidence.Point
	for m := 0; m <= 40; m++ {
		v := level + wobble*math.Sin(float64(m)*1.7)
		if f != nil {
			if x, ok := f(m); ok {
				v = x
			}
		}
		ps = append(ps, evidence.Point{T: t0.Add(time.Duration(m)*time.Minute + 7*time.Second), V: v})
	}
	return ps
}

// from returns f: value v from minute a to b (inclusive).
func from(a, b int, v float64) func(int) (float64, bool) {
	return func(m int) (float64, bool) { return v, m >= a && m <= b }
}

func entryLatency(svc string) Series {
	return Series{Service: svc, Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up,
		Points: wave(0.2, 0.01, from(37, 40, 1.5))}
}

func TestRank(t *testing.T) {
	tests := []struct {
		name      string
		in        Input
		first     string
		level     Level
		notIn     string // a subject that must not rank first
		wantWords []string
	}{
		{
			name: "onset beats loudness: an earlier incident's tail loses to the service that changed with the symptom",
			in: Input{Window: win, Entry: "frontend", Metrics: []Series{
				entryLatency("frontend"),
				// cart: a huge CPU episode from minute 29 still elevated.
				{Service: "cart", Metric: "cpu", Signal: SignalCPU, Unit: "cores", Bad: Up, Points: wave(0.1, 0.005, from(29, 40, 1.9))},
				// checkout: a moderate CPU rise from the symptom's minute.
				{Service: "checkout", Metric: "cpu", Signal: SignalCPU, Unit: "cores", Bad: Up, Points: wave(0.1, 0.005, from(37, 40, 0.6))},
			}},
			first: "checkout", notIn: "cart",
		},
		{
			name: "unit floor: 0.002 to 0.006 cores does not beat new exceptions",
			in: Input{Window: win, Entry: "ui", Metrics: []Series{
				entryLatency("ui"),
				{Service: "idle", Metric: "cpu", Signal: SignalCPU, Unit: "cores", Bad: Up, Points: wave(0.002, 0.00001, from(37, 40, 0.006))},
			}, Logs: []LogTemplate{
				{Service: "travel", Template: "INFO query trips", Counts: minutes(map[int]int{20: 30, 21: 31, 22: 29, 37: 30, 38: 29, 39: 31})},
				{Service: "travel", Template: "ERROR java.lang.RuntimeException: <*>", Error: true, Counts: minutes(map[int]int{37: 5, 38: 4, 39: 3})},
			}},
			first: "travel", notIn: "idle", wantWords: []string{"new since", "none before"},
		},
		{
			name: "the deepest service whose own latency changed: callers give way",
			in: Input{Window: win, Entry: "frontend", Edges: []Edge{{"frontend", "checkout"}, {"checkout", "payment"}}, Metrics: []Series{
				entryLatency("frontend"),
				{Service: "checkout", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.1, 0.005, from(37, 40, 1.4))},
				{Service: "payment", Caller: "checkout", Metric: "edge latency", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.004, 0.0002, from(37, 40, 0.8))},
			}},
			first: "payment", notIn: "checkout", wantWords: []string{"calls from checkout to payment rose"},
		},
		{
			name: "a caller's new errors are not explained by a callee's slowness",
			in: Input{Window: win, Entry: "ui", Edges: []Edge{{"ui", "travel"}, {"travel", "route"}}, Metrics: []Series{
				entryLatency("ui"),
				{Service: "travel", Metric: "error spans per request", Signal: SignalTraceErr, Unit: "ratio", Bad: Up, Points: wave(0, 0, from(37, 38, 0.6))},
				{Service: "route", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.02, 0.001, from(37, 40, 0.035))},
			}},
			first: "travel", notIn: "route", wantWords: []string{"rose from 0% to 60%"},
		},
		{
			name: "without a call graph the entry gives way to any service that changed",
			in: Input{Window: win, Entry: "frontend", Metrics: []Series{
				entryLatency("frontend"),
				{Service: "catalog", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.02, 0.001, from(37, 40, 0.3))},
			}},
			first: "catalog", notIn: "frontend",
		},
		{
			name: "node signals name the node",
			in: Input{Window: win, Entry: "frontend", Metrics: []Series{
				entryLatency("frontend"),
				{Node: "node-3", Metric: "node cpu", Signal: SignalCPU, Unit: "%", Bad: Up, Points: wave(12, 0.5, from(37, 40, 95))},
			}},
			first: "node-3", level: LevelNode, wantWords: []string{"node node-3 rose from 12% to 95%"},
		},
		{
			name: "a fall is worded as a fall",
			in: Input{Window: win, Entry: "frontend", Metrics: []Series{
				entryLatency("frontend"),
				{Service: "cart", Metric: "success rate", Signal: SignalErrors, Unit: "%", Bad: Down, Points: wave(64, 0.2, from(37, 40, 2))},
			}},
			first: "cart", wantWords: []string{"fell from 64% to 2%"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Rank(tt.in)
			if len(res.Candidates) == 0 {
				t.Fatalf("no candidates")
			}
			c := res.Candidates[0]
			if c.Subject != tt.first {
				t.Fatalf("first = %s (%s), want %s; all: %+v", c.Subject, c.Explanation, tt.first, res.Candidates)
			}
			if tt.level != "" && c.Level != tt.level {
				t.Errorf("level = %s, want %s", c.Level, tt.level)
			}
			if c.Score <= 0 || c.Score > 100 {
				t.Errorf("score %v out of 0-100", c.Score)
			}
			if !strings.HasPrefix(c.Explanation, c.Subject+": ") {
				t.Errorf("explanation does not lead with its subject: %q", c.Explanation)
			}
			for _, w := range tt.wantWords {
				if !strings.Contains(c.Explanation, w) {
					t.Errorf("explanation %q lacks %q", c.Explanation, w)
				}
			}
			if tt.notIn != "" {
				for _, o := range res.Candidates {
					if o.Subject == tt.notIn && o.Score >= c.Score {
						t.Errorf("%s scored %v, not below %s's %v", o.Subject, o.Score, c.Subject, c.Score)
					}
				}
			}
		})
	}
}

func TestSymptomOnsetAndEntryMoved(t *testing.T) {
	res := Rank(Input{Window: win, Entry: "frontend", Metrics: []Series{entryLatency("frontend")}})
	if !res.EntryMoved {
		t.Fatalf("entry latency rose but EntryMoved is false")
	}
	if !res.SymptomOnset.Equal(onset) {
		t.Errorf("symptom onset %s, want %s", res.SymptomOnset, onset)
	}
	if !strings.Contains(res.EntryEvidence, "to 1.5 s at 10:37") {
		t.Errorf("entry evidence %q", res.EntryEvidence)
	}
	quiet := Rank(Input{Window: win, Entry: "frontend", Metrics: []Series{{Service: "frontend", Metric: "latency", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.2, 0.01, nil)}}})
	if quiet.EntryMoved || len(quiet.Candidates) != 0 {
		t.Errorf("a quiet entry moved: %+v", quiet)
	}
}

func TestEarlierEpisodeIsMarked(t *testing.T) {
	res := Rank(Input{Window: win, Entry: "frontend", Metrics: []Series{
		entryLatency("frontend"),
		{Service: "cart", Metric: "cpu", Signal: SignalCPU, Unit: "cores", Bad: Up, Points: wave(0.1, 0.005, from(29, 40, 1.9))},
	}})
	if c := candidate(t, res, "cart"); !c.Preexisting || !strings.Contains(c.Explanation, "before the symptom") {
		t.Errorf("cart's earlier episode not marked: %+v", c)
	}
}

// candidate is the candidate named subject; the test stops when there is none.
func candidate(t *testing.T, res Result, subject string) Candidate {
	t.Helper()
	for _, c := range res.Candidates {
		if c.Subject == subject {
			return c
		}
	}
	t.Fatalf("%s missing: %+v", subject, res.Candidates)
	return Candidate{}
}

func TestNoInput(t *testing.T) {
	res := Rank(Input{Window: win})
	if len(res.Candidates) != 0 || res.EntryMoved {
		t.Fatalf("empty input ranked: %+v", res)
	}
	// A series with too little reference is not judged.
	res = Rank(Input{Window: win, Metrics: []Series{{Service: "a", Metric: "x", Signal: SignalCPU, Bad: Up,
		Points: []evidence.Point{{T: win.End.Add(-time.Minute), V: 5}, {T: win.End, V: 9}}}}})
	if len(res.Candidates) != 0 {
		t.Fatalf("series without reference ranked: %+v", res.Candidates)
	}
}

func minutes(byMinute map[int]int) map[int64]int {
	out := map[int64]int{}
	for m, n := range byMinute {
		out[t0.Add(time.Duration(m)*time.Minute).Unix()/60] = n
	}
	return out
}

func TestValueWording(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.0046, "s", "4.6 ms"}, {2.5, "s", "2.5 s"}, {64, "%", "64%"}, {0.006, "cores", "0.006 cores"},
		{3 << 20, "bytes", "3 MiB"}, {2048, "bytes/s", "2 KiB/s"}, {1.5, "/s", "1.5/s"}, {7, "", "7"},
	} {
		if got := value(tc.v, tc.unit); got != tc.want {
			t.Errorf("value(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

// TestLogShare: a template is judged by its share of its service's lines,
// and the split between before and since is searched near the symptom,
// so a log that covers only two minutes before it still counts.
func TestLogShare(t *testing.T) {
	// The entry's symptom begins at minute 37; logs exist from minute 35.
	logs := []LogTemplate{
		// travel stops taking one of its two code paths at minute 37.
		{Service: "travel", Template: "INFO query trips <*>", Counts: minutes(map[int]int{35: 30, 36: 31, 37: 30, 38: 29, 39: 31})},
		{Service: "travel", Template: "INFO price of trip <*>", Counts: minutes(map[int]int{35: 30, 36: 29})},
		// seat logs twice as much of everything: more load, same behaviour.
		{Service: "seat", Template: "INFO left tickets <*>", Counts: minutes(map[int]int{35: 20, 36: 20, 37: 40, 38: 41, 39: 40})},
		{Service: "seat", Template: "INFO seat class <*>", Counts: minutes(map[int]int{35: 10, 36: 10, 37: 20, 38: 19, 39: 21})},
	}
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Logs: logs})
	others := func(cs []Candidate) []Candidate {
		var out []Candidate
		for _, c := range cs {
			if c.Subject != "ui" {
				out = append(out, c)
			}
		}
		return out
	}
	cs := others(res.Candidates)
	if len(cs) == 0 || cs[0].Subject != "travel" {
		t.Fatalf("want travel first: %+v", res.Candidates)
	}
	if !strings.Contains(cs[0].Explanation, "fell") || !strings.Contains(cs[0].Explanation, "share") {
		t.Errorf("explanation %q does not say the template's share fell", cs[0].Explanation)
	}
	for _, c := range cs {
		if c.Subject == "seat" {
			t.Errorf("seat's proportional rise ranked: %+v", c)
		}
	}
	// A new routine template (a path never taken before) counts too, at
	// half the weight of a new error template.
	res = Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Logs: []LogTemplate{
		{Service: "basic", Template: "INFO travel query <*>", Counts: minutes(map[int]int{35: 30, 36: 30, 37: 30, 38: 30, 39: 30})},
		{Service: "basic", Template: "INFO routes fetched by ids", Counts: minutes(map[int]int{37: 20, 38: 21, 39: 20})},
		{Service: "route", Template: "INFO route query <*>", Counts: minutes(map[int]int{35: 30, 36: 30, 37: 30, 38: 30, 39: 30})},
		{Service: "route", Template: "ERROR route not found <*>", Error: true, Counts: minutes(map[int]int{37: 20, 38: 21, 39: 20})},
	}})
	if cs := others(res.Candidates); len(cs) != 2 || cs[0].Subject != "route" || cs[1].Subject != "basic" {
		t.Fatalf("want route (new errors) then basic (new routine path): %+v", res.Candidates)
	}
}

// TestLatencyMustHold: a percentile that jumps for one bin and is back the
// next is not a slower service; one that stays up is.
func TestLatencyMustHold(t *testing.T) {
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{
		entryLatency("ui"),
		{Service: "blip", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.0235, 0, from(38, 38, 0.9))},
		{Service: "slow", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.02, 0.001, from(37, 40, 0.2))},
	}})
	if len(res.Candidates) == 0 || res.Candidates[0].Subject != "slow" {
		t.Fatalf("want slow first: %+v", res.Candidates)
	}
	for _, c := range res.Candidates {
		if c.Subject == "blip" {
			t.Errorf("a one-bin spike ranked: %+v", c)
		}
	}
}

// TestLevelsMustHold: a CPU, throughput or call mix that jumps for one bin
// and is back the next is a blip, whatever its size; one that stays up is
// a changed state. The last observed bin alone keeps its value.
func TestLevelsMustHold(t *testing.T) {
	for _, sig := range []Signal{SignalCPU, SignalNetwork, SignalTraffic, SignalTraceOps, SignalMemory} {
		t.Run(string(sig), func(t *testing.T) {
			res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{
				entryLatency("ui"),
				{Service: "blip", Metric: "m", Signal: sig, Bad: Up, Points: wave(1, 0.01, from(38, 38, 9))},
				{Service: "steady", Metric: "m", Signal: sig, Bad: Up, Points: wave(1, 0.01, from(37, 40, 1.5))},
				{Service: "late", Metric: "m", Signal: sig, Bad: Up, Points: wave(1, 0.01, from(39, 40, 1.5))},
			}})
			got := map[string]bool{}
			for _, c := range res.Candidates {
				got[c.Subject] = true
			}
			if got["blip"] || !got["steady"] || !got["late"] {
				t.Fatalf("want steady and late (the last bin cannot be judged yet), not blip: %+v", res.Candidates)
			}
		})
	}
	// Errors are sporadic: one bin of them counts.
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{
		entryLatency("ui"),
		{Service: "errs", Metric: "errors", Signal: SignalErrors, Unit: "/s", Bad: Up, Points: wave(0, 0, from(38, 38, 5))},
	}})
	found := false
	for _, c := range res.Candidates {
		found = found || c.Subject == "errs"
	}
	if !found {
		t.Fatalf("a bin of errors counts: %+v", res.Candidates)
	}
}

// TestRecurringExcursions: a series that routinely jumps for a bin or two
// (three or more times in its reference) is judged against those jumps,
// not against the quiet bins between them; one long earlier episode (an
// earlier incident) does not make a series routinely noisy; the asked
// service's own signals are the symptom whatever they did before.
func TestRecurringExcursions(t *testing.T) {
	spikes := func(at []int, v float64, then func(int) (float64, bool)) func(int) (float64, bool) {
		return func(m int) (float64, bool) {
			for _, a := range at {
				if m == a {
					return v, true
				}
			}
			return then(m)
		}
	}
	entry := entryLatency("ui")
	entry.Points = wave(0.2, 0.01, spikes([]int{5, 12, 19, 26}, 1.5, from(37, 40, 1.5)))
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{
		entry,
		// spiky: 5 ms, jumping to 30 ms for a bin four times, now 33 ms.
		{Service: "spiky", Metric: "latency_p50", Signal: SignalLatency, Unit: "s", Bad: Up,
			Points: wave(0.005, 0.0002, spikes([]int{5, 12, 19, 26}, 0.030, from(37, 40, 0.033)))},
		// again: the same level, but its earlier rise was one long episode.
		{Service: "again", Metric: "latency_p50", Signal: SignalLatency, Unit: "s", Bad: Up,
			Points: wave(0.005, 0.0002, func(m int) (float64, bool) {
				if m >= 10 && m <= 16 || m >= 37 {
					return 0.033, true
				}
				return 0, false
			})},
		// jumpy: a node's CPU that spikes twice as high as now, three times.
		{Node: "n1", Metric: "node_cpu", Signal: SignalCPU, Unit: "%", Bad: Up,
			Points: wave(13, 0.2, spikes([]int{4, 9, 15, 22, 27}, 29, from(37, 40, 24)))},
	}})
	if !res.EntryMoved || !res.SymptomOnset.Equal(onset) {
		t.Fatalf("the entry's own latency is the symptom: moved %v at %v", res.EntryMoved, res.SymptomOnset)
	}
	got := map[string]Candidate{}
	for _, c := range res.Candidates {
		got[c.Subject] = c
	}
	if _, ok := got["spiky"]; ok {
		t.Errorf("a jump like its routine ones ranked: %+v", got["spiky"])
	}
	if _, ok := got["n1"]; ok {
		t.Errorf("a node spike lower than its routine ones ranked: %+v", got["n1"])
	}
	if _, ok := got["again"]; !ok {
		t.Errorf("one earlier episode made a series routinely noisy: %+v", res.Candidates)
	}
}

// TestVolumeWeights: a p90 over a handful of requests weighs less than one
// over many; the pod's traffic series says how many.
func TestVolumeWeights(t *testing.T) {
	pod := func(svc, p string, lat, to, rps float64) []Series {
		return []Series{
			{Service: svc, Pod: p, Metric: "pod_server_latency_p90_seconds", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(lat, lat/50, from(37, 40, to))},
			{Service: svc, Pod: p, Metric: "pod_workload_ops", Signal: SignalTraffic, Unit: "/s", Points: wave(rps, rps/50, nil)},
		}
	}
	ms := []Series{entryLatency("ui")}
	ms = append(ms, pod("quiet", "quiet-6d5f7c9b8-abcde", 0.0235, 0.275, 0.1)...) // 6 requests a minute
	ms = append(ms, pod("busy", "busy-7c8d9f6b5-fghij", 0.010, 0.060, 5)...)      // 300 requests a minute
	res := Rank(Input{Window: win, Entry: "ui", Metrics: ms})
	var cs []Candidate
	for _, c := range res.Candidates {
		if c.Subject != "ui" {
			cs = append(cs, c)
		}
	}
	if len(cs) < 2 || cs[0].Subject != "busy" {
		t.Fatalf("want busy first: %+v", res.Candidates)
	}
	for _, c := range res.Candidates {
		if c.Subject == "quiet" && !strings.Contains(c.Explanation, "requests a bin") {
			t.Errorf("quiet's explanation does not say how few requests: %q", c.Explanation)
		}
	}
	// Without the pods' traffic both weigh by their deviation alone.
	var noTraffic []Series
	for _, s := range ms {
		if s.Signal != SignalTraffic {
			noTraffic = append(noTraffic, s)
		}
	}
	res = Rank(Input{Window: win, Entry: "ui", Metrics: noTraffic})
	cs = nil
	for _, c := range res.Candidates {
		if c.Subject != "ui" {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 || cs[0].Subject != "quiet" {
		t.Fatalf("without traffic the larger deviation should lead: %+v", res.Candidates)
	}
}

func TestQuantileOf(t *testing.T) {
	for _, tc := range []struct {
		metric string
		want   float64
	}{
		{"pod_server_latency_p90_seconds", 0.9}, {"service_latency_p99_seconds", 0.99}, {"latency_p95", 0.95},
		{"request_duration_p999_seconds", 0.999}, {"span self time p90", 0.9}, {"latency_quantile_0.5", 0.5},
		{"http_request_duration_seconds", 0}, {"cpu_p", 0}, {"app2p90x", 0},
	} {
		if got := quantileOf(tc.metric); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantileOf(%q) = %v, want %v", tc.metric, got, tc.want)
		}
	}
}

// TestOwnLogExplains: a service whose own log reports failing calls to
// another service does not lead with the code paths it stopped taking.
func TestOwnLogExplains(t *testing.T) {
	logs := []LogTemplate{
		{Service: "web", Template: "info rendered page <*>", Counts: minutes(map[int]int{35: 300, 36: 310, 37: 3, 38: 2, 39: 2})},
		{Service: "web", Template: "info health ok", Counts: minutes(map[int]int{35: 10, 36: 10, 37: 10, 38: 10, 39: 10})},
		{Service: "web", Template: "error upstream catalog responded <*>", Error: true, Outbound: true, Counts: minutes(map[int]int{37: 50, 38: 52, 39: 49})},
		{Service: "cart", Template: "info cart read <*>", Counts: minutes(map[int]int{35: 30, 36: 30, 37: 30, 38: 30, 39: 30})},
		{Service: "cart", Template: "error cart store timeout <*>", Error: true, Counts: minutes(map[int]int{37: 2, 38: 1, 39: 1})},
	}
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Logs: logs})
	var order []string
	for _, c := range res.Candidates {
		if c.Subject != "ui" {
			order = append(order, c.Subject)
		}
	}
	if len(order) < 2 || order[0] != "cart" {
		t.Fatalf("want cart (its own errors) before web (failing calls elsewhere): %v %+v", order, res.Candidates)
	}
}

// TestLatencyAddsUp: a callee 20 ms slower does not explain away a caller
// 400 ms slower; a callee slower by a comparable amount does.
func TestLatencyAddsUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		calleeTo  float64
		explained bool
	}{
		{"a small callee rise leaves the caller standing", 0.025, false},
		{"a comparable callee rise explains the caller", 0.45, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Rank(Input{Window: win, Entry: "frontend", Edges: []Edge{{"frontend", "checkout"}, {"checkout", "currency"}}, Metrics: []Series{
				entryLatency("frontend"),
				{Service: "checkout", Caller: "frontend", Metric: "edge latency p50", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.2, 0.02, from(37, 40, 0.6))},
				{Service: "currency", Caller: "checkout", Metric: "edge latency p50", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.005, 0.0005, from(37, 40, tc.calleeTo))},
			}})
			c := candidate(t, res, "checkout")
			if got := strings.Contains(c.Explanation, "explained by currency"); got != tc.explained {
				t.Fatalf("checkout explained by currency = %v, want %v: %q", got, tc.explained, c.Explanation)
			}
		})
	}
}

// TestNewPathsFollowTheCaller: when a caller starts taking a code path
// again, every service it calls logs new routine lines too; those follow
// the caller's change and do not outrank it.
func TestNewPathsFollowTheCaller(t *testing.T) {
	logs := []LogTemplate{
		// travel: its error path gives way to the path that calls seat.
		{Service: "travel", Template: "INFO query trips <*>", Counts: minutes(map[int]int{35: 30, 36: 30, 37: 30, 38: 30, 39: 30})},
		{Service: "travel", Template: "INFO rest tickets num <*>", Counts: minutes(map[int]int{37: 10, 38: 9, 39: 10})},
		// seat and order, which travel calls, log many more new lines.
		{Service: "seat", Template: "INFO seat health", Counts: minutes(map[int]int{35: 5, 36: 5, 37: 5, 38: 5, 39: 5})},
		{Service: "seat", Template: "INFO left ticket of interval <*>", Counts: minutes(map[int]int{37: 40, 38: 41, 39: 40})},
		{Service: "order", Template: "INFO order health", Counts: minutes(map[int]int{35: 5, 36: 5, 37: 5, 38: 5, 39: 5})},
		{Service: "order", Template: "INFO sold tickets <*>", Counts: minutes(map[int]int{37: 40, 38: 40, 39: 41})},
	}
	edges := []Edge{{"ui", "travel"}, {"travel", "seat"}, {"seat", "order"}}
	res := Rank(Input{Window: win, Entry: "ui", Edges: edges, Metrics: []Series{entryLatency("ui")}, Logs: logs})
	var order []string
	for _, c := range res.Candidates {
		if c.Subject != "ui" {
			order = append(order, c.Subject)
		}
	}
	if len(order) == 0 || order[0] != "travel" {
		t.Fatalf("want travel (the caller whose path changed) first: %v %+v", order, res.Candidates)
	}
	// Without the call graph the louder callees lead.
	res = Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Logs: logs})
	for _, c := range res.Candidates {
		if c.Subject != "ui" {
			if c.Subject == "travel" {
				t.Fatalf("without edges travel should not lead: %+v", res.Candidates)
			}
			break
		}
	}
}

func TestWilsonLower(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 0, 0, 0}, {0, 50, 0, 0}, {1, 1, 0.20, 0.21}, {5, 5, 0.56, 0.57},
		{50, 50, 0.92, 0.93}, {10, 100, 0.055, 0.056}, {7, 3, 0.43, 0.44},
	} {
		if got := WilsonLower(tc.k, tc.n); got < tc.lo || got > tc.hi {
			t.Errorf("WilsonLower(%d, %d) = %.4f, want in [%v, %v]", tc.k, tc.n, got, tc.lo, tc.hi)
		}
	}
}

// TestEntryBlipIsNoSymptom: a one-bin latency blip at the asked service
// does not mark it as moved nor set the symptom's onset; the onset comes
// from the other services' episodes.
func TestEntryBlipIsNoSymptom(t *testing.T) {
	res := Rank(Input{Window: win, Entry: "frontend", Metrics: []Series{
		{Service: "frontend", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.2, 0.01, from(38, 38, 1.5))},
		{Service: "cart", Metric: "latency_p90", Signal: SignalLatency, Unit: "s", Bad: Up, Points: wave(0.02, 0.001, from(37, 40, 0.3))},
	}})
	if res.EntryMoved {
		t.Errorf("a one-bin blip marked the entry as moved: %q", res.EntryEvidence)
	}
	if !res.SymptomOnset.Equal(onset) {
		t.Errorf("symptom onset %s, want %s (cart's)", res.SymptomOnset, onset)
	}
}

// TestNodeThroughputIsWhereLoadWent: a node's network throughput surging
// with the symptom says where load went; a service's new errors at the
// same minute lead.
func TestNodeThroughputIsWhereLoadWent(t *testing.T) {
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{
		entryLatency("ui"),
		{Node: "node-7", Metric: "node_network_receive_bytes_per_second", Signal: SignalNetwork, Unit: "bytes/s", Bad: Both, Points: wave(52e3, 2e3, from(37, 40, 10e6))},
	}, Logs: []LogTemplate{
		{Service: "contacts", Template: "INFO find contacts <*>", Counts: minutes(map[int]int{35: 20, 36: 20, 37: 20, 38: 20, 39: 20})},
		{Service: "contacts", Template: "ERROR no contacts found <*>", Error: true, Counts: minutes(map[int]int{37: 7, 38: 7, 39: 7})},
	}})
	var order []string
	for _, c := range res.Candidates {
		if c.Subject != "ui" {
			order = append(order, c.Subject)
		}
	}
	if len(order) < 2 || order[0] != "contacts" {
		t.Fatalf("want contacts before node-7: %v %+v", order, res.Candidates)
	}
}

// TestLogSplitNeedsAReference: an error template that was already there in
// the service's first logged minute is not new because a split before
// that minute leaves nothing to compare with.
func TestLogSplitNeedsAReference(t *testing.T) {
	logs := []LogTemplate{
		// order's log starts at minute 36 and already holds its warning.
		{Service: "order", Template: "INFO get order <*>", Counts: minutes(map[int]int{36: 2, 37: 40, 38: 41, 39: 40})},
		{Service: "order", Template: "WARN order not found <*>", Error: true, Counts: minutes(map[int]int{36: 2, 37: 4, 38: 4, 39: 3})},
		// contacts' errors are new against its earlier minutes.
		{Service: "contacts", Template: "INFO find contacts <*>", Counts: minutes(map[int]int{35: 20, 36: 20, 37: 20, 38: 20, 39: 20})},
		{Service: "contacts", Template: "ERROR no contacts found <*>", Error: true, Counts: minutes(map[int]int{37: 3, 38: 3, 39: 3})},
	}
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Logs: logs})
	for _, c := range res.Candidates {
		if c.Subject == "order" {
			t.Fatalf("order's warning, present from its first minute, ranked: %+v", c)
		}
	}
}

// TestErrorsGiveWayOnlyToErrors: a caller's error spans are explained by a
// callee that failed with them (its errors, a new error template), not by a
// callee that merely logs a routine line it had not logged before (a new
// mix of requests reaching it).
func TestErrorsGiveWayOnlyToErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		calleeErr bool
		explained bool
	}{
		{"a callee's new routine template leaves the caller's errors standing", false, false},
		{"a callee's new error template explains the caller's errors", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Rank(Input{Window: win, Entry: "ui", Edges: []Edge{{"ui", "travel"}, {"travel", "seat"}}, Metrics: []Series{
				entryLatency("ui"),
				{Service: "travel", Metric: "error spans per request", Signal: SignalTraceErr, Unit: "ratio", Bad: Up, Points: wave(0, 0, from(37, 40, 0.5))},
			}, Logs: []LogTemplate{
				{Service: "seat", Template: "INFO seat health", Counts: minutes(map[int]int{35: 5, 36: 5, 37: 5, 38: 5, 39: 5})},
				{Service: "seat", Template: "INFO train number start with <*>", Error: tc.calleeErr, Counts: minutes(map[int]int{37: 40, 38: 41, 39: 40})},
			}})
			c := candidate(t, res, "travel")
			if got := strings.Contains(c.Explanation, "explained by seat"); got != tc.explained {
				t.Fatalf("travel explained by seat = %v, want %v: %q", got, tc.explained, c.Explanation)
			}
		})
	}
}

// TestRoutineFallExactTail: a routine line that falls to almost nothing
// while its service logs as much as before is judged by the exact Poisson
// lower tail of what its share predicts (as an operation's steps are): one
// line where ~37 were expected is far beyond three deviations even at the
// half weight of a routine template, where the normal approximation
// understates it.
func TestRoutineFallExactTail(t *testing.T) {
	logs := []LogTemplate{
		{Service: "route", Template: "INFO query route by ids [<*>]", Counts: minutes(map[int]int{33: 12, 34: 12, 35: 12, 36: 12, 37: 1, 38: 0, 39: 0})},
		{Service: "route", Template: "INFO query route by id <*>", Counts: minutes(map[int]int{33: 10, 34: 10, 35: 10, 36: 10, 37: 22, 38: 22, 39: 23})},
	}
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Logs: logs})
	for _, c := range res.Candidates {
		if c.Subject == "route" {
			if !strings.Contains(c.Explanation, "(fell)") {
				t.Fatalf("route's candidate is not the fall: %q", c.Explanation)
			}
			return
		}
	}
	t.Fatalf("route's stopped line not ranked: %+v", res.Candidates)
}

// TestCallerErrorsStartNoPath: a routine line new at a callee follows a
// change of what its caller does (a flow that starts there), not the
// caller's errors: a caller that begins to fail stops what it does. The
// callee's new line keeps its weight and is not "follows a change at" the
// failing caller.
func TestCallerErrorsStartNoPath(t *testing.T) {
	for _, tc := range []struct {
		name      string
		callerErr bool
		follows   bool
	}{
		{"a caller's new routine path: the callee's new line follows it", false, true},
		{"a caller's new error: the callee's new line is its own", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Rank(Input{Window: win, Entry: "ui", Edges: []Edge{{"ui", "orders"}, {"orders", "tax"}}, Metrics: []Series{entryLatency("ui")}, Logs: []LogTemplate{
				{Service: "orders", Template: "INFO orders health", Counts: minutes(map[int]int{35: 200, 36: 200, 37: 200, 38: 200, 39: 200})},
				{Service: "orders", Template: "place order <*> quote has <*> lines", Error: tc.callerErr, Counts: minutes(map[int]int{37: 30, 38: 31, 39: 30})},
				{Service: "tax", Template: "INFO tax health", Counts: minutes(map[int]int{35: 200, 36: 200, 37: 200, 38: 200, 39: 200})},
				{Service: "tax", Template: "no jurisdiction for destination, returning quote without lines", Counts: minutes(map[int]int{37: 20, 38: 20, 39: 21})},
			}})
			c := candidate(t, res, "tax")
			if got := strings.Contains(c.Explanation, "follows a change at orders"); got != tc.follows {
				t.Fatalf("tax follows orders = %v, want %v: %q", got, tc.follows, c.Explanation)
			}
		})
	}
}

// TestEntryExplainedBy: the entry's own error episode explained by a
// callee that failed with it is reported as that callee's consequence;
// an entry episode that stands alone is not.
func TestEntryExplainedBy(t *testing.T) {
	entryErrs := Series{Service: "ui", Metric: "requests (500)", Signal: SignalErrors, Unit: "/s", Bad: Up, Points: wave(0, 0, from(37, 40, 5))}
	for _, tc := range []struct {
		name       string
		calleeErrs bool
		want       string
	}{
		{"a callee's errors explain the entry's", true, "loyalty"},
		{"the entry's errors stand alone", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := []Series{entryErrs, {Service: "loyalty", Metric: "cpu", Signal: SignalCPU, Unit: "cores", Bad: Up, Points: wave(0.5, 0.01, nil)}}
			if tc.calleeErrs {
				ms = append(ms, Series{Service: "loyalty", Metric: "requests (500)", Signal: SignalErrors, Unit: "/s", Bad: Up, Points: wave(0, 0, from(37, 40, 5))})
			}
			res := Rank(Input{Window: win, Entry: "ui", Edges: []Edge{{"ui", "loyalty"}}, Metrics: ms})
			if !res.EntryMoved {
				t.Fatalf("entry did not move: %+v", res)
			}
			if res.EntryExplainedBy != tc.want {
				t.Fatalf("EntryExplainedBy = %q, want %q: %+v", res.EntryExplainedBy, tc.want, res.Candidates)
			}
		})
	}
}

// TestIdleServiceIsOnNoPath: a service that served no request in the whole
// window (its request rate reads zero throughout, no trace reached it) is
// on no request's path: its memory doubling with the symptom gives way to
// a service the requests reach whose own log began to fail. One that
// served requests (a non-zero rate, a call edge, or a rate that fell to
// zero during the window: it went down) keeps its weight.
func TestIdleServiceIsOnNoPath(t *testing.T) {
	zero := wave(0, 0, nil)
	for _, tc := range []struct {
		name    string
		traffic []evidence.Point
		edges   []Edge
		leader  string
	}{
		{"no request all window: idle", zero, nil, "verif"},
		{"requests served: not idle", wave(0.4, 0.05, nil), nil, "office"},
		{"a call edge reaches it: not idle", zero, []Edge{{"ui", "office"}, {"ui", "verif"}}, "office"},
		{"went down during the window: not idle", wave(0.4, 0.05, from(33, 40, 0)), nil, "office"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Rank(Input{Window: win, Entry: "ui", Edges: tc.edges, Metrics: []Series{
				entryLatency("ui"),
				{Service: "office", Pod: "office-1", Metric: "memory_working_set_bytes", Signal: SignalMemory, Unit: "bytes", Bad: Up, Points: wave(48e6, 0, from(37, 40, 96e6))},
				{Service: "office", Pod: "office-1", Metric: "pod_workload_ops", Signal: SignalTraffic, Unit: "/s", Bad: Both, Points: tc.traffic},
			}, Logs: []LogTemplate{
				{Service: "verif", Template: "INFO verify code <*>", Counts: minutes(map[int]int{34: 6, 35: 6, 36: 6, 37: 6, 38: 6, 39: 6})},
				{Service: "verif", Template: "ERROR code not found", Error: true, Counts: minutes(map[int]int{37: 2, 38: 2, 39: 2})},
			}})
			var order []string
			for _, c := range res.Candidates {
				if c.Subject != "ui" {
					order = append(order, c.Subject)
				}
			}
			if len(order) == 0 || order[0] != tc.leader {
				t.Fatalf("leader %v, want %s first: %+v", order, tc.leader, res.Candidates)
			}
			if tc.leader == "verif" {
				for _, c := range res.Candidates {
					if c.Subject == "office" && !strings.Contains(c.Explanation, "served no request") {
						t.Errorf("idle office's explanation does not say why it weighs less: %q", c.Explanation)
					}
				}
			}
		})
	}
}
