package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
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
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
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

// TestReadOnlyWritesAfterManagedFailover reads a managed database's own
// record of a failover — `aws rds describe-events` in text, JSON and table
// form, and RDS events delivered to a log group — around writes refused
// read-only: the failover is the root, named with the instance it went
// to and the old writer that went down, and writes that stopped failing
// long before the window's end recovered. A failover hours before the
// errors is not theirs.
func TestReadOnlyWritesAfterManagedFailover(t *testing.T) {
	at := func(d time.Duration) string { return win.Start.Add(d).UTC().Format("2006-01-02T15:04:05.000000+00:00") }
	mysqlRefused := `2026-03-14T09:42:33.577Z ERROR 1 --- [orders-api] [io-8080-exec-16] o.h.engine.jdbc.spi.SqlExceptionHelper   : The MySQL server is running with the --read-only option so it cannot execute this statement`
	pgRefused := `psycopg2.errors.ReadOnlySqlTransaction: cannot execute UPDATE in a read-only transaction`
	text := []evidence.CommandOutput{
		{Command: "aws rds describe-events --source-type db-cluster --source-identifier orders-aurora --output text", Lines: []string{
			at(-30*time.Second) + "\tStarted cross AZ failover to DB instance: orders-aurora-2",
			at(-2*time.Second) + "\tCompleted failover to DB instance: orders-aurora-2"}},
		{Command: "aws rds describe-events --source-type db-instance --source-identifier orders-aurora-1 --output text", Lines: []string{
			at(-40*time.Second) + "\tThe database engine on DB instance orders-aurora-1 stopped unexpectedly and is being restarted. Check the error log for details."}},
	}
	jsonOut := []evidence.CommandOutput{{Command: "aws rds describe-events --source-identifier ledger-pg --source-type db-instance", Lines: strings.Split(`{
    "Events": [
        {
            "SourceIdentifier": "ledger-pg",
            "SourceType": "db-instance",
            "Message": "Multi-AZ instance failover started.",
            "EventCategories": ["failover"],
            "Date": "`+at(54*time.Minute)+`"
        },
        {
            "SourceIdentifier": "ledger-pg",
            "SourceType": "db-instance",
            "Message": "Multi-AZ instance failover completed",
            "EventCategories": ["failover"],
            "Date": "`+at(54*time.Minute+50*time.Second)+`"
        }
    ]
}`, "\n")}}
	table := []evidence.CommandOutput{{Command: "aws rds describe-events --source-type db-cluster --source-identifier cart-aurora --output table", Lines: []string{
		"-----------------------------------------------------------------------------------",
		"|                                 DescribeEvents                                  |",
		"+----------------------------------+----------------------------------------------+",
		"|  " + at(-20*time.Second) + "  |  Started cross AZ failover to DB instance: cart-aurora-3  |",
		"+----------------------------------+----------------------------------------------+"}}}
	old := []evidence.CommandOutput{{Command: "aws rds describe-events --source-identifier orders-aurora", Lines: []string{
		at(-3*time.Hour) + "\tStarted cross AZ failover to DB instance: orders-aurora-2"}}}
	// ElastiCache's events name both nodes; the client's configuration
	// (a task definition's environment, its start-up line) names the old
	// primary's own node endpoint.
	elasti := []evidence.CommandOutput{
		{Command: "aws elasticache describe-events --source-type replication-group --source-identifier sessions-prod --duration 120", Lines: strings.Split(`{
    "Events": [
        {"SourceIdentifier": "sessions-prod", "SourceType": "replication-group", "Message": "Failover to replica node sessions-prod-002 completed", "Date": "`+at(-5*time.Second)+`"},
        {"SourceIdentifier": "sessions-prod", "SourceType": "replication-group", "Message": "Failover from primary node sessions-prod-001 to replica node sessions-prod-002 completed", "Date": "`+at(-6*time.Second)+`"}
    ]
}`, "\n")},
		{Command: "aws elasticache describe-replication-groups --replication-group-id sessions-prod", Lines: []string{
			`"sessions-prod-001.sessions-prod.x7k2pq.use1.cache.amazonaws.com"`, `"sessions-prod-002.sessions-prod.x7k2pq.use1.cache.amazonaws.com"`}},
		{Command: "aws ecs describe-task-definition --task-definition session-api:41", Lines: []string{
			`{"name": "REDIS_ADDR", "value": "sessions-prod-001.sessions-prod.x7k2pq.use1.cache.amazonaws.com:6379"}`}},
	}
	elastiText := []evidence.CommandOutput{{Command: "aws elasticache describe-events --source-type replication-group --source-identifier cart-cache --output text", Lines: []string{
		"EVENTS\t" + at(-8*time.Second) + "\tFailover from master node cart-cache-0001-001 to replica node cart-cache-0001-002 completed\tcart-cache\treplication-group"}}}
	redisRefused := `ReplyError: READONLY You can't write against a read only replica.`
	refusedFor := func(line string, _ time.Duration, n int) []string {
		return strings.Split(strings.TrimSuffix(strings.Repeat(line+"\n", n), "\n"), "\n")
	}
	cases := []struct {
		name        string
		client      []string
		offset      time.Duration
		cmds        []evidence.CommandOutput
		logs        []LogSet
		failover    bool
		newWriter   string
		oldWriter   string
		subject     string
		recovered   bool
		description []string
	}{
		{"Aurora MySQL cross-AZ failover, text output, pool recycled within minutes",
			refusedFor(mysqlRefused, 0, 30), 0, text, nil, true, "orders-aurora-2", "orders-aurora-1", "orders-aurora", true,
			[]string{"failed over", "orders-aurora-2 became the writer", "stopped unexpectedly", "recovered"}},
		{"RDS Multi-AZ PostgreSQL failover, JSON output, errors still going on",
			refusedFor(pgRefused, 0, 4), 55 * time.Minute, jsonOut, nil, true, "", "", "ledger-pg", false,
			[]string{"failed over", "Multi-AZ instance failover started", "may still hold"}},
		{"table output",
			refusedFor(mysqlRefused, 0, 3), 0, table, nil, true, "cart-aurora-3", "", "cart-aurora", true,
			[]string{"cart-aurora-3 became the writer"}},
		{"RDS events delivered to a log group",
			refusedFor(mysqlRefused, 0, 3), 0, nil, []LogSet{minedSet("rds-events", false, -30*time.Second,
				`{"detail-type":"RDS DB Cluster Event","source":"aws.rds","detail":{"EventCategories":["failover"],"SourceIdentifier":"billing-aurora","Message":"Started cross AZ failover to DB instance: billing-aurora-1"}}`)},
			true, "billing-aurora-1", "", "", true, []string{"failed over"}},
		{"ElastiCache events as JSON, the client pinned to the old primary's node endpoint in its task definition",
			refusedFor(redisRefused, 0, 20), 0, elasti, nil, true, "sessions-prod-002", "sessions-prod-001", "sessions-prod", true,
			[]string{"failed over", "pinned to sessions-prod-001.sessions-prod.x7k2pq.use1.cache.amazonaws.com:6379", "node endpoint of the old primary"}},
		{"ElastiCache's older master-node wording as text, the node endpoint in the client's start-up line",
			refusedFor(redisRefused, 0, 20), 0, elastiText, []LogSet{minedSet("cart-api", false, -20*time.Minute, `level=info msg="redis client ready" addr=cart-cache-0001-001.cart-cache.abc123.euw1.cache.amazonaws.com:6379`)},
			true, "cart-cache-0001-002", "cart-cache-0001-001", "cart-cache", true,
			[]string{"pinned to cart-cache-0001-001.cart-cache.abc123.euw1.cache.amazonaws.com:6379"}},
		{"a failover three hours before the errors is not theirs",
			refusedFor(mysqlRefused, 0, 3), 0, old, nil, false, "", "", "MySQL database", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sets := append([]LogSet{minedSet("orders-api", false, c.offset, c.client...)}, c.logs...)
			fs := detectReadOnlyWrites(&Gathered{Logs: sets, Commands: c.cmds, Window: win}, nil)
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if (f.fact("failover") != "") != c.failover || f.fact("new_writer") != c.newWriter || f.fact("old_writer") != c.oldWriter || (f.fact("recovered") != "") != c.recovered {
				t.Errorf("failover %q new writer %q old writer %q recovered %q", f.fact("failover"), f.fact("new_writer"), f.fact("old_writer"), f.fact("recovered"))
			}
			if c.subject != "" && f.Subject != c.subject {
				t.Errorf("subject %q, want %q", f.Subject, c.subject)
			}
			d := readOnlyDB.describe(&Hypothesis{Kind: KindReadOnlyDB, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range c.description {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if !c.failover && strings.Contains(d, "failed over") {
				t.Errorf("a failover named without one: %s", d)
			}
		})
	}
}
