package analyst

import (
	"strings"
	"testing"
)

func TestLogErrors(t *testing.T) {
	for _, line := range []string{
		`2026-03-01T11:40:02.117Z ERROR [orders] failed to publish OrderCreated: schema registry returned 422 (subject orders-value, incompatible schema)`,
		`level=error ts=2026-03-01T11:40:02Z caller=export.go:88 msg="export batch rejected" err="payload exceeds 4MB"`,
	} {
		h := &Hypothesis{Kind: KindLogErrors, Subject: "orders", Primary: []*Finding{{Kind: KindLogErrors, Subject: "orders", Summary: "orders: new error template",
			Facts: map[string]string{"line": line}}}}
		d := describe(h, Scope{})
		if !strings.Contains(d, "orders logs new or surging errors") {
			t.Errorf("description %q", d)
		}
		if recs := recommend(h, Scope{}); len(recs) != 3 || recs[1].Action != "Investigate orders: new error template" {
			t.Errorf("recommendations %v", recs)
		}
	}
}
