package analyst

import (
	"slices"
	"testing"
)

// TestAskedCallers checks that the callers a question says cannot reach
// the root cause's subject are read, in the wordings people use, and only
// for that subject.
func TestAskedCallers(t *testing.T) {
	pricing := &Hypothesis{Kind: KindPortMismatch, Subject: "pricing", Primary: []*Finding{{Kind: KindPortMismatch, Subject: "pricing"}}}
	db := &Hypothesis{Kind: KindDatabase, Subject: "payments-db", Primary: []*Finding{{Kind: KindDatabase, Subject: "payments-db"}}}
	svc := &Hypothesis{Kind: KindNoEndpoints, Subject: "orders", Primary: []*Finding{{Kind: KindNoEndpoints, Subject: "orders", Facts: map[string]string{"service": "orders-svc"}}}}
	cases := []struct {
		msg  string
		h    *Hypothesis
		want []string
	}{
		{"service has no endpoints but the pods are running and ready?? storefront cant reach pricing", pricing, []string{"storefront"}},
		{"Storefront can't reach pricing since the 2.0.0 upgrade", pricing, []string{"storefront"}},
		{"checkout cannot connect to payments-db after the failover, is the db down?", db, []string{"checkout"}},
		{"billing-worker is unable to reach the payments-db since 14:00", db, []string{"billing-worker"}},
		{"frontend fails to connect to orders-svc: connection refused", svc, []string{"frontend"}},
		{"storefront cant reach pricing", db, nil},
		{"pricing is slow and storefront times out", pricing, nil},
	}
	for _, c := range cases {
		if got := askedCallers(c.msg, c.h); !slices.Equal(got, c.want) {
			t.Errorf("askedCallers(%q, %s) = %q, want %q", c.msg, c.h.Subject, got, c.want)
		}
	}
}
