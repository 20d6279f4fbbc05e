package localize

import (
	"math"
	"strings"
	"testing"
)

// calls returns n calls per minute for minutes a..b.
func callsPer(a, b, n int) map[int64]int {
	m := map[int]int{}
	for i := a; i <= b; i++ {
		m[i] = n
	}
	return minutes(m)
}

func TestOpEvents(t *testing.T) {
	// Calls of each operation from minute 30 to 40; the symptom at 37.
	steady := callsPer(30, 40, 10)
	halved := minutes(map[int]int{30: 10, 31: 10, 32: 10, 33: 10, 34: 10, 35: 10, 36: 10, 37: 5, 38: 5, 39: 5, 40: 5})
	tests := []struct {
		name   string
		ops    []OpEvent
		edges  []Edge
		first  string // "" for no candidate
		absent []string
		words  []string
	}{
		{
			name: "a step an operation always took stops while its calls go on",
			ops: []OpEvent{
				{Service: "price", Operation: "PriceController.query", Event: "INFO query price by route", Log: true, Calls: steady, Counts: callsPer(30, 36, 10)},
				{Service: "price", Operation: "PriceController.query", Event: "INFO query one price", Log: true, Calls: steady, Counts: callsPer(30, 40, 10)},
			},
			first: "price", words: []string{"PriceController.query", "0 times in its 40 calls", "fell"},
		},
		{
			name: "traffic halving halves the events: per call nothing changed",
			ops: []OpEvent{
				{Service: "cart", Operation: "GET /cart", Event: "INFO read cart", Log: true, Calls: halved,
					Counts: minutes(map[int]int{30: 10, 31: 10, 32: 10, 33: 10, 34: 10, 35: 10, 36: 10, 37: 5, 38: 5, 39: 5, 40: 5})},
			},
			absent: []string{"cart"},
		},
		{
			name: "an error path that stops is a recovery",
			ops: []OpEvent{
				{Service: "auth", Operation: "POST /login", Event: "ErrorController.error", Error: true, Calls: steady, Counts: callsPer(30, 36, 5)},
			},
			absent: []string{"auth"},
		},
		{
			name: "a handful of calls after the split proves nothing",
			ops: []OpEvent{
				{Service: "route", Operation: "GET /route", Event: "INFO route", Log: true,
					Calls: minutes(map[int]int{30: 10, 31: 10, 32: 10, 33: 10, 34: 10, 35: 10, 36: 10, 37: 1, 38: 1}), Counts: callsPer(30, 36, 10)},
			},
			absent: []string{"route"},
		},
		{
			name:  "the caller that stops after its callee stopped gives way to it",
			edges: []Edge{{"travel", "price"}},
			ops: []OpEvent{
				// travel's own later call stops as strongly as price's step.
				{Service: "travel", Operation: "TravelController.query", Event: "seat POST /seats", Calls: steady, Counts: callsPer(30, 36, 10)},
				{Service: "price", Operation: "PriceController.query", Event: "INFO query price by route", Log: true, Calls: steady, Counts: callsPer(30, 36, 10)},
			},
			first: "price", words: []string{"price"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Ops: tt.ops, Edges: tt.edges}
			res := Rank(in)
			var top *Candidate
			for i := range res.Candidates {
				if res.Candidates[i].Subject != "ui" {
					top = &res.Candidates[i]
					break
				}
			}
			if tt.first != "" {
				if top == nil || top.Subject != tt.first {
					t.Fatalf("first = %+v, want %s; all %+v", top, tt.first, res.Candidates)
				}
				if top.Signal != SignalOpEvents {
					t.Errorf("signal = %s, want %s", top.Signal, SignalOpEvents)
				}
				for _, w := range tt.words {
					if !strings.Contains(top.Explanation, w) {
						t.Errorf("explanation %q lacks %q", top.Explanation, w)
					}
				}
			}
			for _, a := range tt.absent {
				for _, c := range res.Candidates {
					if c.Subject == a {
						t.Errorf("%s ranked (%s), want no candidate", a, c.Explanation)
					}
				}
			}
		})
	}
}

func TestCallerStopFollowsCallee(t *testing.T) {
	steady := callsPer(30, 40, 10)
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Edges: []Edge{{"travel", "price"}},
		Ops: []OpEvent{
			{Service: "travel", Operation: "TravelController.query", Event: "seat POST /seats", Calls: steady, Counts: callsPer(30, 36, 10)},
			{Service: "price", Operation: "PriceController.query", Event: "INFO query price", Log: true, Calls: steady, Counts: callsPer(30, 36, 10)},
		}})
	for _, c := range res.Candidates {
		if c.Subject == "travel" && !strings.Contains(c.Explanation, "follows a change at price") {
			t.Errorf("travel: %q, want it to follow price", c.Explanation)
		}
	}
}

func TestPoissonLowZ(t *testing.T) {
	tests := []struct {
		k      int
		e      float64
		lo, hi float64
	}{
		{0, 8.4, 3.4, 3.6},   // P = e^-8.4 ≈ 2.2e-4
		{5, 3, 0, 0},         // more than expected
		{2, 2.5, 0, 0},       // P(X<=2) ≈ 0.54: no evidence
		{0, 100, 13.5, 14.5}, // far in the tail, no overflow
		{10, 40, 5, 6},
	}
	for _, tt := range tests {
		z := poissonLowZ(tt.k, tt.e)
		if math.IsNaN(z) || math.IsInf(z, 0) || z < tt.lo || z > tt.hi {
			t.Errorf("poissonLowZ(%d, %v) = %v, want in [%v, %v]", tt.k, tt.e, z, tt.lo, tt.hi)
		}
	}
	if a, b := poissonLowZ(0, 5), poissonLowZ(0, 6); a >= b {
		t.Errorf("not monotone in e: %v >= %v", a, b)
	}
}

func TestOpBranchSwitch(t *testing.T) {
	// seat's handler logs "train type other" less per call since minute 37
	// and "train type G" more: another kind of request, not a step cut
	// short. price's step stops with nothing taken instead.
	steady := callsPer(30, 40, 10)
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui")}, Ops: []OpEvent{
		{Service: "seat", Operation: "SeatController.left", Event: "INFO train type other", Log: true, Calls: steady, Counts: callsPer(30, 36, 10)},
		{Service: "seat", Operation: "SeatController.left", Event: "INFO train type G", Log: true, Calls: steady, Counts: callsPer(37, 40, 10)},
		{Service: "seat", Operation: "SeatController.left", Event: "ERROR seat lookup failed", Log: true, Error: true, Calls: steady, Counts: callsPer(30, 40, 1)},
		{Service: "price", Operation: "PriceController.query", Event: "INFO query price", Log: true, Calls: steady, Counts: callsPer(30, 36, 10)},
		{Service: "price", Operation: "PriceController.query", Event: "ERROR price not found", Log: true, Error: true, Calls: steady, Counts: callsPer(37, 40, 10)},
	}})
	scores := map[string]Candidate{}
	for _, c := range res.Candidates {
		scores[c.Subject] = c
	}
	seat, price := scores["seat"], scores["price"]
	if price.Score == 0 || seat.Score >= price.Score {
		t.Fatalf("seat %v (%s) should rank below price %v (%s)", seat.Score, seat.Explanation, price.Score, price.Explanation)
	}
	if !strings.Contains(seat.Explanation, "another step more often instead: INFO train type G") {
		t.Errorf("seat: %q, want the branch it took instead", seat.Explanation)
	}
	if strings.Contains(price.Explanation, "instead") {
		t.Errorf("price: %q, an error thrown instead of the step is the fault, not a branch", price.Explanation)
	}
}

func TestCallerDepartureFollowsCallee(t *testing.T) {
	// travel's own span time rises and a routine template of it is new
	// when basic, which it calls, starts logging an exception: travel's
	// handling of the failure follows basic's.
	self := Series{Service: "travel", Metric: "span self time p90", Signal: SignalTraceLat, Unit: "s", Bad: Up,
		Points: wave(0.010, 0.001, from(37, 40, 0.080))}
	logs := []LogTemplate{
		{Service: "basic", Template: "INFO query for travel", Counts: minutes(map[int]int{30: 20, 31: 20, 32: 20, 33: 20, 34: 20, 35: 20, 36: 20, 37: 20, 38: 20, 39: 20, 40: 20})},
		{Service: "basic", Template: "ERROR catch price exception", Error: true, Counts: minutes(map[int]int{37: 6, 38: 6, 39: 6, 40: 6})},
		{Service: "travel", Template: "INFO query trips", Counts: minutes(map[int]int{30: 20, 31: 20, 32: 20, 33: 20, 34: 20, 35: 20, 36: 20, 37: 20, 38: 20, 39: 20, 40: 20})},
		{Service: "travel", Template: "INFO trip without price", Counts: minutes(map[int]int{37: 8, 38: 8, 39: 8, 40: 8})},
	}
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui"), self}, Logs: logs,
		Edges: []Edge{{"ui", "travel"}, {"travel", "basic"}}})
	var first *Candidate
	for i := range res.Candidates {
		if res.Candidates[i].Subject != "ui" {
			first = &res.Candidates[i]
			break
		}
	}
	if first == nil || first.Subject != "basic" {
		t.Fatalf("first = %+v, want basic; all %+v", first, res.Candidates)
	}
	for _, c := range res.Candidates {
		if c.Subject == "travel" && !strings.Contains(c.Explanation, "follows a change at basic") {
			t.Errorf("travel: %q, want it to follow basic", c.Explanation)
		}
	}
}
