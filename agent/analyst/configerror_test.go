package analyst

import "testing"

// TestMissingRef names what a CreateContainerConfigError message says is
// missing, as the kubelet prints it.
func TestMissingRef(t *testing.T) {
	cases := []struct{ msg, want string }{
		{`configmap "billing-worker-settings" not found`, "configmap billing-worker-settings"},
		{`secret "db-credentials" not found`, "secret db-credentials"},
		{`couldn't find key DB_PASSWORD in Secret web/web-db`, "key DB_PASSWORD in secret web/web-db"},
		{`container has runAsNonRoot and image will run as root`, ""},
	}
	for _, c := range cases {
		if got := missingRef(c.msg); got != c.want {
			t.Errorf("missingRef(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}
