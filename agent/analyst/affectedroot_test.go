package analyst

import (
	"slices"
	"testing"
)

// TestAffectedNamesTheRoot checks that the root's own subject leads the
// affected systems even when no other evidence names it (a managed cache
// node known only from the slow-log entries it delivered), that a name that
// failed to resolve is not listed as broken, that a system the mechanism
// clears stays out, and that the systems a mechanism names as involved (a
// producer, a throttled bucket) are listed though no object bears their
// name.
func TestAffectedNamesTheRoot(t *testing.T) {
	known := Scope{Service: "cart-api", Known: map[string]bool{"cart-api": true, "session-sweeper": true, "superset": true, "airflow": true},
		Message:  "installed superset 20 min ago and the postgres pod never starts",
		Releases: map[string]string{"superset-postgresql": "superset", "airflow-postgresql": "airflow"}}
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
		{"a producer the mechanism names, no other evidence naming it", Hypothesis{Kind: KindDecodeFailure, Subject: "session-sweeper",
			Primary: []*Finding{{Kind: KindDecodeFailure, Subject: "session-sweeper", Facts: map[string]string{"decode_source": "orders-api", "affected": "orders-api"}}}},
			[]string{"session-sweeper", "orders-api", "cart-api"}, nil},
		{"a bucket the mechanism names as throttled", Hypothesis{Kind: KindThrottling, Subject: "session-sweeper",
			Primary: []*Finding{{Kind: KindThrottling, Subject: "session-sweeper", Facts: map[string]string{"resource": "tessera-media-prod-eu-west-1", "affected": "tessera-media-prod-eu-west-1"}}}},
			[]string{"session-sweeper", "tessera-media-prod-eu-west-1"}, nil},
		{"a part of the release the question asks about", Hypothesis{Kind: KindVolumeProvision, Subject: "superset-postgresql"},
			[]string{"superset-postgresql", "superset"}, nil},
		{"a part of another release", Hypothesis{Kind: KindVolumeProvision, Subject: "airflow-postgresql"},
			[]string{"airflow-postgresql"}, []string{"airflow"}},
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
