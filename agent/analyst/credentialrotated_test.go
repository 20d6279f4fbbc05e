package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestRotatedCredential reads clients refused for their password some
// time after a rotation changed it, in several drivers' and servers'
// words, with the rotation recorded by a rotation function's log, the
// database's own ALTER USER, a CloudTrail event or the secret's
// LastRotatedDate; refusals that began before any rotation, a rotation a
// week old and a permission denial are not this cause.
func TestRotatedCredential(t *testing.T) {
	jdbc := []string{
		`2026-11-24T04:27:03.099Z  WARN 1 --- [statements-api] [io-8080-exec-46] o.h.engine.jdbc.spi.SqlExceptionHelper   : SQL Error: 0, SQLState: 28P01`,
		`2026-11-24T04:27:03.099Z ERROR 1 --- [statements-api] [io-8080-exec-46] o.h.engine.jdbc.spi.SqlExceptionHelper   : FATAL: password authentication failed for user "statements_app"`,
	}
	mysqlClient := []string{
		`time=2026-03-14T09:45:10Z level=error msg="open connection" err="Error 1045 (28000): Access denied for user 'billing'@'10.4.2.17' (using password: YES)"`,
	}
	redisClient := []string{
		`{"level":"error","time":1773481510000,"msg":"redis connect failed","err":"WRONGPASS invalid username-password pair or user is disabled."}`,
	}
	mssqlClient := []string{
		`2026-03-14 09:45:10,120 ERROR [pool-2] Login failed for user 'orders_rw'. ClientConnectionId:1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718`,
	}
	lambda := []string{
		`[INFO]	2026-11-24T04:00:09.000Z	b7e1c0d4	createSecret: Successfully put secret for ARN arn:aws:secretsmanager:us-east-2:135792468013:secret:prod/statements/db-Xq81Tn and version 6a1f3e92.`,
		`[INFO]	2026-11-24T04:00:13.000Z	b7e1c0d4	setSecret: Successfully set password for user statements_app in PostgreSQL DB for secret arn arn:aws:secretsmanager:us-east-2:135792468013:secret:prod/statements/db-Xq81Tn.`,
		`[INFO]	2026-11-24T04:00:17.000Z	b7e1c0d4	finishSecret: Successfully set AWSCURRENT stage to version 6a1f3e92 for secret arn:aws:secretsmanager:us-east-2:135792468013:secret:prod/statements/db-Xq81Tn.`,
	}
	pgServer := []string{
		`2026-11-24 04:00:13 UTC:10.30.9.14(50122):postgres@postgres:[22871]:LOG:  statement: ALTER USER "statements_app" WITH PASSWORD <REDACTED>`,
	}
	pgRefusals := []string{
		`2026-11-24 04:34:58 UTC:10.30.1.138(59986):statements_app@statements:[13700]:FATAL:  password authentication failed for user "statements_app"`,
	}
	cloudTrail := []string{
		`{"eventVersion":"1.08","eventTime":"2026-03-14T09:05:00Z","eventSource":"secretsmanager.amazonaws.com","eventName":"RotateSecret","requestParameters":{"secretId":"arn:aws:secretsmanager:eu-west-1:111122223333:secret:prod/billing/mysql-AbC123"}}`,
	}
	describeSecret := evidence.CommandOutput{Command: "aws secretsmanager describe-secret --secret-id prod/cache/redis", Lines: strings.Split(`{
    "Name": "prod/cache/redis",
    "RotationEnabled": true,
    "LastRotatedDate": "2026-03-14T09:20:02.118000+00:00",
    "LastChangedDate": "2026-03-14T09:20:02.100000+00:00"
}`, "\n")}
	oldPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "statements-api-5d7f9b8c46-2hq9v", Namespace: "comms",
		CreationTimestamp: metav1.NewTime(now.Add(-72 * time.Hour))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "DB_PASSWORD",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "statements-db"}, Key: "password"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cases := []struct {
		name     string
		sets     []LogSet
		cmds     []evidence.CommandOutput
		pods     []corev1.Pod
		subject  string // "" for no finding
		want     []string
		podsSeen bool
	}{
		{"JDBC refusals after AWS's rotation function and the server's ALTER USER; pods older than it",
			[]LogSet{minedSet("statements-api", false, 0, jdbc...), minedSet("SecretsManagerstatements-db-rotation", false, -40*time.Minute, lambda...),
				minedSet("statements-pg", true, -40*time.Minute, append(pgServer, pgRefusals...)...)},
			nil, []corev1.Pod{oldPod}, "statements-api", []string{"rotated", "prod/statements/db", "old password", "statements_app", "Secret statements-db"}, true},
		{"MySQL 1045 after a CloudTrail RotateSecret",
			[]LogSet{minedSet("billing-api", false, 0, mysqlClient...), minedSet("cloudtrail", false, -30*time.Minute, cloudTrail...)},
			nil, nil, "billing-api", []string{"RotateSecret", "prod/billing/mysql", "Access denied"}, false},
		{"Redis WRONGPASS after the secret's LastRotatedDate (aws CLI JSON)",
			[]LogSet{minedSet("session-api", false, 0, redisClient...)},
			[]evidence.CommandOutput{describeSecret}, nil, "session-api", []string{"LastRotatedDate", "prod/cache/redis", "WRONGPASS"}, false},
		{"SQL Server login failed after the server's ALTER LOGIN",
			[]LogSet{minedSet("orders-svc", false, 0, mssqlClient...), minedSet("mssql-audit", false, -20*time.Minute,
				`2026-03-14 09:25:00.11 spid61 ALTER LOGIN orders_rw WITH PASSWORD = '******'`)},
			nil, nil, "orders-svc", []string{"ALTER LOGIN", "Login failed"}, false},
		{"Redis WRONGPASS after an ElastiCache user rotation function's steps",
			[]LogSet{minedSet("auth-api", false, 0, redisClient...), minedSet("/aws/lambda/elasticache-user-rotation", false, -25*time.Minute,
				"[INFO]\t2026-03-14T09:20:01.402Z\t3f8c1a2e\tRotation step createSecret for arn:aws:secretsmanager:eu-central-1:123456789012:secret:prod/identity/sessions-redis-Qk3x9P: new AWSPENDING version",
				"[INFO]\t2026-03-14T09:20:02.118Z\t3f8c1a2e\tRotation step setSecret: elasticache.modify_user(UserId='sessions', Passwords=[<AWSPENDING>]) -> Status modifying",
				"[INFO]\t2026-03-14T09:20:04.204Z\t3f8c1a2e\tRotation step finishSecret: version 8b1e4c7a marked AWSCURRENT")},
			nil, nil, "auth-api", []string{"Rotation step setSecret", "modify_user", "WRONGPASS"}, false},
		{"refusals that began before the rotation are not its doing",
			[]LogSet{minedSet("statements-api", false, -90*time.Minute, jdbc...), minedSet("SecretsManagerstatements-db-rotation", false, -40*time.Minute, lambda...)},
			nil, nil, "", nil, false},
		{"no rotation at all: a wrong password is an authentication failure, not this",
			[]LogSet{minedSet("billing-api", false, 0, mysqlClient...)},
			nil, nil, "", nil, false},
		{"a permission denial after a rotation is not a stale password",
			[]LogSet{minedSet("reports", false, 0, `2026-03-14T09:45:10Z ERROR query failed: pq: permission denied for table invoices`),
				minedSet("cloudtrail", false, -30*time.Minute, cloudTrail...)},
			nil, nil, "", nil, false},
	}
	// A change recording the rotation in the secret manager's words.
	for _, l := range []string{"Secrets Manager scheduled rotation of prod/identity/sessions-redis", "immediate rotation of secret prod/billing/mysql requested"} {
		if !rotationRE.MatchString(l) {
			t.Errorf("%q is a rotation", l)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Window: win}
			ev.K8s.Pods = c.pods
			if c.subject == "" {
				if fs := detectRotatedCredential(ev, nil); len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			fs := detectRotatedCredential(ev, nil)
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if f.Subject != c.subject {
				t.Errorf("subject %q, want %q", f.Subject, c.subject)
			}
			if (f.fact("pods_since") != "") != c.podsSeen {
				t.Errorf("pods_since %q, want seen=%v", f.fact("pods_since"), c.podsSeen)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describe(h, Scope{}) + " " + strings.Join(f.Evidence, " ")
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description and evidence lack %q:\n%s", w, d)
				}
			}
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Restart "+c.subject) {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
}
