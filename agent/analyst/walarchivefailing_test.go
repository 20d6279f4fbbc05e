package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestArchiveFailing reads a database's failing WAL archiving from the
// server's and the archiver's own lines (WAL-G to S3, pgBackRest,
// barman-cloud under CloudNativePG to GCS, a plain archive_command over
// rsync), from postgres_exporter's archiver counter and psql's
// pg_stat_archiver, and says why the copy fails. Archiving that works, or
// a counter that was already counting, is not this cause.
func TestArchiveFailing(t *testing.T) {
	walg := []string{
		`ERROR: 2026/10/01 19:02:41.000000 upload: could not upload 'wal_005/000000010000042A0000008A.lz4': failed to upload 'wal_005/000000010000042A0000008A.lz4' to bucket 'acme-pg-wal-archive': AccessDenied: Access Denied status code: 403, request id: 5B2C4A1E9F0D7E60`,
		`2026-10-01 19:02:41.000 UTC [88] LOG:  archive command failed with exit code 1`,
		`2026-10-01 19:02:41.000 UTC [88] DETAIL:  The failed archive command was: /usr/local/bin/wal-g wal-push pg_wal/000000010000042A0000008A`,
		`2026-10-01 19:04:44.274 UTC [88] WARNING:  archiving write-ahead log file "000000010000042A0000008A" failed too many times, will try again later`,
	}
	pgbackrest := []string{
		`2026-03-02 10:14:07.512 P00   INFO: archive-push command begin 2.51: [pg_wal/00000001000000A2000000C4] --archive-async --exec-id=2210-4c7f --log-level-console=info --pg1-path=/var/lib/postgresql/data --repo1-s3-bucket=ledger-pgbackrest --repo1-type=s3 --stanza=ledger`,
		`2026-03-02 10:14:07.733 P00  ERROR: [039]: HTTP request failed with 403 (Forbidden): archive-push to bucket ledger-pgbackrest: SignatureDoesNotMatch`,
		`2026-03-02 10:14:07.734 UTC [61] LOG:  archive command failed with exit code 39`,
		`2026-03-02 10:14:07.734 UTC [61] DETAIL:  The failed archive command was: pgbackrest --stanza=ledger archive-push pg_wal/00000001000000A2000000C4`,
	}
	cnpg := []string{
		`{"level":"info","ts":"2026-05-11T07:40:02Z","logger":"wal-archive","msg":"failed to run wal-archive command","logging_pod":"catalog-pg-1","error":"unexpected failure invoking barman-cloud-wal-archive: exit status 1"}`,
		`{"level":"info","ts":"2026-05-11T07:40:02Z","logger":"barman-cloud-wal-archive","msg":"2026-05-11 07:40:02,311 [812] ERROR: Barman cloud WAL archiver exception: 403 POST https://storage.googleapis.com/upload/storage/v1/b/catalog-pg-backups/o?uploadType=multipart: catalog-pg@acme.iam.gserviceaccount.com does not have storage.objects.create access to the Google Cloud Storage object. Permission 'storage.objects.create' denied on resource (or it may not exist).","logging_pod":"catalog-pg-1"}`,
		`{"level":"info","ts":"2026-05-11T07:40:02Z","logger":"postgres","msg":"record","logging_pod":"catalog-pg-1","record":{"log_time":"2026-05-11 07:40:02.330 UTC","error_severity":"LOG","message":"archive command failed with exit code 1"}}`,
	}
	rsync := []string{
		`2026-07-19 02:11:40.118 CEST [1402] LOG:  archive command failed with exit code 255`,
		`2026-07-19 02:11:40.118 CEST [1402] DETAIL:  The failed archive command was: rsync -a pg_wal/0000000200000031000000E1 archive@wal-archive-01:/srv/wal/`,
		`ssh: connect to host wal-archive-01 port 22: Connection refused`,
	}
	healthy := []string{
		`2026-10-01 18:55:02.118 UTC [88] LOG:  archived write-ahead log file "000000010000042A00000087"`,
		`2026-10-01 18:55:02.118 UTC [31] LOG:  checkpoint complete: wrote 48213 buffers (18.4%)`,
	}
	statArchiver := evidence.CommandOutput{Exec: true, Namespace: "ledger", Pod: "ledger-pg-0", Run: `psql -U postgres -x -c 'select * from pg_stat_archiver'`,
		Command: `kubectl exec -n ledger ledger-pg-0 -c postgres -- psql -U postgres -x -c 'select * from pg_stat_archiver'`,
		Lines: strings.Split(`-[ RECORD 1 ]------+------------------------------
archived_count     | 412881
last_archived_wal  | 00000001000000A2000000C3
last_archived_time | 2026-03-02 10:12:31.007114+00
failed_count       | 318
last_failed_wal    | 00000001000000A2000000C4
last_failed_time   | 2026-03-02 11:38:52.310225+00
stats_reset        | 2025-11-24 09:12:40.551093+00`, "\n")}
	du := evidence.CommandOutput{Exec: true, Namespace: "ledger", Pod: "ledger-pg-0", Run: "du -sh /var/lib/postgresql/data/pg_wal",
		Lines: []string{"171G\t/var/lib/postgresql/data/pg_wal"}}
	counter := func(subject string, vals ...float64) MetricSet {
		s := evidence.Series{Labels: evidence.Labels{"namespace": "ledger", "pod": subject + "-0", "server": subject + "-0:5432"}}
		for i, v := range vals {
			s.Points = append(s.Points, evidence.Point{T: win.BaselineStart.Add(time.Duration(i) * 20 * time.Minute), V: v})
		}
		return MetricSet{Name: "pg_stat_archiver_failed_count", Class: MetricErrors, Series: []evidence.Series{s}}
	}
	cases := []struct {
		name    string
		sets    []LogSet
		metrics []MetricSet
		cmds    []evidence.CommandOutput
		subject string // "" for no finding
		want    []string
		first   string // in the first recommendation
	}{
		{"WAL-G to S3 refused with 403 after a bucket policy change", []LogSet{minedSet("orders-pg", false, 0, walg...)}, nil, nil,
			"orders-pg", []string{"WAL archiving on orders-pg fails", "wal-g", "bucket acme-pg-wal-archive", "access denied, HTTP 403", "pg_wal grows"}, "write access to bucket acme-pg-wal-archive"},
		{"pgBackRest's archive-push rejected: a signature the store does not accept", []LogSet{minedSet("ledger-pg", false, 0, pgbackrest...)}, nil, nil,
			"ledger-pg", []string{"pgbackrest", "bucket ledger-pgbackrest"}, "write access"},
		{"CloudNativePG's barman-cloud to GCS: storage.objects.create denied", []LogSet{minedSet("catalog-pg", false, 0, cnpg...)}, nil, nil,
			"catalog-pg", []string{"barman", "bucket catalog-pg-backups", "refuses the upload", "HTTP 403"}, "write access"},
		{"rsync to an archive host that refuses connections", []LogSet{minedSet("billing-pg", false, 0, rsync...)}, nil, nil,
			"billing-pg", []string{"archive host wal-archive-01, which it cannot reach", "Connection refused"}, "reachable"},
		{"no log: the archiver's counter and pg_stat_archiver agree, du shows pg_wal", nil,
			[]MetricSet{counter("ledger-pg", 0, 0, 0, 0, 3, 9, 15)}, []evidence.CommandOutput{statArchiver, du},
			"ledger-pg", []string{"WAL archiving on ledger-pg fails", "171G now"}, "archive command"},
		{"archiving works: segments archived, no failure", []LogSet{minedSet("orders-pg", false, 0, healthy...)}, nil, nil, "", nil, ""},
		{"a counter that was counting all along, nothing else", nil, []MetricSet{counter("ledger-pg", 3, 5, 7, 9, 11, 13)}, nil, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Metrics: c.metrics, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectArchiveFailing(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, c.first) {
				t.Errorf("first recommendation lacks %q: %+v", c.first, recs)
			}
		})
	}
}
