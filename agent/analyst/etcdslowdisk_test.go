package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEtcdSlowDisk: etcd's own "slow fdatasync" warnings (JSON logs of
// etcd 3.5, and the older text form) make the disk under etcd the cause,
// with a burstable volume's credits running out, its type and the change
// that put more writes on it; requests taking too long without slow
// fsyncs, or compaction lines alone, are not a disk.
func TestEtcdSlowDisk(t *testing.T) {
	at := time.Date(2026, 11, 24, 7, 28, 3, 0, time.UTC)
	const fsyncJSON = `{"level":"warn","ts":"2026-11-24T07:28:14.659911Z","caller":"wal/wal.go:805","msg":"slow fdatasync","took":"3.224301s","expected-duration":"1s"}`
	const applyJSON = `{"level":"warn","ts":"2026-11-24T07:28:04.764328Z","caller":"etcdserver/util.go:170","msg":"apply request took too long","took":"1.510112s","expected-duration":"100ms","prefix":"read-only range "}`
	const fsyncText = `2026-11-24 07:28:14.659911 W | wal: sync duration of 2.1s, expected less than 1s`
	const compact = `{"level":"info","ts":"2026-11-24T07:03:07.277868Z","caller":"mvcc/index.go:214","msg":"compact tree index","revision":88120598}`
	burst := MetricSet{Name: "BurstBalance", Origin: SrcCloudWatch, Series: []evidence.Series{{Labels: evidence.Labels{"label": "vol-0a7e BurstBalance"}, Points: []evidence.Point{
		{T: at.Add(-3 * time.Hour), V: 100}, {T: at.Add(-2 * time.Hour), V: 60}, {T: at.Add(-time.Hour), V: 12}, {T: at, V: 0}}}}}
	vol := evidence.CommandOutput{Command: "aws ec2 describe-volumes --volume-ids vol-0a7e", Lines: strings.Split(`[
    {
        "ID": "vol-0a7e",
        "Type": "gp2",
        "Size": 100,
        "Tags": [ { "Key": "Name", "Value": "prod-cp-1-etcd" } ]
    }
]`, "\n")}
	change := evidence.Change{Timestamp: at.Add(-140 * time.Minute), Service: "kube-apiserver", Kind: "config", Description: "audit log path /var/lib/etcd-data/audit/audit.log (mounted data volume)"}
	cases := []struct {
		name  string
		lines []string
		want  bool
	}{
		{"json fsync", []string{fsyncJSON, applyJSON}, true},
		{"text wal sync", []string{fsyncText}, true},
		{"apply only", []string{applyJSON}, false},
		{"compaction only", []string{compact}, false},
	}
	for _, tc := range cases {
		var tpls []analysis.LogTemplate
		for _, l := range tc.lines {
			tpls = append(tpls, analysis.LogTemplate{Example: l, Incident: 200, FirstIncident: at})
		}
		ev := &Gathered{Logs: []LogSet{{Source: "etcd-cp-1", Subject: "etcd-cp-1", Templates: tpls}}, Metrics: []MetricSet{burst},
			Commands: []evidence.CommandOutput{vol}, Earlier: []evidence.Change{change}, Window: Window{Start: at.Add(-time.Hour), End: at.Add(time.Hour)}}
		fs := detectEtcdSlowDisk(ev, nil)
		if (len(fs) == 1) != tc.want {
			t.Fatalf("%s: findings %+v", tc.name, fs)
		}
		if !tc.want {
			continue
		}
		h := &Hypothesis{Kind: KindEtcdSlowDisk, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		d := describe(h, Scope{})
		for _, w := range []string{"etcd is slowed by its disk", "slow fdatasync", "fell from 100% at", "to 0%", "burstable gp2 volume", "/var/lib/etcd-data"} {
			if !strings.Contains(d, w) {
				t.Errorf("%s: %q does not say %q", tc.name, d, w)
			}
		}
		if want := map[string]string{"json fsync": "up to 3.22 s", "text wal sync": "up to 2.10 s"}[tc.name]; !strings.Contains(d, want) {
			t.Errorf("%s: longest fsync not read: %q", tc.name, d)
		}
		if !fs[0].Time.Equal(at) || len(fs[0].Evidence) < 4 {
			t.Errorf("%s: onset %s evidence %q", tc.name, fs[0].Time, fs[0].Evidence)
		}
	}
}
