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
