package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReadDiskCommands reads df, du and ls as operators run them on a node
// (kubectl debug's chroot shell, ssh), in human and 1K-block sizes, and
// names the pod a kubelet, container-runtime or docker path belongs to.
func TestReadDiskCommands(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "report-gen-6d9f7c8b5-abcde", UID: types.UID("1e8226cc-cca0-d8a5-860d-17c0e14d1da4")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "audit-7c5b9d6f4-zzzzz", UID: types.UID("2f000000-0000-4000-8000-000000000001")},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "docker://4b1c9e0f2a3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f"}}}},
	}
	cases := []struct {
		name     string
		cmd      evidence.CommandOutput
		host     string
		mount    string
		size     float64
		top      string // path of the largest entry
		pod, vol string
	}{
		{"kubectl debug chroot shell, df -h and du -sh of emptyDirs",
			evidence.CommandOutput{Target: "node/ip-10-0-2-33", Run: "chroot /host sh", Lines: []string{
				"sh-4.2# df -h /", "Filesystem      Size  Used Avail Use% Mounted on", "/dev/nvme0n1p1   80G   73G  7.2G  92% /",
				"sh-4.2# du -xsh /var/lib/kubelet/pods/*/volumes/kubernetes.io~empty-dir/* 2>/dev/null | sort -h | tail -2",
				"84M\t/var/lib/kubelet/pods/7e2d9f11-5a3c-4c7e-8f12-44d0b6a9c3e2/volumes/kubernetes.io~empty-dir/cache",
				"43G\t/var/lib/kubelet/pods/1e8226cc-cca0-d8a5-860d-17c0e14d1da4/volumes/kubernetes.io~empty-dir/scratch"}},
			"ip-10-0-2-33", "/", 80 << 30, "/var/lib/kubelet/pods/1e8226cc-cca0-d8a5-860d-17c0e14d1da4/volumes/kubernetes.io~empty-dir/scratch", "shop/report-gen-6d9f7c8b5-abcde", "scratch"},
		{"ssh by address, df -k in 1K blocks, du of /var/log/pods",
			evidence.CommandOutput{Host: "10.0.2.33", Run: "df -k /var", Lines: []string{
				"Filesystem     1K-blocks     Used Available Use% Mounted on", "/dev/sda1      102400000 97280000   5120000  95% /var",
				"root@node:~# du -s /var/log/pods/*", "2048\t/var/log/pods/kube-system_kube-proxy-4lq8d_6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
				"31457280\t/var/log/pods/shop_audit-7c5b9d6f4-zzzzz_2f000000-0000-4000-8000-000000000001"}},
			"ip-10-0-2-33", "/var", 102400000 * 1024, "/var/log/pods/shop_audit-7c5b9d6f4-zzzzz_2f000000-0000-4000-8000-000000000001", "shop/audit-7c5b9d6f4-zzzzz", ""},
		{"a docker json-file log found by du, then its file by ls -l",
			evidence.CommandOutput{Host: "worker-3", Run: "sudo du -sh /var/lib/docker/containers/*", Lines: []string{
				"1.2M\t/var/lib/docker/containers/aaaa1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888",
				"27G\t/var/lib/docker/containers/4b1c9e0f2a3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f",
				"worker-3:~$ ls -la /var/lib/docker/containers/4b1c9e0f2a3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f/",
				"drwx------ 4 root root        4096 Nov 22 08:52 .",
				"-rw-r----- 1 root root 29391029248 Nov 22 14:33 4b1c9e0f2a3d-json.log"}},
			"worker-3", "", 0, "/var/lib/docker/containers/4b1c9e0f2a3d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f/4b1c9e0f2a3d-json.log", "shop/audit-7c5b9d6f4-zzzzz", ""},
	}
	for _, c := range cases {
		dfs, entries := readDiskCommands([]evidence.CommandOutput{c.cmd}, c.host, pods)
		if c.mount != "" {
			if len(dfs) != 1 || dfs[0].mount != c.mount || dfs[0].size != c.size {
				t.Errorf("%s: df read as %+v, want %s of %.0f bytes", c.name, dfs, c.mount, c.size)
			}
		}
		var top diskEntry
		for _, e := range entries {
			if e.bytes > top.bytes {
				top = e
			}
		}
		if top.path != c.top || top.pod != c.pod || top.volume != c.vol {
			t.Errorf("%s: largest %q of pod %q volume %q, want %q of %q %q", c.name, top.path, top.pod, top.volume, c.top, c.pod, c.vol)
		}
		// Commands run on another host are not this one's.
		if _, es := readDiskCommands([]evidence.CommandOutput{c.cmd}, "ip-10-0-9-9", pods); len(es) != 0 {
			t.Errorf("%s: another host's du read as this one's", c.name)
		}
	}
}

// TestSeriesHost matches a free-space series to the host a claim names, by
// node name, by address, and by a node name that spells the address.
func TestSeriesHost(t *testing.T) {
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "worker-b"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.4.7"}}}}}
	cases := []struct {
		labels evidence.Labels
		text   string
		host   string
		named  bool
	}{
		{evidence.Labels{"instance": "10.0.2.33:9100", "node": "ip-10-0-2-33"}, "nodefilesystemalmostfull fired for ip-10-0-2-33", "ip-10-0-2-33", true},
		{evidence.Labels{"instance": "10.0.2.33:9100"}, "disk full on ip-10-0-2-33.eu-west-1.compute.internal?", "10.0.2.33", true},
		{evidence.Labels{"instance": "10.0.1.71:9100", "node": "ip-10-0-1-71"}, "nodefilesystemalmostfull fired for ip-10-0-2-33", "ip-10-0-1-71", false},
		{evidence.Labels{"instance": "10.1.4.7:9100"}, "is worker-b's disk filling up?", "worker-b", true},
		{evidence.Labels{"instance": "10.0.2.3:9100"}, "disk of 10.0.2.33 almost full", "10.0.2.3", false},
		{evidence.Labels{"instance": "db-01:9100", "mountpoint": "/data"}, "hostdiskwillfill for db-01", "db-01", true},
	}
	for _, c := range cases {
		host, named := seriesHost(c.labels, c.text, nodes)
		if host != c.host || named != c.named {
			t.Errorf("%v in %q: %q named=%v, want %q %v", c.labels, c.text, host, named, c.host, c.named)
		}
	}
}

// TestDiskClaimFull confirms an almost-full alert on the node it names
// from the free share (flat in the window: the fill happened before it),
// not from another node's series, and names what fills the disk: a pod's
// emptyDir log file at a debug level set by a change.
func TestDiskClaimFull(t *testing.T) {
	w := testWindow()
	const gib = float64(1 << 30)
	flat := func(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }
	wobble := func(at time.Time) float64 { return 57*gib - float64(at.Minute()%7)*0.2*gib }
	free := []evidence.Series{
		wseries(w, evidence.Labels{"instance": "10.0.1.71:9100", "node": "ip-10-0-1-71", "mountpoint": "/", "device": "/dev/nvme0n1p1"}, wobble),
		wseries(w, evidence.Labels{"instance": "10.0.2.33:9100", "node": "ip-10-0-2-33", "mountpoint": "/", "device": "/dev/nvme0n1p1"}, flat(6.5*gib)),
	}
	size := []evidence.Series{wseries(w, evidence.Labels{"instance": "10.0.2.33:9100", "node": "ip-10-0-2-33", "mountpoint": "/", "device": "/dev/nvme0n1p1"}, flat(80*gib))}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "etl", Name: "feed-loader-5c8d7b6f9-q2w3e", UID: types.UID("0a1b2c3d-0000-4000-8000-00000000abcd")},
		Spec: corev1.PodSpec{NodeName: "ip-10-0-2-33", Containers: []corev1.Container{{Name: "app", Args: []string{"--log-level=trace", "--log-file=/logs/loader.log"}}}}}
	du := evidence.CommandOutput{Target: "node/ip-10-0-2-33", Run: "chroot /host bash", Lines: []string{
		"[root@ip-10-0-2-33 /]# du -sh /var/lib/kubelet/pods/*/volumes/kubernetes.io~empty-dir/*",
		"39G\t/var/lib/kubelet/pods/0a1b2c3d-0000-4000-8000-00000000abcd/volumes/kubernetes.io~empty-dir/logs"}}
	cases := []struct {
		name    string
		changes []evidence.Change
		cmds    []evidence.CommandOutput
		subject string
		says    []string
	}{
		{"a change raised the log level", []evidence.Change{{Timestamp: w.Start.Add(-5 * time.Hour), Service: "feed-loader", Kind: "config", Description: "feed-loader: LOG_LEVEL info -> DEBUG for TICKET-1"}},
			[]evidence.CommandOutput{du}, "feed-loader", []string{"is real", "8.1%", "feed-loader", "emptyDir volume logs", "DEBUG log level", "LOG_LEVEL info -> DEBUG"}},
		{"the pod's arguments set it", nil, []evidence.CommandOutput{du}, "feed-loader", []string{"is real", "TRACE log level", "--log-level=trace"}},
		{"no du: real, writer unknown", nil, nil, "ip-10-0-2-33", []string{"is real", "8.1%", "ip-10-0-2-33"}},
	}
	for _, c := range cases {
		ev := &Gathered{Metrics: []MetricSet{{Name: "node_filesystem_avail_bytes", Class: MetricFree, Unit: "bytes", Series: free}, {Name: "node_filesystem_size_bytes", Class: MetricVolume, Unit: "bytes", Series: size}},
			K8s: K8sEvidence{Pods: []corev1.Pod{pod}}, Earlier: c.changes, Commands: c.cmds, Window: w,
			Scope: Scope{Message: "NodeFilesystemAlmostFull fired for ip-10-0-2-33 (root fs under 10%). Real?", Alert: "NodeFilesystemAlmostFull"}}
		fs := detectDiskClaim(ev, nil)
		if len(fs) != 1 {
			t.Fatalf("%s: %d findings", c.name, len(fs))
		}
		if fs[0].fact("real") == "" || fs[0].Subject != c.subject {
			t.Errorf("%s: real=%q subject %q, want real on %q", c.name, fs[0].fact("real"), fs[0].Subject, c.subject)
		}
		h := &Hypothesis{Kind: KindDiskClaim, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		recs := explain(t, c.name, diskClaim, h, c.says)
		if len(recs) == 0 {
			t.Errorf("%s: no recommendation", c.name)
		}
	}
}

// TestFillerGrows: what fills a disk is the directory whose files grow
// fastest, as ls -l dates them, not the largest one du measured; a
// database server's log grown by a setting that logs every statement
// (pg_settings as psql -A prints it, MySQL's SHOW VARIABLES) is named with
// the change that set it. Files written at a steady rate leave the
// largest directory as the answer.
func TestFillerGrows(t *testing.T) {
	pgDu := []string{
		"ops@pg-orders-01:~$ sudo du -sh /var/lib/postgresql/16/main/base /var/lib/postgresql/16/main/pg_wal /var/lib/postgresql/16/main/log",
		"276G\t/var/lib/postgresql/16/main/base", "6.6G\t/var/lib/postgresql/16/main/pg_wal", "144G\t/var/lib/postgresql/16/main/log",
	}
	pgLs := func(sizes ...string) []string {
		out := []string{"ops@pg-orders-01:~$ sudo ls -lh /var/lib/postgresql/16/main/log | tail -6"}
		for i, s := range sizes {
			out = append(out, fmt.Sprintf("-rw------- 1 postgres postgres %s Oct 14 %02d:00 postgresql-2026-10-14_%02d0000.log", s, 4+i, 3+i))
		}
		return out
	}
	pgSettings := []string{
		`ops@pg-orders-01:~$ sudo -u postgres psql -Atc "select name, setting, source from pg_settings where name like 'log_%'"`,
		"log_min_duration_statement|0|configuration file", "log_rotation_age|60|configuration file", "log_statement|all|configuration file",
	}
	mysql := []string{
		"root@db-7:~# du -sh /var/lib/mysql /var/log/mysql", "310G\t/var/lib/mysql", "58G\t/var/log/mysql",
		"root@db-7:~# ls -l /var/log/mysql/",
		"-rw-r----- 1 mysql mysql    52428800 Nov  3 01:00 general.log.4",
		"-rw-r----- 1 mysql mysql    51380224 Nov  3 02:00 general.log.3",
		"-rw-r----- 1 mysql mysql 12884901888 Nov  3 03:00 general.log.2",
		"-rw-r----- 1 mysql mysql 13958643712 Nov  3 04:00 general.log.1",
		"-rw-r----- 1 mysql mysql 13421772800 Nov  3 05:00 general.log",
		`root@db-7:~# mysql -e "SHOW VARIABLES LIKE 'general_log%'"`,
		"| general_log      | ON                          |", "| general_log_file | /var/log/mysql/general.log |",
	}
	debugChange := evidence.Change{Service: "pg-orders-01", Kind: "config", Timestamp: time.Date(2026, 10, 13, 16, 20, 0, 0, time.UTC),
		Description: "postgresql.conf: temporary statement logging to debug slow refund query (INC-4471) - revert after"}
	cases := []struct {
		name    string
		host    string
		lines   []string
		changes []evidence.Change
		path    string // the filler
		want    []string
		verbose string // "" for none
	}{
		{"postgres log at log_statement=all beside larger data", "pg-orders-01", append(append(append([]string{}, pgDu...), pgLs("212M", "231M", "9.0G", "9.1G", "9.3G", "9.2G")...), pgSettings...), []evidence.Change{debugChange},
			"/var/lib/postgresql/16/main/log", []string{"written at 9.", "GiB/h", "/var/lib/postgresql/16/main/base (276.0 GiB) is larger but is not what grows", "pg_wal holds 6.6 GiB", "log_statement=all", "temporary statement logging"}, "log_statement=all"},
		{"mysql general log", "db-7", mysql, nil, "/var/log/mysql", []string{"/var/lib/mysql (310.0 GiB) is larger", "general_log=ON", "every query in the general log"}, "general_log=ON"},
		{"steady log files: the largest stays the answer", "pg-orders-01", append(append([]string{}, pgDu...), pgLs("212M", "231M", "220M", "228M", "219M", "225M")...), nil,
			"/var/lib/postgresql/16/main/base", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Changes: c.changes, Commands: []evidence.CommandOutput{{Host: c.host, Run: "bash", Lines: c.lines}}}
			f := Finding{Kind: KindDiskClaim, Subject: c.host}
			if !filler(ev, &f, c.host) {
				t.Fatal("no filler found")
			}
			if got := f.fact("filler_path"); got != c.path {
				t.Fatalf("filler %q, want %q (%+v)", got, c.path, f.Facts)
			}
			if got := f.fact("verbose"); !strings.Contains(got, c.verbose) || (c.verbose == "") != (got == "") {
				t.Errorf("verbose %q, want %q", got, c.verbose)
			}
			d := describeFiller(&Hypothesis{Kind: KindDiskClaim, Subject: c.host, Primary: []*Finding{&f}})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("%q does not say %q", d, w)
				}
			}
		})
	}
}
