package evidence

import (
	"slices"
	"testing"
)

func TestMetricIDKey(t *testing.T) {
	for _, c := range []struct {
		name string
		id   MetricID
		want string
	}{
		{"no dimensions", MetricID{Namespace: "AWS/RDS", Name: "CPUUtilization"}, "AWS/RDS\x00CPUUtilization"},
		{"dimensions in name order", MetricID{Namespace: "AWS/ELB", Name: "Latency", Dimensions: map[string]string{"Zone": "a", "LoadBalancer": "web"}},
			"AWS/ELB\x00Latency\x00LoadBalancer=web\x00Zone=a"},
	} {
		if got := c.id.Key(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	ids := []MetricID{
		{Namespace: "B", Name: "a"},
		{Namespace: "A", Name: "z"},
		{Namespace: "A", Name: "b", Dimensions: map[string]string{"k": "2"}},
		{Namespace: "A", Name: "b", Dimensions: map[string]string{"k": "1"}},
	}
	slices.SortFunc(ids, func(a, b MetricID) int {
		if a.Key() < b.Key() {
			return -1
		}
		return 1
	})
	var got []string
	for _, id := range ids {
		got = append(got, id.Namespace+"/"+id.Name+"/"+id.Dimensions["k"])
	}
	if want := []string{"A/b/1", "A/b/2", "A/z/", "B/a/"}; !slices.Equal(got, want) {
		t.Errorf("sorted by key: %v, want %v", got, want)
	}
}
