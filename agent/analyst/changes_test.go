package analyst

import "testing"

// TestScalingOnly tells changes that only set a replica count from those
// that ship something (or scale to zero).
func TestScalingOnly(t *testing.T) {
	cases := []struct {
		desc string
		want bool
	}{
		{"HPA minReplicas 2 -> 6 ahead of the Black Friday campaign", true},
		{"scale out checkout to 12 replicas", true},
		{"helm values refactor: cart-api replicas -> 0", false},
		{"checkout 2.4.1: new payment flow", false},
		{"resource right-sizing: requests/limits cpu 1 -> 250m", false},
		{"bump replicas and image to v1.2.0", false},
	}
	for _, c := range cases {
		f := &Finding{Kind: KindConfigChange, Summary: "config change", Facts: map[string]string{"description": c.desc}}
		if got := scalingOnly(f); got != c.want {
			t.Errorf("scalingOnly(%q) = %v, want %v", c.desc, got, c.want)
		}
	}
}
