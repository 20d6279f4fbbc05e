package tracegraph

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Percentiles summarise a set of durations.
type Percentiles struct {
	Count int
	Mean  time.Duration
	P50   time.Duration
	P90   time.Duration
	P99   time.Duration
	Max   time.Duration
}

// MarshalJSON writes milliseconds, which read better than nanoseconds.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	return json.Marshal(struct {
		Count int     `json:"count"`
		Mean  float64 `json:"mean_ms"`
		P50   float64 `json:"p50_ms"`
		P90   float64 `json:"p90_ms"`
		P99   float64 `json:"p99_ms"`
		Max   float64 `json:"max_ms"`
	}{p.Count, ms(p.Mean), ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max)})
}

// gamma is the ratio between histogram bucket bounds: estimates are within
// (gamma-1)/(gamma+1) ≈ 1% of the true value.
const gamma = 1.02

var lnGamma = math.Log(gamma)

// hist is a log-bucketed histogram of durations (the DDSketch idea): its
// memory depends on the range of values, not their number.
type hist struct {
	buckets map[int32]uint32
	zero    int // values ≤ 0 ns
	n       int
	sum     float64
	max     int64
}

func (h *hist) add(ns int64) {
	h.n++
	h.sum += float64(ns)
	h.max = max(h.max, ns)
	if ns <= 0 {
		h.zero++
		return
	}
	if h.buckets == nil {
		h.buckets = map[int32]uint32{}
	}
	h.buckets[int32(math.Ceil(math.Log(float64(ns))/lnGamma))]++
}

func (h *hist) percentiles() Percentiles {
	if h.n == 0 {
		return Percentiles{}
	}
	keys := make([]int32, 0, len(h.buckets))
	for k := range h.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	q := func(p float64) time.Duration {
		rank := int(math.Ceil(p * float64(h.n)))
		if rank <= h.zero {
			return 0
		}
		seen := h.zero
		for _, k := range keys {
			seen += int(h.buckets[k])
			if seen >= rank {
				v := 2 * math.Pow(gamma, float64(k)) / (gamma + 1)
				return time.Duration(min(int64(math.Round(v)), h.max))
			}
		}
		return time.Duration(h.max)
	}
	return Percentiles{
		Count: h.n,
		Mean:  time.Duration(math.Round(h.sum / float64(h.n))),
		P50:   q(0.50),
		P90:   q(0.90),
		P99:   q(0.99),
		Max:   time.Duration(h.max),
	}
}
