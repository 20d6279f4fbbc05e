package mergeconf

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Number reads a JSON number from a config document, whether it was
// decoded as json.Number (Decode uses UseNumber), float64 or an int.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case float64:
		return n, !math.IsInf(n, 0) && !math.IsNaN(n)
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// Seconds reads doc[key] as a positive number of seconds: 0 and no error
// when absent, an error saying what is wanted otherwise.
func Seconds(doc map[string]any, key string) (time.Duration, error) {
	v, ok := doc[key]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := Number(v)
	if !ok {
		return 0, fmt.Errorf("want a number of seconds, got %T", v)
	}
	if f <= 0 || f > 86400*365 {
		return 0, fmt.Errorf("want a positive number of seconds")
	}
	return time.Duration(f * float64(time.Second)), nil
}
