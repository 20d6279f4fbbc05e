package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A schema migration the tool refuses to run because a migration already
// applied to the database was edited since: migration tools record each
// applied migration's checksum in their history table (Flyway's
// flyway_schema_history, Liquibase's DATABASECHANGELOG MD5SUM, sqlx's
// _sqlx_migrations) and validate the files against it before migrating.
// A release that changes an applied file (a typo fixed in an index name,
// a reformatted script) fails validation on every start: the migrating
// container (often an init container) exits, the new pods never start,
// while the old pods, started before, run on. The edited migration is the
// root; the release that shipped it is the trigger.

// KindMigrationChecksum is a migration refused because an applied
// migration was modified.
const KindMigrationChecksum Kind = "migration_checksum"

// migrationChecksumRE is each tool's own wording, with the migration's
// version or changeset where it names one:
//
//	Flyway    "Migration checksum mismatch for migration version 27"
//	          (and "-> Applied to database : 1520422811", "-> Resolved
//	          locally : -1108212361" after it)
//	Liquibase "Validation Failed: 1 changesets check sum
//	          db/changelog/027-index.yaml::27::jdoe was: 9:1a2b... but is
//	          now: 9:3c4d..."
//	sqlx      "migration 20240101120000 was previously applied but has been
//	          modified"
//	Atlas     "You have a checksum error in your migration directory"
//	          (atlas.sum no longer matches the files)
var migrationChecksumRE = regexp.MustCompile(`(?i)migration checksum mismatch for migration (?:version )?([\w.]+)|(\d+) changesets? check ?sums?|migration (\d+) was previously applied but has been modified|checksum error in your migration directory`)

// liquibaseChangesetRE is the changeset Liquibase names on the line
// after its count: "path::id::author was: 9:... but is now: 9:...".
var liquibaseChangesetRE = regexp.MustCompile(`(\S+::\S+::\S+)\s+was:\s*\S+\s+but is now`)

// checksumValuesRE reads Flyway's applied and resolved checksums.
var checksumValuesRE = regexp.MustCompile(`(?i)applied to database\s*:\s*(-?\d+)|resolved locally\s*:\s*(-?\d+)`)

var migrationChecksum = &mechanism{
	kind:      KindMigrationChecksum,
	class:     classCause,
	label:     "schema migration refused: an applied migration was modified (checksum mismatch)",
	fromCrash: migrationChecksumFromCrash,
	// A release that ships migrations.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || matchLine(migrationChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		what := "an already-applied migration"
		if v := h.fact("migration"); v != "" {
			what = fmt.Sprintf("migration %s, already applied to the database,", v)
		}
		d := fmt.Sprintf("%s's schema migration fails validation with a checksum mismatch: %s was edited after it ran, so %s refuses to migrate and %s exits on every start (the new pods never start; pods started before keep running)",
			h.Subject, what, orWord(h.fact("tool"), "the migration tool"), orWord(h.fact("where"), "the migrating container"))
		if a, l := h.fact("checksum_applied"), h.fact("checksum_local"); a != "" && l != "" {
			d += fmt.Sprintf("; the checksum recorded in the schema history is %s, the file's is now %s", a, l)
		}
		return d + " — " + quote(ReadableLine(h.fact("line")), 200)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		v := "the edited migration"
		if m := h.fact("migration"); m != "" {
			v = "migration " + m
		}
		r.high("Restore %s to the content that was applied (revert the edit in the release) and put the change in a new migration; if the edit is intended and harmless, run the tool's repair (flyway repair, liquibase clear-checksums) so the history records the new checksum", v)
		r.rollback()
		r.med("Make applied migrations immutable: a CI check that fails when a file of an applied version changes (flyway validate against a copy of production's history)")
		r.low("Alert on init containers in CrashLoopBackOff and on rollouts past their progress deadline")
	},
}

// migrationChecksumFromCrash reads a crash whose last lines hold the
// tool's checksum refusal.
func migrationChecksumFromCrash(crash Finding, c *containerState) (Finding, bool) {
	var line, tool string
	f := crash
	for _, l := range c.LastLines {
		if m := findSubmatch(migrationChecksumRE, l.Text); m != nil && line == "" {
			line = l.Text
			switch {
			case m[1] != "":
				f.setFact("migration", strings.TrimSuffix(m[1], "."))
				tool = "Flyway"
			case m[2] != "":
				tool = "Liquibase"
			case m[3] != "":
				f.setFact("migration", m[3])
				tool = "sqlx"
			default:
				tool = "Atlas"
			}
		}
		if m := findSubmatch(liquibaseChangesetRE, l.Text); m != nil && line != "" && f.fact("migration") == "" {
			f.setFact("migration", m[1])
		}
		for _, m := range findAllSubmatch(checksumValuesRE, l.Text, -1) {
			if m[1] != "" {
				f.setFact("checksum_applied", m[1])
			}
			if m[2] != "" {
				f.setFact("checksum_local", m[2])
			}
		}
	}
	if line == "" {
		return Finding{}, false
	}
	f.Kind, f.Severity, f.Weight = KindMigrationChecksum, SevCritical, 0.92
	f.setFact("line", line)
	f.setFact("tool", tool)
	where := fmt.Sprintf("container %s", c.Status.Name)
	if isInitContainer(c.Pod, c.Status.Name) {
		where = fmt.Sprintf("init container %s", c.Status.Name)
	}
	f.setFact("where", where)
	f.Summary = fmt.Sprintf("%s: schema migration refused, an applied migration was modified (checksum mismatch)", c.Object)
	f.Evidence = append([]string{fmt.Sprintf("%s logs %s", c.Object, quote(ReadableLine(line), 240))}, crash.Evidence...)
	return f, true
}
