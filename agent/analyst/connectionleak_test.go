package analyst

import (
	"strings"
	"testing"
)

func TestConnectionLeak(t *testing.T) {
	db := &Finding{Kind: KindDatabase, Subject: "orders", Facts: map[string]string{"line": `FATAL:  remaining connection slots are reserved for non-replication superuser connections`}}
	cases := []struct {
		facts   map[string]string
		support []*Finding
		want    []string
	}{
		{map[string]string{"low": "12", "peak": "97", "since": "10:05 UTC", "idle_in_transaction": "true", "request_ratio": "1.0"}, []*Finding{db},
			[]string{"connection leak in orders: database connections idle in transaction climb steadily from 12 to 97 since 10:05 UTC", "request rate stays flat (×1.0)", "remaining connection slots are reserved"}},
		{map[string]string{"low": "8", "peak": "50"}, nil, []string{"database connections in use climb steadily from 8 to 50 since the onset"}},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindConnLeak, Subject: "orders", Primary: []*Finding{{Kind: KindConnLeak, Subject: "orders", Facts: c.facts}}, Support: c.support}
		wantDescribed(t, h, Scope{}, c.want...)
		if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Release the leaked connections now: restart orders") {
			t.Errorf("recommendations %v", recs)
		}
	}
}
