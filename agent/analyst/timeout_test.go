package analyst

import (
	"strings"
	"testing"
)

func TestTimeout(t *testing.T) {
	testLines(t, timeoutM, []lineCase{
		{`dial tcp 10.0.5.9:5432: i/o timeout`, KindTimeout},
		{`rpc error: code = DeadlineExceeded desc = context deadline exceeded`, KindTimeout},
		{`java.net.SocketTimeoutException: Read timed out`, KindTimeout},
		{`request completed in 35ms`, ""},
	})
	line := "dial tcp 10.0.5.9:5432: i/o timeout"
	plain := &Hypothesis{Kind: KindTimeout, Subject: "orders-db", Primary: []*Finding{{Kind: KindTimeout, Subject: "orders-db",
		Facts: map[string]string{"caller": "orders", "target": "orders-db", "line": line}}}}
	if d := describe(plain, Scope{}); !strings.Contains(d, "calls from orders to orders-db time out (the dependency is slow or unreachable)") {
		t.Errorf("description %q", d)
	}
	policy := &Finding{Kind: KindInfraChange, Summary: "NetworkPolicy shop/deny-egress created"}
	blocked := &Hypothesis{Kind: KindTimeout, Subject: "orders-db", Trigger: policy, Primary: plain.Primary}
	if d := describe(blocked, Scope{}); !strings.Contains(d, "egress from orders is blocked by a network change") {
		t.Errorf("description with a network-policy trigger %q", d)
	}
	if recs := recommend(plain, Scope{}); len(recs) != 3 {
		t.Errorf("recommendations %v", recs)
	}
	for _, c := range networkChanges {
		if got := timeoutM.fitsChange(plain, &c.c); got != c.fits {
			t.Errorf("fitsChange(%s %q) = %v", c.c.Kind, c.c.Summary, got)
		}
	}
}
