package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEtcdNoSpaceLines: etcd's refusal as etcd (zap JSON, older text),
// the API server, client-go and kubectl print it; etcd's other warnings
// and a disk full are not it.
func TestEtcdNoSpaceLines(t *testing.T) {
	for line, want := range map[string]bool{
		`{"level":"warn","ts":"2026-11-22T02:10:14.211Z","caller":"etcdserver/server.go:2090","msg":"alarm raised","alarm":"NOSPACE","from":"8e9e05c52164694d","quota-size-bytes":2147483648}`: true,
		`{"level":"warn","ts":"2026-11-22T02:10:14.213Z","caller":"etcdserver/apply.go:140","msg":"database space exceeded","quota-size-bytes":2147483648,"quota-size":"2.1 GB"}`:              true,
		`2019-03-02 11:22:33.123456 W | etcdserver: alarm NOSPACE raised by peer 8e9e05c52164694d`:                                                                                             true,
		`E0302 11:22:34.000000       1 status.go:71] apiserver received an error that is not an metav1.Status: rpctypes.EtcdError{code:0x8, desc:"etcdserver: mvcc: database space exceeded"}`: true,
		`E0302 11:22:35.151223       1 leaderelection.go:369] Failed to update lock: etcdserver: mvcc: database space exceeded`:                                                                true,
		`Error from server: etcdserver: mvcc: database space exceeded`:                                                                                                                         true,
		`{"level":"warn","ts":"2026-11-22T02:04:51.002Z","caller":"etcdserver/util.go:170","msg":"apply request took too long","took":"312.771ms"}`:                                            false,
		`write /var/lib/postgresql/data/base/16384/2619: no space left on device`:                                                                                                              false,
	} {
		if got := etcdNoSpaceRE.MatchString(line); got != want {
			t.Errorf("%.70q: %v, want %v", line, got, want)
		}
	}
}

// TestDetectEtcdNoSpace: etcd's own alarm, etcdctl's status and the
// refusal quoted by clients and events make one finding on etcd; the
// clients that could not write are related to it; a client's quote alone
// weighs less.
func TestDetectEtcdNoSpace(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-4 * time.Hour), Start: now.Add(-2 * time.Hour), End: now}
	at := now.Add(-90 * time.Minute)
	etcdLog := LogSet{Source: "master-2-etcd", Subject: "master-2-etcd", Host: true, Templates: []analysis.LogTemplate{
		{Example: `{"level":"warn","ts":"2026-03-02T10:30:00.000Z","caller":"etcdserver/server.go:2090","msg":"alarm raised","alarm":"NOSPACE","from":"aa","quota-size-bytes":2147483648}`, Incident: 1, FirstIncident: at, FirstSeen: at},
		{Example: `{"level":"warn","ts":"2026-03-02T10:30:00.100Z","caller":"etcdserver/apply.go:140","msg":"database space exceeded","quota-size-bytes":2147483648,"quota-size":"2.1 GB"}`, Incident: 40, FirstIncident: at, FirstSeen: at},
		{Example: `{"level":"info","ts":"2026-03-02T10:20:00.000Z","caller":"mvcc/kvstore_compaction.go:66","msg":"finished scheduled compaction","current-db-size-bytes":2147000000,"current-db-size":"2.1 GB"}`, Incident: 2},
	}}
	operator := LogSet{Source: "report-operator-6d9f-abcde", Subject: "report-operator", Templates: []analysis.LogTemplate{
		{Example: `E0302 10:30:02.220311       1 leaderelection.go:369] Failed to update lock: etcdserver: mvcc: database space exceeded`, Incident: 12, FirstIncident: at.Add(2 * time.Second), FirstSeen: at.Add(2 * time.Second)},
	}}
	event := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "CronJob", Name: "nightly-export", Namespace: "reports"}, Reason: "FailedCreate", Type: "Warning",
		Message: "Error creating job: etcdserver: mvcc: database space exceeded", FirstTimestamp: metav1.NewTime(at.Add(time.Minute)), LastTimestamp: metav1.NewTime(at.Add(time.Minute))}
	status := evidence.CommandOutput{Command: "etcdctl alarm list", Lines: []string{"memberID:12249823497217011845 alarm:NOSPACE", "memberID:3301823497217011845 alarm:NOSPACE"}}
	cases := []struct {
		name    string
		ev      Gathered
		weight  float64
		clients string
		want    []string
	}{
		{"own log, client, event", Gathered{Logs: []LogSet{etcdLog, operator}, K8s: K8sEvidence{Events: []corev1.Event{event}}, Window: w}, 0.95, "report-operator, nightly-export",
			[]string{"quota 2.1 GB", "database 2.1 GB", "report-operator", "CronJob nightly-export"}},
		{"etcdctl and a client", Gathered{Logs: []LogSet{operator}, Commands: []evidence.CommandOutput{status}, Window: w}, 0.95, "report-operator", []string{"alarm:NOSPACE on 2 members"}},
		{"a client's quote only", Gathered{Logs: []LogSet{operator}, Window: w}, 0.85, "report-operator", []string{"refuses every write"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectEtcdNoSpace(&c.ev, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			if f.Subject != "etcd" || f.Weight != c.weight || f.fact("clients") != c.clients || f.Time.After(at.Add(2*time.Second)) {
				t.Errorf("subject %q weight %v clients %q onset %s", f.Subject, f.Weight, f.fact("clients"), f.Time)
			}
			h := &Hypothesis{Kind: KindEtcdNoSpace, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			if !etcdNoSpace.related(h, &Finding{Kind: KindCrashLoop, Subject: "report-operator"}) || etcdNoSpace.related(h, &Finding{Kind: KindCrashLoop, Subject: "web"}) {
				t.Error("related: report-operator should be, web should not")
			}
			wantDescribed(t, h, Scope{}, append(c.want, "database space exceeded", "NOSPACE")...)
		})
	}
	// Nothing refused: no finding.
	if fs := detectEtcdNoSpace(&Gathered{Logs: []LogSet{{Source: "x", Templates: []analysis.LogTemplate{{Example: "etcdserver: request timed out", Incident: 3}}}}, Window: w}, nil); len(fs) != 0 {
		t.Errorf("findings %+v", fs)
	}
}
