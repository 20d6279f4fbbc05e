package tools

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Output bounds. Tools cap what they return so that one call cannot flood
// an agent; Bound cuts any result to a byte budget for the LLM loop.
const (
	MaxListItems     = 200  // Kubernetes objects per list
	DefaultLogLines  = 200  // get_pod_logs lines when limit is omitted
	MaxLogLines      = 2000 // get_pod_logs lines at most
	MaxSeries        = 100  // series per Prometheus query
	MaxLabelSets     = 500  // list_metrics label sets
	TargetPoints     = 240  // points per series of an automatic step
	MaxRangePoints   = 2000 // points per series of prometheus_query_range
	DefaultMaxOutput = 32 << 10
)

// capList keeps the first n items and reports whether any were cut.
func capList[T any](items []T, n int) ([]T, bool) {
	if len(items) <= n {
		return items, false
	}
	return items[:n], true
}

// capPreferring keeps at most n items, taking those for which keep is true
// first, and preserves the original order.
func capPreferring[T any](items []T, n int, keep func(*T) bool) []T {
	if len(items) <= n {
		return items
	}
	idx := make([]int, 0, n)
	for i := range items {
		if len(idx) < n && keep(&items[i]) {
			idx = append(idx, i)
		}
	}
	for i := range items {
		if len(idx) >= n {
			break
		}
		if !keep(&items[i]) {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	out := make([]T, 0, n)
	for _, i := range idx {
		out = append(out, items[i])
	}
	return out
}

// Bound serialises v within maxBytes (DefaultMaxOutput when 0). When the
// JSON is larger, the longest array is cut (for a top-level array, the
// result becomes {"items": [...], "truncated": true, "note": ...}; for an
// object, the array field is cut and "truncated" and "note" fields are
// added); a result with no array to cut becomes a string prefix with a
// note. The output is always valid JSON.
func Bound(v any, maxBytes int) (json.RawMessage, bool) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOutput
	}
	full, err := json.Marshal(v)
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": "result cannot be encoded: " + err.Error()})
		return b, true
	}
	if len(full) <= maxBytes {
		return full, false
	}
	var g any
	_ = json.Unmarshal(full, &g)
	switch x := g.(type) {
	case []any:
		if out, ok := fitArray(x, maxBytes, func(items []any, kept int) any {
			return map[string]any{"items": items, "truncated": true,
				"note": fmt.Sprintf("showing %d of %d items; narrow the query (namespace, selector, window, pattern) to see the rest", kept, len(x))}
		}); ok {
			return out, true
		}
	case map[string]any:
		key, size := "", 0
		for k, val := range x {
			if arr, ok := val.([]any); ok {
				b, _ := json.Marshal(arr)
				if len(b) > size {
					key, size = k, len(b)
				}
			}
		}
		if key != "" {
			arr := x[key].([]any)
			if out, ok := fitArray(arr, maxBytes, func(items []any, kept int) any {
				y := make(map[string]any, len(x)+2)
				for k, val := range x {
					y[k] = val
				}
				y[key] = items
				y["truncated"] = true
				y["note"] = fmt.Sprintf("%s: showing %d of %d; narrow the query to see the rest", key, kept, len(arr))
				return y
			}); ok {
				return out, true
			}
		}
	}
	cut := string(full[:max(0, maxBytes-200)])
	b, _ := json.Marshal(map[string]any{"truncated": true, "note": fmt.Sprintf("output cut at %d of %d bytes", len(cut), len(full)), "prefix": cut})
	return b, true
}

// fitArray finds the most leading items of arr whose wrapped encoding fits.
func fitArray(arr []any, maxBytes int, wrap func([]any, int) any) (json.RawMessage, bool) {
	enc := func(n int) []byte {
		b, _ := json.Marshal(wrap(arr[:n], n))
		return b
	}
	if len(enc(0)) > maxBytes {
		return nil, false
	}
	lo, hi := 0, len(arr) // lo fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(enc(mid)) <= maxBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return enc(lo), true
}
