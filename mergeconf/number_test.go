package mergeconf

import (
	"encoding/json"
	"testing"
	"time"
)

func TestNumberAndSeconds(t *testing.T) {
	tests := []struct {
		name    string
		v       any
		want    time.Duration
		wantErr bool
	}{
		{"Absent", nil, 0, false},
		{"JSONNumber", json.Number("30"), 30 * time.Second, false},
		{"JSONNumberFraction", json.Number("1.5"), 1500 * time.Millisecond, false},
		{"Float", 45.0, 45 * time.Second, false},
		{"Int", 7, 7 * time.Second, false},
		{"Zero", json.Number("0"), 0, true},
		{"Negative", -3.0, 0, true},
		{"String", "30", 0, true},
		{"Garbage", json.Number("x"), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := map[string]any{}
			if tt.v != nil {
				doc["timeout"] = tt.v
			}
			got, err := Seconds(doc, "timeout")
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Seconds(%v) = %v, %v; want %v, error %v", tt.v, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
