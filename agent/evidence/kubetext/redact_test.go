package kubetext

import "testing"

// Secret values are redacted from command output; an IAM action in a
// policy document ("secretsmanager:GetSecretValue") is a value holding a
// colon, not a secret's assignment, and stays as printed.
func TestRedactAssignments(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"DB_PASSWORD=hunter2", "DB_PASSWORD=<redacted>"},
		{"export STRIPE_API_KEY=sk_live_123", "export STRIPE_API_KEY=<redacted>"},
		{`  "client_secret": "abc123",`, `  "client_secret": <redacted>`},
		{"  password: s3cr3t", "  password: <redacted>"},
		{"secretKey:", "secretKey:"},
		{`                    "secretsmanager:GetSecretValue",`, `                    "secretsmanager:GetSecretValue",`},
		{`      - secretsmanager:GetSecretValue`, `      - secretsmanager:GetSecretValue`},
		{`"Resource": "arn:aws:secretsmanager:eu-west-1:210987654321:secret:prod/db-*"`, `"Resource": "arn:aws:secretsmanager:eu-west-1:210987654321:secret:prod/db-*"`},
		{"DATABASE_URL=postgres://app:pw@db:5432/shop", "DATABASE_URL=postgres://app:<redacted>@db:5432/shop"},
	} {
		if got := redact(c.in); got != c.want {
			t.Errorf("redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
