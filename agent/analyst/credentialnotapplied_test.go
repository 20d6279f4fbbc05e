package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCredentialNotApplied: a client that read a rotated credential (its
// Vault Agent re-rendered the secrets file, its watcher exited to reload
// it, Reloader restarted it for a changed Secret, or its container
// started after a recorded rotation) and is refused from then on holds
// the new password the server never got; a client whose pods are older
// than the rotation still holds the old one (credentialrotated.go).
func TestCredentialNotApplied(t *testing.T) {
	pgClient := []string{`2026-03-14 09:42:00,962 ERROR [stock_sync.db] connect failed (attempt 1): psycopg.OperationalError: connection failed: FATAL:  password authentication failed for user "stock_sync"`}
	mysqlClient := []string{`time=2026-03-14T09:42:00Z level=error msg="open connection" err="Error 1045 (28000): Access denied for user 'billing'@'10.4.2.17' (using password: YES)"`}
	vaultRender := []string{`2026-03-14T09:40:58.402Z [INFO]  agent: (runner) rendered "(dynamic)" => "/vault/secrets/db"`,
		`2026-03-14 09:41:04,877 INFO [stock_sync.watch] credentials file /vault/secrets/db changed; exiting so the new credentials are picked up`}
	reloader := []string{`time="2026-03-14T09:41:00Z" level=info msg="Changes detected in 'billing-db' of type 'SECRET' in namespace 'comms'; updated 'billing-api' of type 'Deployment' in namespace 'comms'"`}
	started := func(name string, at time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "comms", CreationTimestamp: metav1.NewTime(at.Add(-72 * time.Hour))},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}}}
	}
	rotation := evidence.Change{Timestamp: win.Start.Add(-5 * time.Minute), Service: "billing-api", Kind: "config",
		Description: "Quarterly credential rotation SEC-88: new DB password written to kv/comms/billing/db (version 4)"}
	cases := []struct {
		name    string
		sets    []LogSet
		changes []evidence.Change
		pods    []corev1.Pod
		kind    Kind
		want    []string
	}{
		{"Vault Agent re-rendered the file, the watcher exited, PostgreSQL refuses the new password",
			[]LogSet{minedSet("stock-sync", false, -2*time.Minute, vaultRender...), minedSet("stock-sync", false, 0, pgClient...)}, nil, nil,
			KindCredentialNotApplied, []string{"not given the new password", "stock_sync", "did not crash", "/vault/secrets/db"}},
		{"Reloader restarted the client for a changed Secret, MySQL refuses it",
			[]LogSet{minedSet("billing-api", false, -time.Minute, reloader...), minedSet("billing-api", false, 0, mysqlClient...)}, nil, nil,
			KindCredentialNotApplied, []string{"Changes detected in 'billing-db'", "Access denied"}},
		{"a recorded rotation, the client's container started after it",
			[]LogSet{minedSet("billing-api", false, 0, mysqlClient...)}, []evidence.Change{rotation},
			[]corev1.Pod{started("billing-api-5d7f9b8c46-2hq9v", win.Start.Add(-2*time.Minute))},
			KindCredentialNotApplied, []string{"credential rotation SEC-88", "not given the new password"}},
		{"a recorded rotation, the client's pods older than it: it holds the old password",
			[]LogSet{minedSet("billing-api", false, 0, mysqlClient...)}, []evidence.Change{rotation},
			[]corev1.Pod{started("billing-api-5d7f9b8c46-2hq9v", win.Start.Add(-72*time.Hour))},
			KindCredentialRotated, []string{"still holds the old password"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Changes: c.changes, Window: win}
			ev.K8s.Pods = c.pods
			fs := detectRotatedCredential(ev, nil)
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if f.Kind != c.kind {
				t.Fatalf("kind %q, want %q", f.Kind, c.kind)
			}
			if len(f.Evidence) < 2 {
				t.Errorf("evidence %q", f.Evidence)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describe(h, Scope{}) + " " + strings.Join(f.Evidence, " ")
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description and evidence lack %q:\n%s", w, d)
				}
			}
			if c.kind == KindCredentialNotApplied && f.fact("why") == "" {
				t.Error("no why")
			}
		})
	}
}

// TestClientQuoteNotServer: a client's log quoting PostgreSQL's refusal is
// the client's, not the database server's own log.
func TestClientQuoteNotServer(t *testing.T) {
	for line, want := range map[string]string{
		`2026-03-14 09:42:00,962 ERROR [stock_sync.db] connect failed (attempt 1): psycopg.OperationalError: connection failed: FATAL:  password authentication failed for user "stock_sync"`: "",
		`2026-03-14 09:42:01 UTC [48211] stock_sync@warehouse FATAL:  password authentication failed for user "stock_sync"`:                                                                   "postgresql",
		`2026-03-14 09:42:01.004 UTC [61] LOG:  checkpoint starting: time`:                                                                                                                    "postgresql",
	} {
		if got := hostRole(minedSet("x", false, 0, line)); got != want {
			t.Errorf("%.60q: role %q, want %q", line, got, want)
		}
	}
}
