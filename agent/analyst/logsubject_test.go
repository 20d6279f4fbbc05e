package analyst

import "testing"

func TestOwnerDir(t *testing.T) {
	cases := []struct{ source, base, want string }{
		{"batch-01/journal.log", "journal", "batch-01"},
		{"logs/api-gateway/error.log", "error", "api-gateway"},
		{"/var/log/nginx/access.log", "access", "nginx"},
		{"kafka-2/server.log", "server", "kafka-2"},
		{"/var/log/syslog", "syslog", ""},
		{"journal.log", "journal", ""},
		{"pg-main-01/postgresql.log", "postgresql", ""},
		{"batch-02/stock-reconcile.log", "stock-reconcile", ""},
		{"/aws/lambda/orders", "orders", ""},
	}
	for _, c := range cases {
		if got := ownerDir(c.source, c.base); got != c.want {
			t.Errorf("ownerDir(%q, %q) = %q, want %q", c.source, c.base, got, c.want)
		}
	}
}

func TestPodLogOwner(t *testing.T) {
	cases := []struct{ base, want string }{
		{"loyalty-service-85f6c9d7b-4lmzt", "loyalty-service"},
		{"loyalty-service-6fd7b5c9f8-tq2rn", "loyalty-service"},
		{"kyc-service-6b5d8f7c9-lc4vn", "kyc-service"},
		{"recommendations-service-5b9f7c8d6-7tqlm", "recommendations-service"},
		{"web-7d4b9c6f5-x2x9z", "web"},
		{"search-api-5f7b8c9d6-qw3lp", "search-api"},
		// Not a pod's name: a service's own, a StatefulSet member, a date.
		{"orders-backend-v2", ""},
		{"payments-api", ""},
		{"kafka-2", ""},
		{"checkout-service-2026-11-18", ""},
		{"email-sender-worker-queue", ""},
		{"search-api-abcdefg-hijkl", ""},
		{"search-api-bdfghk-hello", ""},
	}
	for _, c := range cases {
		if got := podLogOwner(c.base); got != c.want {
			t.Errorf("podLogOwner(%q) = %q, want %q", c.base, got, c.want)
		}
	}
}
