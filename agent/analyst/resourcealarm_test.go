package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// minedSet mines real log lines (one every 10 s from offset after the
// window's start) into a log set, as the gatherer does.
func minedSet(subject string, host bool, offset time.Duration, lines ...string) LogSet {
	m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
	for i, l := range lines {
		m.Add(win.Start.Add(offset+time.Duration(i)*10*time.Second), subject, MiningText(l))
	}
	return LogSet{Source: subject, Subject: subject, Namespace: "comms", Origin: SrcLogs, Host: host, Templates: m.Templates()}
}

func TestResourceAlarms(t *testing.T) {
	rabbitDisk := []string{
		`2026-11-20T08:39:07.881502+00:00 [info] <0.488.0> Free disk space is insufficient. Free bytes: 1998372864. Limit: 2000000000`,
		`2026-11-20T08:39:07.882019+00:00 [warning] <0.484.0> disk resource limit alarm set on node 'rabbit@mq-01'.`,
		`2026-11-20T08:39:07.882019+00:00 [warning] <0.484.0> *** Publishers will be blocked until this alarm clears ***`,
	}
	blockedClient := []string{
		`2026-11-20T08:39:07.904Z WARN  amqp: connection.blocked received from amqp://mq-01.msg.internal:5672 reason="low on disk"`,
		`2026-11-20T08:39:12.906Z ERROR publish sms.outbound: confirm timeout after 5000ms (connection blocked by broker)`,
	}
	cases := []struct {
		name     string
		sets     []LogSet
		subject  string // "" for no finding
		host     string
		resource string
		weight   float64 // at least (or, when resolved, at most)
		clients  string
		resolved bool
	}{
		{"RabbitMQ free-disk alarm in the broker's own log, a client blocked",
			[]LogSet{minedSet("rabbitmq-mq-01", true, 0, rabbitDisk...), minedSet("sms-gateway", false, time.Second, blockedClient...)},
			"rabbitmq", "rabbitmq-mq-01", "disk", 0.9, "sms-gateway", false},
		{"RabbitMQ memory alarm (3.x console format)",
			[]LogSet{minedSet("rmq-0", true, 0,
				`2024-01-10 12:00:00.123 [warning] <0.147.0> memory resource limit alarm set on node 'rabbit@rmq-0'.`,
				`2024-01-10 12:00:00.124 [warning] <0.147.0> *** Publishers will be blocked until this alarm clears ***`)},
			"rabbitmq", "rmq-0", "memory", 0.9, "", false},
		{"the alarm cleared later",
			[]LogSet{minedSet("rabbitmq-mq-01", true, 0, append(rabbitDisk,
				`2026-11-20T08:52:10.101010+00:00 [warning] <0.484.0> disk resource limit alarm cleared on node 'rabbit@mq-01'`)...)},
			"rabbitmq", "rabbitmq-mq-01", "disk", 0.4, "", true},
		{"Elasticsearch flood-stage watermark",
			[]LogSet{minedSet("es-data-1", true, 0,
				`[2024-03-01T10:00:00,123][WARN ][o.e.c.r.a.DiskThresholdMonitor] [es-data-1] flood stage disk watermark [95%] exceeded on [x1][es-data-1][/usr/share/elasticsearch/data/nodes/0] free: 2.1gb[4.2%], all indices on this node will be marked read-only`)},
			"elasticsearch", "es-data-1", "disk", 0.9, "", false},
		{"a client quoting Redis refusing writes (one hop away)",
			[]LogSet{minedSet("cart-api", false, 0,
				`2024-05-02T10:11:12Z ERROR cart save failed: MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist on disk.`,
				`2024-05-02T10:11:22Z ERROR cart save failed: MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist on disk.`)},
			"redis", "", "disk", 0.8, "cart-api", false},
		{"a client's host log quoting Redis's OOM reply (Lettuce): the client, not the server",
			[]LogSet{minedSet("orders-api", true, 0,
				`2026-11-25T10:11:00.000Z ERROR [orders-api-7d4b9c6f88-4kq2s] c.s.o.IdempotencyStore : reservation failed: io.lettuce.core.RedisCommandExecutionException: OOM command not allowed when used memory > 'maxmemory'.`,
				`2026-11-25T10:11:05.000Z ERROR [orders-api-7d4b9c6f88-4kq2s] c.s.o.IdempotencyStore : reservation failed: io.lettuce.core.RedisCommandExecutionException: OOM command not allowed when used memory > 'maxmemory'.`)},
			"redis", "", "memory", 0.8, "", false},
		{"redis-cli in the server's own pod answering OOM",
			[]LogSet{minedSet("redis-orders", true, 0,
				`2026-11-25T10:12:00Z (error) OOM command not allowed when used memory > 'maxmemory'.`)},
			"redis", "redis-orders", "memory", 0.9, "", false},
		{"ordinary broker lines are no alarm",
			[]LogSet{minedSet("rabbitmq-mq-01", true, 0,
				`2026-11-20T08:12:44.102311+00:00 [info] <0.1193.0> accepting AMQP connection <0.1193.0> (10.20.14.51:40122 -> 10.20.9.7:5672)`,
				`2026-11-20T08:12:44.108845+00:00 [info] <0.1193.0> connection <0.1193.0> (10.20.14.51:40122 -> 10.20.9.7:5672): user 'sms-gateway' authenticated and granted access to vhost 'comms'`)},
			"", "", "", 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectResourceAlarms(&Gathered{Logs: c.sets, Window: win}, nil)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("host") != c.host || f.fact("resource") != c.resource || f.fact("clients") != c.clients {
				t.Errorf("subject %q host %q resource %q clients %q; want %q %q %q %q", f.Subject, f.fact("host"), f.fact("resource"), f.fact("clients"), c.subject, c.host, c.resource, c.clients)
			}
			if c.resolved != (f.fact("resolved") != "") || !c.resolved && f.Weight < c.weight || c.resolved && f.Weight > c.weight {
				t.Errorf("weight %.2f resolved %q; want %.2f resolved %v", f.Weight, f.fact("resolved"), c.weight, c.resolved)
			}
		})
	}
}

func TestResourceAlarmDescription(t *testing.T) {
	fs := detectResourceAlarms(&Gathered{Logs: []LogSet{
		minedSet("rabbitmq-mq-01", true, 0,
			`2026-11-20T08:39:07.881502+00:00 [info] <0.488.0> Free disk space is insufficient. Free bytes: 1998372864. Limit: 2000000000`,
			`2026-11-20T08:39:07.882019+00:00 [warning] <0.484.0> disk resource limit alarm set on node 'rabbit@mq-01'.`),
		minedSet("sms-gateway", false, time.Second, `2026-11-20T08:39:07.904Z WARN  amqp: connection.blocked received from amqp://mq-01.msg.internal:5672 reason="low on disk"`),
	}, Window: win}, nil)
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	h := &Hypothesis{Kind: KindResourceAlarm, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
	d := resourceAlarm.describe(h, Scope{})
	for _, want := range []string{"rabbitmq server rabbitmq-mq-01", "free-disk alarm", "blocks its clients' publishes", "free 1.998 GB, below its limit of 2.000 GB", "clients are blocked: sms-gateway"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
	// A client's timeout supports the alarm; its deploy does not trigger it.
	timeout := &Finding{Kind: KindTimeout, Subject: "sms-gateway", Facts: map[string]string{"caller": "sms-gateway"}}
	if !supports(h, timeout) {
		t.Error("a blocked client's timeout should support the alarm")
	}
	deploy := &Finding{Kind: KindDeploy, Subject: "sms-gateway"}
	if resourceAlarm.fitsChange(h, deploy) {
		t.Error("a client's deploy should not trigger the server's alarm")
	}
}

// A search domain's flood-stage block as its clients read it (ES 7+ and
// OpenSearch word it "disk usage exceeded flood-stage watermark"), named
// after the managed domain its CloudWatch metrics show, with the
// retention change that grew it.
func TestResourceAlarmSearchDomain(t *testing.T) {
	clients := map[string][]string{
		"fluent-bit (opensearch output)": {
			`{"took":0,"errors":true,"items":[{"create":{"_index":"audit-2026.11.24","_id":"Lz81zhFrSHuTKWjikxyu","status":429,"error":{"type":"cluster_block_exception","reason":"index [audit-2026.11.24] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"}}}]}`,
			`{"took":0,"errors":true,"items":[{"create":{"_index":"audit-2026.11.24","_id":"wgSpaqQguJI1HbPV0xjR","status":429,"error":{"type":"cluster_block_exception","reason":"index [audit-2026.11.24] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"}}}]}`},
		"logstash (elasticsearch output)": {
			`[2024-02-11T09:14:02,118][INFO ][logstash.outputs.elasticsearch][main] Retrying failed action {:status=>429, :action=>["index", {:_index=>"logs-2024.02.11"}], :error=>{"type"=>"cluster_block_exception", "reason"=>"index [logs-2024.02.11] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"}}`,
			`[2024-02-11T09:14:12,120][INFO ][logstash.outputs.elasticsearch][main] Retrying failed action {:status=>429, :action=>["index", {:_index=>"logs-2024.02.11"}], :error=>{"type"=>"cluster_block_exception", "reason"=>"index [logs-2024.02.11] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"}}`},
		"a Java client (ES 6 wording)": {
			`2024-02-11 09:14:02.118 ERROR 1 --- [bulk-1] c.a.AuditWriter : bulk failed: ElasticsearchStatusException[Elasticsearch exception [type=cluster_block_exception, reason=blocked by: [FORBIDDEN/12/index read-only / allow delete (api)];]]`,
			`2024-02-11 09:14:12.120 ERROR 1 --- [bulk-1] c.a.AuditWriter : bulk failed: ElasticsearchStatusException[Elasticsearch exception [type=cluster_block_exception, reason=blocked by: [FORBIDDEN/12/index read-only / allow delete (api)];]]`},
	}
	dims := map[string]string{"DomainName": "audit-logs", "ClientId": "310987654321"}
	metrics := []MetricSet{
		cwSeries("AWS/ES/FreeStorageSpace", dims, 15900, 12000, 9000, 6000, 4850),
		cwSeries("AWS/ES/ClusterIndexWritesBlocked", dims, 0, 0, 1, 1, 1),
	}
	retention := evidence.Change{Timestamp: win.Start.Add(-12 * 24 * time.Hour), Service: "audit-logs", Kind: "config", Description: "ISM policy audit-retention: delete after 30d -> 90d"}
	allocation := evidence.CommandOutput{Command: `curl -s "https://search.example/_cat/allocation?v"`, Lines: []string{
		"shards disk.indices disk.used disk.avail disk.total disk.percent host ip node",
		"    42       91.2gb    95.1gb      4.8gb     99.9gb           95 x.x.x.x x.x.x.x 5b1e3f0a",
	}}
	for name, lines := range clients {
		t.Run(name, func(t *testing.T) {
			if k, _ := ClassifyLine(lines[0]); k == KindDatabase {
				t.Errorf("a search cluster's block read as a database error")
			}
			set := minedSet("shipper", false, 0, lines...)
			// Without the domain's metrics: the kind of server.
			fs := detectResourceAlarms(&Gathered{Logs: []LogSet{set}, Window: win}, nil)
			if len(fs) != 1 || fs[0].Subject != "elasticsearch" || fs[0].fact("clients") != "shipper" {
				t.Fatalf("want one alarm of elasticsearch blocking shipper, got %+v", fs)
			}
			fs = detectResourceAlarms(&Gathered{Logs: []LogSet{set}, Metrics: metrics, Earlier: []evidence.Change{retention},
				Commands: []evidence.CommandOutput{allocation}, Window: win}, nil)
			if len(fs) != 1 || fs[0].Subject != "audit-logs" || fs[0].fact("resource") != "disk" {
				t.Fatalf("want the domain audit-logs out of disk, got %+v", fs)
			}
			h := &Hypothesis{Kind: KindResourceAlarm, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := resourceAlarm.describe(h, Scope{})
			for _, want := range []string{"search domain audit-logs", "free-disk alarm", "delete after 30d -> 90d", "clients are blocked: shipper"} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
			ev := strings.Join(fs[0].Evidence, "\n")
			for _, want := range []string{"ClusterIndexWritesBlocked of domain audit-logs is 1", "FreeStorageSpace of domain audit-logs fell from 15.5 GiB to 4.7 GiB", "data nodes at 95% disk used"} {
				if !strings.Contains(ev, want) {
					t.Errorf("evidence lacks %q: %s", want, ev)
				}
			}
			shipperChange := &Finding{Kind: KindConfigChange, Subject: "shipper"}
			if resourceAlarm.fitsChange(h, shipperChange) {
				t.Error("the client's own config change should not trigger the domain's disk alarm")
			}
		})
	}
}

// A client's line that wraps the search cluster's block deep in its own
// exception chain: the description quotes the server's words and names the
// flood-stage watermark and the read-only indices, in every wording.
func TestResourceAlarmWrappedBlock(t *testing.T) {
	for _, line := range []string{
		`2024-06-03T10:48:31.904Z ERROR 1 --- [api] [nio-8080-exec-2] o.a.c.c.C.[.[.[/].[dispatcherServlet]    : Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception [Request processing failed: org.springframework.dao.DataAccessResourceFailureException: co.elastic.clients.elasticsearch._types.ElasticsearchException: [es/index] failed: [cluster_block_exception] index [reviews] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];] with root cause`,
		`2024-06-03 10:48:31,904 ERROR [worker-3] c.e.IndexWriter - index request failed after 3 retries: org.opensearch.client.ResponseException: method [PUT], host [https://os:9200], URI [/orders/_doc/1], status line [HTTP/1.1 429 Too Many Requests] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block]`,
		`2024-06-03T10:48:31Z error="elastic: Error 403 (Forbidden): blocked by: [FORBIDDEN/12/index read-only / allow delete (api)]; [type=cluster_block_exception]" msg="indexing document into the catalog search index after the nightly import job finished its batch"`,
	} {
		fs := detectResourceAlarms(&Gathered{Logs: []LogSet{minedSet("api", false, 0, line, line)}, Window: win}, nil)
		if len(fs) != 1 {
			t.Fatalf("want one alarm, got %+v", fs)
		}
		h := &Hypothesis{Kind: KindResourceAlarm, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		d := resourceAlarm.describe(h, Scope{})
		for _, want := range []string{"flood-stage watermark", "read-only", "index.blocks.read_only_allow_delete", "/12/"} {
			if !strings.Contains(d, want) {
				t.Errorf("description lacks %q: %s", want, d)
			}
		}
	}
	// A RabbitMQ alarm is not described as a search cluster's block.
	if searchReadOnly(`disk resource limit alarm set on node 'rabbit@mq-01'.`) {
		t.Error("a broker's alarm read as a flood-stage block")
	}
}

// A server is named by its instance, not its software: the workload that
// runs it (by name or image) when only its clients name it, or the
// workload whose log shows its own failed save; its own reason (the
// device full) is the why.
func TestResourceAlarmNamesInstance(t *testing.T) {
	pod := func(name, image string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "identity"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	}
	client := minedSet("login-api", false, time.Minute,
		`{"level":50,"time":1795513983417,"pid":1,"err":{"type":"ReplyError","message":"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled"},"msg":"session store write failed"}`,
		`{"level":50,"time":1795513993417,"pid":1,"err":{"type":"ReplyError","message":"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled"},"msg":"session store write failed"}`)
	server := minedSet("sessions-cache", false, 0,
		`48522:C 24 Nov 2026 09:38:29.108 # Write error saving DB on disk: No space left on device`,
		`1:M 24 Nov 2026 09:38:29.403 # Background saving error`)
	aof := minedSet("kv-store", false, 0,
		`1:M 24 Nov 2026 09:38:29.403 # Error writing to the AOF file: No space left on device`)
	cases := []struct {
		name    string
		sets    []LogSet
		pods    []corev1.Pod
		subject string
		why     bool
	}{
		{"clients only; one workload runs redis (by name)", []LogSet{client},
			[]corev1.Pod{pod("login-api-84f6d9c7b5-7mzq2", "ghcr.io/acme/login-api:8.4.0"), pod("redis-sessions-0", "redis:7.2")}, "redis-sessions", false},
		{"clients only; one workload runs redis (by image)", []LogSet{client},
			[]corev1.Pod{pod("login-api-84f6d9c7b5-7mzq2", "ghcr.io/acme/login-api:8.4.0"), pod("kv-0", "docker.io/bitnami/redis:7.2.4")}, "kv", false},
		{"clients only; two redis workloads: which is unknown", []LogSet{client},
			[]corev1.Pod{pod("redis-sessions-0", "redis:7.2"), pod("redis-cache-0", "redis:7.2")}, "redis", false},
		{"the server's own failed save names it, with its reason", []LogSet{client, server},
			[]corev1.Pod{pod("sessions-cache-0", "valkey/valkey:8"), pod("redis-other-0", "redis:7.2")}, "sessions-cache", true},
		{"an append-only file that cannot be written", []LogSet{aof},
			[]corev1.Pod{pod("kv-store-0", "redis:7.2")}, "kv-store", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Window: win}
			ev.K8s.Pods = c.pods
			fs := detectResourceAlarms(ev, nil)
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("want one alarm of %s, got %+v", c.subject, fs)
			}
			f := fs[0]
			if c.why != (f.fact("why") != "") || c.why && !strings.Contains(f.fact("why"), "No space left on device") {
				t.Errorf("why %q; want one: %v", f.fact("why"), c.why)
			}
			if f.fact("resource") != "disk" {
				t.Errorf("resource %q, want disk", f.fact("resource"))
			}
			h := &Hypothesis{Kind: KindResourceAlarm, Subject: f.Subject, Primary: []*Finding{&f}}
			if d := resourceAlarm.describe(h, Scope{}); c.subject != "redis" && !strings.Contains(d, "redis server "+c.subject) {
				t.Errorf("description names no instance: %s", d)
			}
		})
	}
}

// TestResourceAlarmRedisNoRoom reads a Redis at maxmemory refusing writes,
// as its clients' libraries raise it (redis-py's OutOfMemoryError, Jedis,
// ioredis), named after the instance, with why it makes no room: a
// noeviction policy and keys written without a TTL (redis-cli's answers).
func TestResourceAlarmRedisNoRoom(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "refund-redis-0", Namespace: "payments"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis:7.2"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "refund-worker-78c9d5f6b-h2w4q", Namespace: "payments"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "ghcr.io/acme/refund-worker:3.6.0"}}}},
	}
	info := []evidence.CommandOutput{
		{Run: "redis-cli info memory", Pod: "refund-redis-0", Lines: []string{"used_memory:2147481920", "maxmemory:2147483648", "maxmemory_policy:noeviction"}},
		{Run: "redis-cli info keyspace", Pod: "refund-redis-0", Lines: []string{"# Keyspace", "db0:keys=8412907,expires=1187,avg_ttl=211843"}},
		{Run: "redis-cli ttl refund:idem:7f1c0b2e", Pod: "refund-redis-0", Lines: []string{"(integer) -1"}},
	}
	for _, line := range []string{
		`redis.exceptions.OutOfMemoryError: command not allowed when used memory > 'maxmemory'.`,
		`redis.clients.jedis.exceptions.JedisDataException: OOM command not allowed when used memory > 'maxmemory'.`,
		`{"level":"error","msg":"claim failed","err":"ReplyError: OOM command not allowed when used memory > 'maxmemory'."}`,
	} {
		if k, _ := ClassifyLine(line); k == KindOOMKilled {
			t.Errorf("%q read as the process out of memory", line)
		}
		for _, withInfo := range []bool{true, false} {
			ev := &Gathered{Logs: []LogSet{minedSet("refund-worker", false, time.Minute, line, line)}, Window: win}
			ev.K8s.Pods = pods
			if withInfo {
				ev.Commands = info
			}
			fs := detectResourceAlarms(ev, nil)
			if len(fs) != 1 || fs[0].Subject != "refund-redis" || fs[0].fact("resource") != "memory" {
				t.Fatalf("%q: want one memory alarm of refund-redis, got %+v", line, fs)
			}
			why := fs[0].fact("why")
			if withInfo != (strings.Contains(why, "noeviction") && strings.Contains(why, "1187 of its 8412907 keys have a TTL")) {
				t.Errorf("%q: why %q with redis-cli's answers %v", line, why, withInfo)
			}
		}
	}
}
