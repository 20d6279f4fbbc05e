package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// cwSet is a CloudWatch metric as the gatherer keeps it: named
// Namespace/MetricName, each series labelled as GetMetricData results are
// (id, label, namespace, metric_name, stat and one label per dimension),
// with one point every five minutes from start.
func cwSet(namespace, metric, stat string, dims map[string]string, start time.Time, vals ...float64) MetricSet {
	l := evidence.Labels{"id": "m0", "label": metric, "namespace": namespace, "metric_name": metric, "__name__": metric, "stat": stat}
	for k, v := range dims {
		l[k] = v
	}
	s := evidence.Series{Labels: l}
	for i, v := range vals {
		s.Points = append(s.Points, evidence.Point{T: start.Add(time.Duration(i) * 5 * time.Minute), V: v})
	}
	return MetricSet{Name: namespace + "/" + metric, Origin: SrcCloudWatch, Series: []evidence.Series{s}}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestCloudBalancesSpent(t *testing.T) {
	start := time.Date(2026, 11, 19, 1, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: start, Start: start.Add(time.Hour), End: start.Add(2 * time.Hour)}
	vol := map[string]string{"VolumeId": "vol-0f3e9a21c5d7b4e08"}
	inst := map[string]string{"InstanceId": "i-0a7c31d9e4b2f6180"}
	rds := map[string]string{"DBInstanceIdentifier": "orders-pg-prod"}
	// 25 points: full until 01:35, draining, about empty from 02:05.
	burst := append(append(repeat(100, 8), 80, 60, 40, 20, 5, 0.5), repeat(0, 11)...)
	queue := append(repeat(0.4, 14), repeat(31, 11)...)
	credits := append(append(repeat(40, 6), 30, 20, 12, 6, 2, 0.2), repeat(0, 13)...)
	cpu := append(repeat(47, 12), repeat(30, 13)...)
	describeVolume := evidence.CommandOutput{Command: "aws ec2 describe-volumes --volume-ids vol-0f3e9a21c5d7b4e08", Lines: strings.Split(`{
    "Volumes": [
        {
            "Size": 200,
            "VolumeId": "vol-0f3e9a21c5d7b4e08",
            "Iops": 600,
            "Tags": [
                {
                    "Key": "kubernetes.io/created-for/pvc/name",
                    "Value": "data-billing-pg-0"
                }
            ],
            "VolumeType": "gp2"
        }
    ]
}`, "\n")}
	describeInstance := evidence.CommandOutput{Command: "aws ec2 describe-instances --instance-ids i-0a7c31d9e4b2f6180 --output text",
		Lines: []string{"i-0a7c31d9e4b2f6180    t3.large    running    eu-west-1b    orders-mysql-01"}}
	pg := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "billing-pg-0", Namespace: "billing",
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "billing-pg"}}}}
	cases := []struct {
		name    string
		metrics []MetricSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
		onset   time.Time
	}{
		{name: "gp2 burst balance spent, the volume of a database's pod",
			metrics: []MetricSet{cwSet("AWS/EBS", "BurstBalance", "Average", vol, start, burst...), cwSet("AWS/EBS", "VolumeQueueLength", "Average", vol, start, queue...)},
			cmds:    []evidence.CommandOutput{describeVolume}, subject: "billing-pg",
			want:  []string{"EBS volume vol-0f3e9a21c5d7b4e08 (gp2, PVC data-billing-pg-0)", "BurstBalance of vol-0f3e9a21c5d7b4e08 fell from 100% at 01:35 UTC to 0.5% at 02:05 UTC and is still 0% at 03:00 UTC", "VolumeQueueLength) grew from 0.4 to 31", "600 IOPS"},
			onset: start.Add(65 * time.Minute)},
		{name: "t3 CPU credits spent, the instance named by its tag",
			metrics: []MetricSet{cwSet("AWS/EC2", "CPUCreditBalance", "Average", inst, start, credits...), cwSet("AWS/EC2", "CPUUtilization", "Average", inst, start, cpu...)},
			cmds:    []evidence.CommandOutput{describeInstance}, subject: "orders-mysql-01",
			want:  []string{"EC2 instance i-0a7c31d9e4b2f6180 (orders-mysql-01, t3.large)", "CPU credits", "flat at 30%"},
			onset: start.Add(55 * time.Minute)},
		{name: "no CLI output: the id names it",
			metrics: []MetricSet{cwSet("AWS/EBS", "BurstBalance", "Average", vol, start, burst...)}, subject: "vol-0f3e9a21c5d7b4e08",
			want: []string{"EBS volume vol-0f3e9a21c5d7b4e08 ran out"}, onset: start.Add(65 * time.Minute)},
		{name: "RDS instance named by its owner: an events row's source type is not its name",
			metrics: []MetricSet{cwSet("AWS/RDS", "BurstBalance", "Average", rds, start, burst...), cwSet("AWS/RDS", "DiskQueueDepth", "Average", rds, start, queue...)},
			cmds: []evidence.CommandOutput{
				{Command: "aws rds describe-db-instances --db-instance-identifier orders-pg-prod --query 'DBInstances[0].[DBInstanceClass,StorageType,AllocatedStorage]' --output text",
					Lines: []string{"db.r6g.2xlarge\tgp2\t500"}},
				{Command: "aws rds describe-events --source-identifier orders-pg-prod --source-type db-instance --output text",
					Lines: []string{"EVENTS\tarn:aws:rds:eu-central-1:210987654321:db:orders-pg-prod\t2026-11-19T01:03:11Z\tbackup\tBacking up DB instance\torders-pg-prod\tdb-instance"}},
			},
			subject: "orders-pg-prod",
			want:    []string{"RDS instance orders-pg-prod (gp2)", "instance class db.r6g.2xlarge; storage type gp2", "DiskQueueDepth grew from 0.4 to 31"},
			onset:   start.Add(65 * time.Minute)},
		{name: "a dip that recovered",
			metrics: []MetricSet{cwSet("AWS/EBS", "BurstBalance", "Average", vol, start, append(append(repeat(100, 8), 40, 10, 0.5, 0), repeat(60, 13)...)...)}},
		{name: "empty all along: nothing changed",
			metrics: []MetricSet{cwSet("AWS/EBS", "BurstBalance", "Average", vol, start, repeat(0, 25)...)}},
		{name: "a balance high and steady",
			metrics: []MetricSet{cwSet("AWS/EC2", "CPUCreditBalance", "Average", inst, start, repeat(576, 25)...)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Commands: c.cmds, Window: w, K8s: K8sEvidence{Pods: []corev1.Pod{pg}}}
			fs := detectBalancesSpent(ev)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.subject || fs[0].Kind != KindCloudExhausted {
				t.Fatalf("findings %+v, want one on %s", fs, c.subject)
			}
			h := &Hypothesis{Kind: KindCloudExhausted, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := describe(h, Scope{}) + " " + strings.Join(fs[0].Evidence, " ")
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("lacks %q: %s", s, d)
				}
			}
			if strings.Contains(d, " of -") {
				t.Errorf("an unnamed resource: %s", d)
			}
			if !fs[0].Time.Equal(c.onset) {
				t.Errorf("onset %s, want %s", fs[0].Time, c.onset)
			}
			if len(recommend(h, Scope{})) < 2 {
				t.Error("no recommendations")
			}
		})
	}
}

// The slow statements of a database's clients that began once its volume
// ran out are its consequence: they weigh less and relate to it; a slow
// call elsewhere, or one that began before, does not.
func TestCloudExhaustionExplainsSlowQueries(t *testing.T) {
	at := time.Date(2026, 11, 19, 2, 10, 0, 0, time.UTC)
	spent := []Finding{{Kind: KindCloudExhausted, Subject: "billing-pg", Time: at, Facts: map[string]string{"serves": "billing-pg", "database": "true"}}}
	found := []Finding{
		{Kind: KindSlowQuery, Subject: "invoice-api", Time: at.Add(35 * time.Minute), Weight: 0.9},
		{Kind: KindSlowOperation, Subject: "search", Time: at.Add(5 * time.Minute), Weight: 0.9, Summary: "search is slow: render took 3 s"},
		{Kind: KindSlowQuery, Subject: "reports", Time: at.Add(-2 * time.Hour), Weight: 0.9},
	}
	explainSlowdowns(spent, found)
	if found[0].Weight >= 0.9 || found[0].fact("explained_by") != string(KindCloudExhausted) || !found[0].relates("billing-pg") {
		t.Errorf("slow queries after the volume ran out: %+v", found[0])
	}
	if found[1].Weight != 0.9 || found[2].Weight != 0.9 {
		t.Errorf("unrelated or earlier slowdowns changed: %+v %+v", found[1], found[2])
	}
}

// A client's pool waiting on a database instance, its series labelled with
// the instance, is a consequence of the instance running out; a pool
// labelled with another database is not.
func TestCloudExhaustionExplainsPoolWaits(t *testing.T) {
	at := time.Date(2026, 11, 19, 2, 10, 0, 0, time.UTC)
	spent := []Finding{{Kind: KindCloudExhausted, Subject: "orders-pg-prod", Time: at, Facts: map[string]string{"serves": "orders-pg-prod", "database": "true"}}}
	found := []Finding{
		{Kind: KindSaturation, Subject: "orders-api", Time: at.Add(time.Minute), Weight: 0.9,
			Evidence: []string{`pgxpool_acquire_wait_seconds_total{db="orders-pg-prod",service="orders-api"} rose from 0.01 to 17`}},
		{Kind: KindSaturation, Subject: "billing-api", Time: at.Add(time.Minute), Weight: 0.9,
			Evidence: []string{`hikaricp_connections_pending{pool="billing-pg",service="billing-api"} rose from 0 to 30`}},
	}
	explainSlowdowns(spent, found)
	if found[0].Weight >= 0.9 || !found[0].relates("orders-pg-prod") {
		t.Errorf("pool waits on the spent instance: %+v", found[0])
	}
	if found[1].Weight != 0.9 {
		t.Errorf("pool of another database changed: %+v", found[1])
	}
}

// A Lambda function throttled while the account's concurrent executions
// sit at their limit is starved by the function that took them.
func TestLambdaConcurrencyTaken(t *testing.T) {
	start := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: start, Start: start.Add(time.Hour), End: start.Add(2 * time.Hour)}
	fn := func(n string) map[string]string { return map[string]string{"FunctionName": n} }
	account := cwSet("AWS/Lambda", "ConcurrentExecutions", "Maximum", nil, start, append(repeat(43, 13), repeat(1000, 12)...)...)
	backfill := cwSet("AWS/Lambda", "ConcurrentExecutions", "Maximum", fn("thumbnail-backfill"), start, append(repeat(0, 13), repeat(992, 12)...)...)
	throttled := cwSet("AWS/Lambda", "Throttles", "Sum", fn("settle-payments"), start, append(repeat(0, 13), repeat(208, 12)...)...)
	queue := cwSet("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", map[string]string{"QueueName": "payment-settlements"}, start, append(repeat(5, 13), 400, 2000, 5000, 9000, 12000, 14000, 15000, 16000, 17000, 17500, 18000, 18400)...)
	cases := []struct {
		name    string
		metrics []MetricSet
		want    []string
	}{
		{"the account's concurrency taken by a backfill", []MetricSet{account, backfill, throttled, queue},
			[]string{"settle-payments is throttled", "limit (1000 concurrent executions)", "taken by thumbnail-backfill (992", "payment-settlements, backs up"}},
		{"no account-level series: not known", []MetricSet{backfill, throttled}, nil},
		{"the account far from a ceiling", []MetricSet{cwSet("AWS/Lambda", "ConcurrentExecutions", "Maximum", nil, start, repeat(43, 25)...), throttled}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectConcurrencyTaken(&Gathered{Metrics: c.metrics, Window: w, Scope: Scope{Service: "settle-payments"}})
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "settle-payments" || !fs[0].Time.Equal(start.Add(65*time.Minute)) {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindCloudExhausted, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[0].Action, "thumbnail-backfill") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}

// An I/O-heavy operation begun before a volume's burst balance started to
// fall (a table rebuilt online, a backfill, a restore) is named as what
// spent it; a deploy is not. The host whose iostat shows a device at its
// limit, in a shell opened by ssh or named by the prompt, is where it ran.
func TestCloudBurstSpentBy(t *testing.T) {
	start := time.Date(2026, 11, 19, 1, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: start, Start: start.Add(time.Hour), End: start.Add(2 * time.Hour)}
	vol := map[string]string{"VolumeId": "vol-0f3e9a21c5d7b4e08"}
	burst := append(append(repeat(100, 8), 80, 60, 40, 20, 5, 0.5), repeat(0, 11)...)
	iostatSysstat12 := []string{
		"Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util",
		"nvme1n1        412.00  13184.00     0.00   0.00   38.20    32.00  702.00  22464.00     4.00   0.57   88.10    32.00    0.00      0.00     0.00   0.00    0.00     0.00    9.00  140.00    77.20  99.60",
	}
	iostatSysstat10 := []string{
		"Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util",
		"xvdf              0.00     3.00  310.00  590.00  9920.00 18880.00    64.00    61.30   68.10   40.20   82.80   1.11 100.00",
	}
	cases := []struct {
		name     string
		changes  []evidence.Change
		cmds     []evidence.CommandOutput
		want     []string
		notWant  string
		dbHost   string
		database bool
	}{
		{name: "online schema change, shell opened by ssh",
			changes: []evidence.Change{{Timestamp: start.Add(10 * time.Minute), Service: "orders-db", Kind: "config", Description: "ALTER TABLE orders ADD INDEX idx_created (created_at) via pt-online-schema-change"},
				{Timestamp: start.Add(50 * time.Minute), Service: "shop-web", Kind: "deploy", Description: "shop-web 2.1.0"}},
			cmds: []evidence.CommandOutput{{Command: "ssh orders-db-02.prod.example.net", Run: "ssh orders-db-02.prod.example.net"},
				{Command: "iostat -x nvme1n1 5 2 | tail -3", Run: "iostat -x nvme1n1 5 2 | tail -3", Lines: iostatSysstat12}},
			want: []string{"the config change of orders-db at 01:10 UTC", "pt-online-schema-change"}, notWant: "shop-web 2.1.0", dbHost: "orders-db-02", database: true},
		{name: "gh-ost migration, host from the prompt, sysstat 10 columns",
			changes: []evidence.Change{{Timestamp: start.Add(20 * time.Minute), Service: "billing-mysql", Kind: "infra", Description: "gh-ost --alter 'ADD COLUMN region CHAR(2)' on invoices"}},
			cmds:    []evidence.CommandOutput{{Command: "iostat -xk 5 2", Run: "iostat -xk 5 2", Host: "billing-mysql-1", Lines: iostatSysstat10}},
			want:    []string{"gh-ost"}, dbHost: "billing-mysql-1", database: true},
		{name: "backup job, no transcript",
			changes: []evidence.Change{{Timestamp: start.Add(25 * time.Minute), Service: "fileserver", Kind: "config", Description: "nightly backup moved from 03:00 to 01:00"}},
			want:    []string{"nightly backup moved"}},
		{name: "only a deploy: nothing named",
			changes: []evidence.Change{{Timestamp: start.Add(20 * time.Minute), Service: "shop-web", Kind: "deploy", Description: "shop-web 2.1.0: new checkout"}},
			notWant: "spent by"},
		{name: "an operation hours before the fall is not it",
			changes: []evidence.Change{{Timestamp: start.Add(-3 * time.Hour), Service: "orders-db", Kind: "config", Description: "ALTER TABLE orders ADD COLUMN note TEXT"}},
			notWant: "spent by"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Window: w, Changes: tc.changes, Commands: tc.cmds,
				Metrics: []MetricSet{cwSet("AWS/EBS", "BurstBalance", "Average", vol, start, burst...)}}
			fs := detectBalancesSpent(ev)
			if len(fs) != 1 {
				t.Fatalf("want 1 finding, got %d", len(fs))
			}
			h := &Hypothesis{Kind: KindCloudExhausted, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := cloudExhausted.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
			if tc.notWant != "" && strings.Contains(d, tc.notWant) {
				t.Errorf("description has %q:\n%s", tc.notWant, d)
			}
			if got := fs[0].fact("db_instance"); got != tc.dbHost {
				t.Errorf("db_instance = %q, want %q", got, tc.dbHost)
			}
			if got := fs[0].fact("database") != ""; got != tc.database {
				t.Errorf("database = %v, want %v", got, tc.database)
			}
		})
	}
}
