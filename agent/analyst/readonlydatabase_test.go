package analyst

import (
	"strings"
	"testing"
	"time"
)

func TestReadOnlyWrites(t *testing.T) {
	cases := []struct {
		name    string
		sets    []LogSet
		subject string // "" for no finding
		engine  string
		standby bool
	}{
		{"PostgreSQL writer demoted after a failover, its own log confirms",
			[]LogSet{
				minedSet("orders-api", false, 0,
					`Traceback (most recent call last):`,
					`psycopg2.errors.ReadOnlySqlTransaction: cannot execute INSERT in a read-only transaction`,
					`sqlalchemy.exc.InternalError: (psycopg2.errors.ReadOnlySqlTransaction) cannot execute INSERT in a read-only transaction`),
				minedSet("orders-db-instance-1", true, -time.Minute,
					`2026-11-13 02:10:52 UTC::@:[412]:LOG:  received fast shutdown request`,
					`2026-11-13 02:11:03 UTC::@:[511]:LOG:  entering standby mode`,
					`2026-11-13 02:11:04 UTC::@:[503]:LOG:  database system is ready to accept read-only connections`,
					`2026-11-13 02:11:48 UTC:10.30.2.77(44516):orders_app@orders:[22256]:ERROR:  cannot execute INSERT in a read-only transaction`),
			}, "orders-db-instance-1", "PostgreSQL database", true},
		{"MySQL replica, client only",
			[]LogSet{minedSet("billing-api", false, 0,
				`2024-04-02T03:11:09Z ERROR charge failed: Error 1290 (HY000): The MySQL server is running with the --read-only option so it cannot execute this statement`)},
			"MySQL database", "MySQL database", false},
		{"Redis replica",
			[]LogSet{minedSet("session-api", false, 0,
				`2024-04-02T03:11:09Z ERROR save session: READONLY You can't write against a read only replica.`)},
			"Redis", "Redis", false},
		{"Redis replica read from a client's host log file",
			[]LogSet{minedSet("session-api", true, 0,
				`2024-04-02T03:11:09Z ERROR save session: READONLY You can't write against a read only replica.`)},
			"Redis", "Redis", false},
		{"reads from a replica on purpose are no failure",
			[]LogSet{minedSet("report-api", false, 0,
				`2024-04-02T03:11:09Z INFO opened reporting pool against replica db-ro.internal:5432 (default_transaction_read_only=on)`)},
			"", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectReadOnlyWrites(&Gathered{Logs: c.sets, Window: win}, nil)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if f.Subject != c.subject || f.fact("engine") != c.engine || (f.fact("standby") != "") != c.standby {
				t.Errorf("subject %q engine %q standby %q; want %q %q %v", f.Subject, f.fact("engine"), f.fact("standby"), c.subject, c.engine, c.standby)
			}
			d := readOnlyDB.describe(&Hypothesis{Kind: KindReadOnlyDB, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"read-only", "replica", "writer"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if c.standby && !strings.Contains(d, "failover") {
				t.Errorf("description lacks the failover: %s", d)
			}
		})
	}
}

// TestReadOnlyWritesDuringElection reads writes refused while a MongoDB
// replica set elects a new primary (mongod's JSON log, a pino client
// writing to a host log file): the replica set is the subject, the new
// primary and its time are named, and writes that stopped failing right
// after the election recovered with it.
func TestReadOnlyWritesDuringElection(t *testing.T) {
	refused := `{"level":50,"time":1780391523000,"pid":1,"hostname":"profile-service-7c9b8f5d6-m2kq9","msg":"request failed","req":{"method":"PATCH","url":"/v1/profiles/me"},"res":{"statusCode":500},"err":{"type":"MongoServerError","message":"not primary","code":10107,"codeName":"NotWritablePrimary","errorLabels":["RetryableWriteError"]},"responseTime":15}`
	served := `{"level":30,"time":1780391523000,"pid":1,"hostname":"profile-service-7c9b8f5d6-m2kq9","msg":"request completed","res":{"statusCode":200},"responseTime":4}`
	elected := []string{
		`{"t":{"$date":"2026-06-02T09:12:03.020+00:00"},"s":"I","c":"ELECTION","id":4615652,"ctx":"ReplCoord-3","msg":"Starting an election","attr":{"reason":"ElectionTimeout","term":19}}`,
		`{"t":{"$date":"2026-06-02T09:12:05.744+00:00"},"s":"I","c":"ELECTION","id":21450,"ctx":"ReplCoord-2","msg":"Election succeeded, assuming primary role","attr":{"term":19}}`,
	}
	for _, c := range []struct {
		name      string
		client    []string
		recovered bool
	}{
		{"errors stop right after the election", []string{refused, refused, served, served, served, served}, true},
		{"errors go on long after it", append([]string{refused}, strings.Split(strings.Repeat(refused+"\n", 20), "\n")[:20]...), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sets := []LogSet{minedSet("profile-service", true, 0, c.client...), minedSet("mongo-profiles-1", true, -10*time.Second, elected...)}
			fs := detectReadOnlyWrites(&Gathered{Logs: sets, Window: win}, nil)
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if f.Subject != "mongo-profiles" || f.fact("new_primary") != "mongo-profiles-1" || f.fact("clients") != "profile-service" || (f.fact("recovered") != "") != c.recovered {
				t.Errorf("subject %q new primary %q clients %q recovered %q", f.Subject, f.fact("new_primary"), f.fact("clients"), f.fact("recovered"))
			}
			d := readOnlyDB.describe(&Hypothesis{Kind: KindReadOnlyDB, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"elected a new primary", "mongo-profiles-1 became primary", "profile-service"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if c.recovered != strings.Contains(d, "over") {
				t.Errorf("recovered %v, description %s", c.recovered, d)
			}
		})
	}
}
