package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestFSReadOnly reads a file system the kernel took writes from, in the
// words each file system and reader prints: ext4's remount after write
// I/O errors in a host's syslog, XFS's shutdown in journalctl -k, btrfs's
// forced read-only in dmesg -T handed over through ssh, with mount's ro
// flag and a process's EROFS, and node_exporter's node_filesystem_readonly
// turning 1 alone. A process refused by a read-only root it was given
// (readOnlyRootFilesystem) and I/O errors the file system survived are not
// this cause.
func TestFSReadOnly(t *testing.T) {
	ext4 := []string{
		`2026-03-14T10:11:47.173765+00:00 files-01 kernel: I/O error, dev sdb, sector 169623552 op 0x1:(WRITE) flags 0x4000 phys_seg 128 prio class 2`,
		`2026-03-14T10:11:47.538768+00:00 files-01 kernel: Aborting journal on device sdb1-8.`,
		`2026-03-14T10:11:48.155708+00:00 files-01 kernel: EXT4-fs (sdb1): Remounting filesystem read-only`,
	}
	app := `2026-03-14 10:12:03,118+0000 ERROR [qtp-41] upload failed: java.nio.file.FileSystemException: /srv/data/blobs/tmp/f.bytes: Read-only file system`
	xfs := []string{
		`Mar 14 10:11:47 db-02 kernel: blk_update_request: I/O error, dev dm-2, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0`,
		`Mar 14 10:11:47 db-02 kernel: XFS (dm-2): Log I/O Error Detected. Shutting down filesystem`,
	}
	dmesg := evidence.CommandOutput{Command: "sudo dmesg -T | tail -n 5", Run: "sudo dmesg -T | tail -n 5", Host: "build-07.example.internal", Source: "session.txt:3",
		Lines: []string{
			`[Sat Mar 14 10:11:46 2026] BTRFS error (device nvme1n1p1): bdev /dev/nvme1n1p1 errs: wr 12, rd 0, flush 0, corrupt 0, gen 0`,
			`[Sat Mar 14 10:11:47 2026] BTRFS info (device nvme1n1p1): forced readonly`,
		}}
	mount := evidence.CommandOutput{Command: "mount | grep /var/lib/builds", Run: "mount | grep /var/lib/builds", Host: "build-07.example.internal", Source: "session.txt:9",
		Lines: []string{`/dev/nvme1n1p1 on /var/lib/builds type btrfs (ro,relatime,ssd,space_cache=v2)`}}
	touch := evidence.CommandOutput{Command: "touch /var/lib/builds/.probe", Run: "touch /var/lib/builds/.probe", Host: "build-07.example.internal", Source: "session.txt:12",
		Lines: []string{`touch: cannot touch '/var/lib/builds/.probe': Read-only file system`}}
	ro := MetricSet{Name: "node_filesystem_readonly", Series: []evidence.Series{{
		Labels: map[string]string{"__name__": "node_filesystem_readonly", "instance": "media-03:9100", "device": "/dev/vdc", "fstype": "ext4", "mountpoint": "/var/media"},
		Points: []evidence.Point{{T: now.Add(-90 * time.Minute), V: 0}, {T: now.Add(-40 * time.Minute), V: 0}, {T: now.Add(-20 * time.Minute), V: 1}, {T: now, V: 1}},
	}}}
	rootless := `{"level":"error","msg":"cannot write cache","error":"open /app/cache/x.json: read-only file system"}`
	ioOnly := `2026-03-14T10:11:47.173765+00:00 files-01 kernel: I/O error, dev sdb, sector 169623552 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 2`
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		metrics []MetricSet
		subject string
		want    []string
	}{
		{"ext4 remounted after write errors, in syslog, with the service's EROFS", []LogSet{logSet("files-01-syslog", true, ext4...), logSet("artifact-store", false, app)}, nil, nil, "files-01",
			[]string{"remounted a file system (ext4 on sdb1)", "I/O error, dev sdb", "Aborting journal", "Remounting filesystem read-only", "artifact-store", "Read-only file system"}},
		{"XFS shut down in journalctl", []LogSet{logSet("db-02-journal", true, xfs...)}, nil, nil, "db-02",
			[]string{"remounted a file system (xfs on dm-2)", "I/O error, dev dm-2", "Shutting down filesystem"}},
		{"btrfs forced read-only in dmesg over ssh, with mount and touch", nil, []evidence.CommandOutput{dmesg, mount, touch}, nil, "build-07",
			[]string{"remounted the file system /var/lib/builds (btrfs on nvme1n1p1)", "forced readonly", "cannot touch"}},
		{"node_filesystem_readonly alone", nil, nil, []MetricSet{ro}, "media-03",
			[]string{"/var/media (ext4 on vdc)", "node_filesystem_readonly turned 1"}},
		{"a read-only root the container was given", []LogSet{logSet("web", false, rootless)}, nil, nil, "", nil},
		{"read errors the file system survived", []LogSet{logSet("files-01-syslog", true, ioOnly)}, nil, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Metrics: c.metrics, Window: win}
			f := onlyFinding(t, detectFSReadOnly(ev, nil), c.subject)
			if f == nil {
				return
			}
			if len(f.Evidence) < 2 && c.metrics == nil {
				t.Errorf("evidence: %q", f.Evidence)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) < 2 || !strings.Contains(recs[0].Action, "fsck") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
	// Only a storage change triggers it: an application's release does
	// not make a file system read-only.
	h := &Hypothesis{Kind: KindFSReadOnly, Subject: "files-01"}
	for text, want := range map[string]bool{
		"storage array san-prod-2: controller B firmware 9.12.4, planned path failover": true,
		"multipath.conf: path_grouping_policy failover":                                 true,
		"Nexus Repository 3.73.0-12 -> 3.74.0-05":                                       false,
	} {
		c := &Finding{Kind: KindDeploy, Subject: "x"}
		c.setFact("description", text)
		if got := fsReadOnly.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", text, got, want)
		}
	}
}
