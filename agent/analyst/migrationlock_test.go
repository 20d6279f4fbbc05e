package analyst

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
)

// TestMigrationLines: the lines migration tools print when their lock is
// taken or an earlier run left the schema dirty, as the tools word them,
// and near misses (a run that got the lock, a migration in progress).
func TestMigrationLines(t *testing.T) {
	cases := []struct {
		line, tool, state string
	}{
		// Liquibase: Spring Boot's logger, the CLI's, and the LockException
		// when changeLogLockWaitTimeInMinutes runs out.
		{"2026-11-16 09:14:31.377  INFO 1 --- [           main] liquibase.lockservice                    : Waiting for changelog lock....", "Liquibase", "lock"},
		{"[2024-04-04 08:21:29] INFO [liquibase.ext] Waiting for changelog lock....", "Liquibase", "lock"},
		{"[2023-12-21 03:28:00] SEVERE [liquibase.integration] Could not acquire change log lock.  Currently locked by d380e8ac9ef1 (172.18.0.8) since 6/24/23, 3:13 AM", "Liquibase", "lock"},
		{"liquibase.exception.CommandExecutionException: liquibase.exception.LockException: Could not acquire change log lock.  Currently locked by 00ee9084735b (172.18.0.10) since 9/4/23, 10:10 PM", "Liquibase", "lock"},
		// Flyway.
		{"ERROR: Unable to obtain table lock - another Flyway instance may be running", "Flyway", "lock"},
		{"org.flywaydb.core.api.FlywayException: Number of retries exceeded while attempting to acquire PostgreSQL advisory lock. Configure the number of retries with the 'lockRetryCount' configuration option", "Flyway", "lock"},
		{"ERROR: Validate failed: Migrations have failed validation\nDetected failed migration to version 1.7 (backfill invoice totals).", "Flyway", "dirty"},
		// Rails.
		{"rails aborted! ActiveRecord::ConcurrentMigrationError: ", "Rails", "lock"},
		{"Cannot run migrations because another migration process is currently running.", "Rails", "lock"},
		// golang-migrate.
		{"error: Dirty database version 16. Fix and force version.", "golang-migrate", "dirty"},
		{"Failed to migrate: Dirty database version 30. Fix and force version.", "golang-migrate", "dirty"},
		{"error: timeout: can't acquire database lock", "golang-migrate", "lock"},
		// knex and Prisma.
		{"MigrationLocked: Migration table is already locked", "knex", "lock"},
		{"Context: Timed out trying to acquire a postgres advisory lock (SELECT pg_advisory_lock(72707369)). Elapsed: 10000ms. See https://pris.ly/d/migrate-advisory-locking for details.", "Prisma", "lock"},
		// Near misses: a run that got its lock or is migrating, and
		// Alembic, which has no lock of its own.
		{"[2026-11-16 09:14:31] INFO [liquibase.lockservice] Successfully acquired change log lock", "", ""},
		{"INFO  [alembic.runtime.migration] Running upgrade 3f1c2a9b7d04 -> 8e2d5c1f6a93, add invoices.currency", "", ""},
		{"Successfully applied 3 migrations to schema \"public\", now at version v1.9 (execution time 00:01.204s)", "", ""},
		{"ERROR: canceling statement due to lock timeout", "", ""},
		{"2026/11/16 09:14:31 no change", "", ""},
	}
	for _, c := range cases {
		tool, state := migrationLine(c.line)
		if tool != c.tool || state != c.state {
			t.Errorf("migrationLine(%q) = %q, %q; want %q, %q", c.line, tool, state, c.tool, c.state)
		}
	}
}

// TestReadMigrationWait: a log that ends waiting is a wait; one where the
// lock was got afterwards is not; a dirty version wins over a wait.
func TestReadMigrationWait(t *testing.T) {
	t0 := time.Date(2026, 11, 16, 9, 14, 0, 0, time.UTC)
	log := func(texts ...string) []evidence.LogLine {
		var out []evidence.LogLine
		for i, s := range texts {
			out = append(out, evidence.LogLine{Time: t0.Add(time.Duration(i) * 10 * time.Second), Text: s})
		}
		return out
	}
	wait := "INFO [liquibase.lockservice] Waiting for changelog lock...."
	if w := readMigrationWait(log("INFO [liquibase.database] Set default schema name to public", wait, wait, wait)); w == nil || w.n != 3 || w.tool != "Liquibase" || !w.first.Time.Equal(t0.Add(10*time.Second)) {
		t.Errorf("waiting log: %+v", w)
	}
	if w := readMigrationWait(log(wait, wait, "INFO [liquibase.lockservice] Successfully acquired change log lock", "INFO [liquibase.changelog] Running Changeset: db/changelog/0142.yaml::0142::ops")); w != nil {
		t.Errorf("a run that got the lock read as waiting: %+v", w)
	}
	if w := readMigrationWait(log("error: timeout: can't acquire database lock", "error: Dirty database version 16. Fix and force version.")); w == nil || w.state != "dirty" {
		t.Errorf("dirty log: %+v", w)
	}
	if w := readMigrationWait(nil); w != nil {
		t.Errorf("empty log: %+v", w)
	}
}

// lockRun runs the tools of a session for an investigation.
type lockRun struct{ sess *tools.Session }

func (r *lockRun) Call(ctx context.Context, name string, args any) (any, error) {
	return r.sess.Call(ctx, name, args)
}
func (r *lockRun) Has(name string) bool        { return r.sess.Has(name) }
func (r *lockRun) Step(string, int, int)       {}
func (r *lockRun) Sub(a agent.Agent) agent.Run { return r }
func (r *lockRun) Env() *tools.Env             { return r.sess.Env }

// TestMigrationLockInvestigation investigates terminal transcripts of pods
// stuck behind their migration: the init container that runs now (or
// crash-loops) is where the pod is, its own log says what it waits for,
// the lock's row says who holds it, and what became of the holder is the
// hop before the stale lock.
func TestMigrationLockInvestigation(t *testing.T) {
	now := time.Date(2026, 11, 16, 9, 50, 0, 0, time.UTC)
	pods := `$ kubectl -n claims get pods
NAME                         READY   STATUS     RESTARTS   AGE
claims-svc-7b9c6d5f4-m2x8q   0/1     Init:0/1   1          38m
claims-svc-5d8f7c6b9-h4k2n   1/1     Running    0          6d
claims-db-0                  1/1     Running    0          30d
`
	describe := func(name, state, last string, restarts int) string {
		return `$ kubectl -n claims describe pod ` + name + `
Name:             ` + name + `
Namespace:        claims
Priority:         0
Node:             gke-prod-pool-2-7f3a9c1e-x2lq/10.128.0.41
Start Time:       Mon, 16 Nov 2026 09:11:00 +0000
Labels:           app=claims-svc
                  pod-template-hash=7b9c6d5f4
Status:           Pending
IP:               10.44.3.19
Controlled By:    ReplicaSet/claims-svc-7b9c6d5f4
Init Containers:
  schema:
    Container ID:  containerd://9a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5
    Image:         registry.example.com/claims/claims-migrate:2.8.0
    Image ID:      registry.example.com/claims/claims-migrate@sha256:5c7e9a1b3d5f7e9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b3d5f7a
    Port:          <none>
    Host Port:     <none>
` + state + last + `    Ready:          False
    Restart Count:  ` + string(rune('0'+restarts)) + `
    Limits:
      memory:  256Mi
    Requests:
      cpu:     100m
      memory:  256Mi
    Environment:
      DATABASE_URL:  postgres://claims-db:5432/claims
Containers:
  claims-svc:
    Image:          registry.example.com/claims/claims-svc:2.8.0
    Port:           8080/TCP
    State:          Waiting
      Reason:       PodInitializing
    Ready:          False
    Restart Count:  0
Conditions:
  Type              Status
  Initialized       False
  Ready             False
  ContainersReady   False
  PodScheduled      True
Events:
  Type    Reason     Age   From               Message
  ----    ------     ----  ----               -------
  Normal  Scheduled  38m   default-scheduler  Successfully assigned claims/` + name + ` to gke-prod-pool-2-7f3a9c1e-x2lq
`
	}
	running := `    State:          Running
      Started:      Mon, 16 Nov 2026 09:14:21 +0000
`
	oomLast := `    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Mon, 16 Nov 2026 09:11:02 +0000
      Finished:     Mon, 16 Nov 2026 09:14:19 +0000
`
	liquibaseLog := `$ kubectl -n claims logs claims-svc-7b9c6d5f4-m2x8q -c schema --tail=4
[2026-11-16 09:14:29] INFO [liquibase.database] Set default schema name to public
[2026-11-16 09:14:31] INFO [liquibase.lockservice] Waiting for changelog lock....
[2026-11-16 09:49:21] INFO [liquibase.lockservice] Waiting for changelog lock....
[2026-11-16 09:49:31] INFO [liquibase.lockservice] Waiting for changelog lock....
`
	lockRow := func(by string) string {
		return `$ kubectl -n claims exec claims-db-0 -- psql -U postgres claims -c 'select * from databasechangeloglock'
 id | locked |       lockgranted       |              lockedby
----+--------+-------------------------+-------------------------------------
  1 | t      | 2026-11-16 09:11:09.204 | ` + by + `
(1 row)

`
	}
	cases := []struct {
		name       string
		session    string
		want, lack []string
	}{
		{
			// The migration's own earlier run was OOM-killed while it
			// held the lock; restarted, it waits for its own stale lock.
			name:    "held by the pod's own killed run",
			session: pods + describe("claims-svc-7b9c6d5f4-m2x8q", running, oomLast, 1) + liquibaseLog + lockRow("claims-svc-7b9c6d5f4-m2x8q (10.44.3.19)"),
			want: []string{"Liquibase changelog lock", "held by claims-svc-7b9c6d5f4-m2x8q since 2026-11-16T09:11:09Z", "OOMKilled, exit code 137",
				"stay in Init and never start"},
		},
		{
			// The holder is a pod that no longer exists: deleted mid-run.
			name:    "held by a pod that is gone",
			session: pods + describe("claims-svc-7b9c6d5f4-m2x8q", running, "", 0) + liquibaseLog + lockRow("claims-svc-7b9c6d5f4-q9w7z (10.44.1.7)"),
			want:    []string{"Liquibase changelog lock", "claims-svc-7b9c6d5f4-q9w7z", "a pod that no longer exists", "lock is stale"},
		},
		{
			// No lock row was read: the wait alone, from the init
			// container's own log.
			name:    "only the wait",
			session: pods + describe("claims-svc-7b9c6d5f4-m2x8q", running, "", 0) + liquibaseLog,
			want:    []string{"waits for the Liquibase changelog lock", "since 2026-11-16T09:14:31Z"},
			lack:    []string{"no longer exists"},
		},
		{
			// golang-migrate in Init:CrashLoopBackOff on a dirty version:
			// the previous run's log says why.
			name: "dirty version, init container crash-looping",
			session: strings.Replace(pods, "Init:0/1   1", "Init:CrashLoopBackOff   6", 1) + describe("claims-svc-7b9c6d5f4-m2x8q", `    State:          Waiting
      Reason:       CrashLoopBackOff
`, `    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
      Started:      Mon, 16 Nov 2026 09:44:40 +0000
      Finished:     Mon, 16 Nov 2026 09:44:41 +0000
`, 6) + `$ kubectl -n claims logs claims-svc-7b9c6d5f4-m2x8q -c schema -p
2026/11/16 09:44:41 error: Dirty database version 16. Fix and force version.
`,
			want: []string{"refuses a dirty schema version (16)", "died half-way"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := investigateSession(t, now, c.session, "claims-svc pods are stuck in Init since the release, why?", "claims-svc", "claims")
			if len(res.Candidates) == 0 || res.Candidates[0].Kind != string(KindMigrationLock) || res.Candidates[0].Subject != "claims-svc" {
				t.Fatalf("candidates %+v, want the migration lock of claims-svc first; root cause %q", res.Candidates, res.RootCause.Description)
			}
			d := res.RootCause.Description
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			for _, w := range c.lack {
				if strings.Contains(d, w) {
					t.Errorf("description says %q: %s", w, d)
				}
			}
		})
	}
}
