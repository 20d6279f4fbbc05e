package analyst

import (
	"strings"
	"testing"
)

func TestNoEndpoints(t *testing.T) {
	for _, c := range []struct {
		subject, summary, want string
	}{
		{"cart", "service shop/cart has no ready endpoints (3 not ready)", "service cart has no ready endpoints, so requests to it fail"},
		{"payments", "service shop/payments has no ready endpoints (0 not ready)", "service payments has no ready endpoints"},
	} {
		h := &Hypothesis{Kind: KindNoEndpoints, Subject: c.subject, Primary: []*Finding{{Kind: KindNoEndpoints, Subject: c.subject, Summary: c.summary}}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.want) {
			t.Errorf("description %q lacks %q", d, c.want)
		}
		recs := recommend(h, Scope{})
		if len(recs) != 3 || recs[1].Action != "Investigate "+c.summary {
			t.Errorf("recommendations %v", recs)
		}
	}
}
