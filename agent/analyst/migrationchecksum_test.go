package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestMigrationChecksumFromCrash reads each tool's checksum refusal from a
// crashed migration container's last lines, and leaves other migration
// failures alone.
func TestMigrationChecksumFromCrash(t *testing.T) {
	cases := []struct {
		name, log, migration, tool string
	}{
		{"Flyway 10", `Flyway OSS Edition 10.17.3 by Redgate
ERROR: Validate failed: Migrations have failed validation
Migration checksum mismatch for migration version 4.2
-> Applied to database : 1520422811
-> Resolved locally    : -1108212361
Either revert the changes to the migration, or run repair to update the schema history.`, "4.2", "Flyway"},
		{"Liquibase 4", `Starting Liquibase at 09:14:02 (version 4.29.2 #3683 built at 2024-08-29 16:45+0000)
Unexpected error running Liquibase: Validation Failed:
     1 changesets check sum
          db/changelog/027-index.yaml::27::jdoe was: 9:1a2b3c4d5e6f but is now: 9:7a8b9c0d1e2f`, "db/changelog/027-index.yaml::27::jdoe", "Liquibase"},
		{"sqlx", `Error: while executing migrations: error returned from database: migration 20240101120000 was previously applied but has been modified`, "20240101120000", "sqlx"},
		{"other Flyway failure", `Flyway OSS Edition 10.17.3 by Redgate
ERROR: Migration V31__add_currency.sql failed
SQL State  : 42701
Message    : ERROR: column "currency" of relation "posting_batch" already exists`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lines []evidence.LogLine
			for _, l := range strings.Split(c.log, "\n") {
				lines = append(lines, evidence.LogLine{Text: l})
			}
			pod := &corev1.Pod{}
			pod.Name, pod.Namespace = "ledger-7b5c8d9f46-r6xjd", "finance"
			pod.Spec.InitContainers = []corev1.Container{{Name: "db-migrate"}}
			cs := &containerState{Pod: pod, Status: corev1.ContainerStatus{Name: "db-migrate"}, Object: "pod finance/ledger-7b5c8d9f46-r6xjd container db-migrate", LastLines: lines}
			crash := Finding{Kind: KindCrashLoop, Subject: "ledger", Namespace: "finance"}
			f, ok := migrationChecksumFromCrash(crash, cs)
			if ok != (c.migration != "") {
				t.Fatalf("found %v, want %v", ok, c.migration != "")
			}
			if !ok {
				return
			}
			if f.Kind != KindMigrationChecksum || f.fact("migration") != c.migration || f.fact("tool") != c.tool {
				t.Errorf("kind %s migration %q tool %q, want %q %q", f.Kind, f.fact("migration"), f.fact("tool"), c.migration, c.tool)
			}
			if f.fact("where") != "init container db-migrate" {
				t.Errorf("where %q", f.fact("where"))
			}
		})
	}
}
