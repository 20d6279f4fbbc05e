package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A worker or server whose pool wait errors come with many tasks at a
// time in one process against a small pool: Celery's gevent pool with
// SQLAlchemy's QueuePool, gunicorn's gthread workers, Sidekiq on
// ActiveRecord, puma's threads; the pool size read from the error or the
// environment. Celery's prefork processes (each with its own pool), a
// concurrency close to the pool's size, or no pool errors are not this.
func TestDetectPoolUndersized(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	sqla := `[2026-05-01 11:40:06,184: ERROR/MainProcess] Task mailer.tasks.send_receipt[8390d8c8-3632-4e64-a349-29269a6fbb39] raised unexpected: TimeoutError('QueuePool limit of size 10 overflow 0 reached, connection timed out, timeout 30.00 (Background on this error at: https://sqlalche.me/e/20/3o7r)')`
	sqlaWeb := `2026-05-01 11:40:06 [ERROR] app: Exception on /v1/report [GET] sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 5 reached, connection timed out, timeout 10.00`
	rails := `2026-05-01T11:40:06.184Z pid=7 tid=2ph4 class=SyncJob jid=4f1c ERROR: ActiveRecord::ConnectionTimeoutError: could not obtain a connection from the pool within 5.000 seconds (waited 5.002 seconds); all pooled connections were in use`
	logs := func(subject, line string) []LogSet {
		set := LogSet{Source: subject + "-7b6c9f5d48-jc9dm", Subject: subject, Namespace: "billing", Origin: SrcLogs, HasBaseline: true}
		set.Templates = append(set.Templates, tmpl(line, 40, on, w.End))
		return []LogSet{set}
	}
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	deploy := func(name string, cmd, args []string, e []corev1.EnvVar) []appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "billing"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Command: cmd, Args: args, Env: e}}
		return []appsv1.Deployment{d}
	}
	change := evidence.Change{Timestamp: on.Add(-16 * time.Hour), Service: "mailer", Kind: "config", Description: "mailer: celery pool prefork -c 8 -> gevent -c 100 (I/O bound)"}
	cases := []struct {
		name        string
		logs        []LogSet
		deps        []appsv1.Deployment
		subject     string
		conc, size  string
		wantChanged bool
	}{
		{"Celery gevent -c 100 against DB_POOL_SIZE 10", logs("mailer", sqla),
			deploy("mailer", []string{"celery"}, []string{"-A", "mailer.worker", "worker", "-P", "gevent", "-c", "100", "-Q", "receipts"}, env("DB_POOL_SIZE", "10", "DB_MAX_OVERFLOW", "0")),
			"mailer", "100", "10", true},
		{"Celery --pool=eventlet --concurrency=64 in a shell command, size from the error", logs("mailer", sqla),
			deploy("mailer", []string{"sh", "-c"}, []string{"exec celery -A mailer.worker worker --pool=eventlet --concurrency=64"}, nil),
			"mailer", "64", "10", true},
		{"gunicorn gthread --threads 32, pool from the error", logs("reports", sqlaWeb),
			deploy("reports", []string{"gunicorn"}, []string{"--workers", "2", "--threads", "32", "app:app"}, nil),
			"reports", "32", "10", false},
		{"Sidekiq concurrency 25 on ActiveRecord's pool of 5", logs("sync-worker", rails),
			deploy("sync-worker", []string{"bundle", "exec", "sidekiq"}, nil, env("SIDEKIQ_CONCURRENCY", "25", "RAILS_DB_POOL", "5")),
			"sync-worker", "25", "5", false},
		{"prefork processes each have their own pool", logs("mailer", sqla),
			deploy("mailer", []string{"celery"}, []string{"-A", "mailer.worker", "worker", "-c", "100"}, env("DB_POOL_SIZE", "10")),
			"", "", "", false},
		{"concurrency close to the pool's size", logs("mailer", sqla),
			deploy("mailer", []string{"celery"}, []string{"worker", "-P", "gevent", "-c", "15"}, env("DB_POOL_SIZE", "10")),
			"", "", "", false},
		{"no pool errors", logs("mailer", `[2026-05-01 11:40:06,184: INFO/MainProcess] Task mailer.tasks.send_receipt[8390d8c8] succeeded in 0.4s`),
			deploy("mailer", []string{"celery"}, []string{"worker", "-P", "gevent", "-c", "100"}, env("DB_POOL_SIZE", "10")),
			"", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, K8s: K8sEvidence{Deployments: c.deps}, Earlier: []evidence.Change{change}, Window: w}
			f := onlyFinding(t, detectPoolUndersized(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("concurrency") != c.conc || f.fact("pool_size") != c.size || (f.fact("change") != "") != c.wantChanged {
				t.Errorf("concurrency %q pool %q change %q", f.fact("concurrency"), f.fact("pool_size"), f.fact("change"))
			}
			h := &Hypothesis{Kind: KindPoolUndersized, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "connection pool", "smaller than the concurrency", c.conc+" tasks at a time")
		})
	}
}
