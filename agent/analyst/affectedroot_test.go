package analyst

import (
	"slices"
	"testing"
)

// TestAffectedNamesTheRoot checks that the root's own subject leads the
// affected systems even when no other evidence names it (a managed cache
// node known only from the slow-log entries it delivered), that a name that
// failed to resolve is not listed as broken, and that a system the
// mechanism clears stays out.
func TestAffectedNamesTheRoot(t *testing.T) {
	known := Scope{Service: "cart-api", Known: map[string]bool{"cart-api": true, "session-sweeper": true}}
	cases := []struct {
		name string
		h    Hypothesis
		want []string
		not  []string
	}{
		{"a node only its own log names", Hypothesis{Kind: KindBlockingCommand, Subject: "cart-sessions-prod-0001-001"},
			[]string{"cart-sessions-prod-0001-001", "cart-api"}, nil},
		{"a name that did not resolve", Hypothesis{Kind: KindDNS, Subject: "payments-gw"},
			[]string{"cart-api"}, []string{"payments-gw"}},
		{"a subject the mechanism clears", Hypothesis{Kind: KindBlockingCommand, Subject: "cart-redis",
			Primary: []*Finding{{Kind: KindBlockingCommand, Subject: "cart-redis", Facts: map[string]string{"not_at_fault": "cart-redis"}}}},
			[]string{"cart-api"}, []string{"cart-redis"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := affected(&c.h, known)
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("affected = %v, want %q in it", got, w)
				}
			}
			if len(c.want) > 0 && len(got) > 0 && c.h.Kind != KindDNS && len(c.not) == 0 && got[0] != c.h.Subject {
				t.Errorf("affected = %v, want the root %q first", got, c.h.Subject)
			}
			for _, n := range c.not {
				if slices.Contains(got, n) {
					t.Errorf("affected = %v, want no %q", got, n)
				}
			}
		})
	}
}
