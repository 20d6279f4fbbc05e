package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A host's file system remounted read-only by the kernel. When a write to
// a block device fails (a disk dying, a SAN or multipath path failing over,
// a cloud volume detached under load) or the file system finds its own
// metadata corrupt, ext4 aborts its journal and, with errors=remount-ro
// (Debian's and Ubuntu's default in fstab), remounts the file system
// read-only; XFS shuts the file system down; btrfs forces it read-only.
// From then on every write to it fails with EROFS ("Read-only file
// system", errno 30) while reads go on: the service on top answers
// downloads and lookups but fails every upload, save or log write, with no
// crash, no load and no change of its own. The kernel says it in its log
// (dmesg, journalctl -k, syslog's kernel: lines): "I/O error, dev sdb,
// sector …", "Buffer I/O error on dev sdb1", "Aborting journal on device
// sdb1-8", "EXT4-fs error (device sdb1): … Detected aborted journal",
// "EXT4-fs (sdb1): Remounting filesystem read-only"; mount shows the
// mount "(ro,…)"; node_exporter's node_filesystem_readonly turns 1. The
// cause is the device (or the file system's corruption), not the
// application's release: only a storage change (a path failover, a
// firmware update, a volume's move) is its trigger, and the fix is the
// device, a file system check and a remount, not a rollback.

// KindFSReadOnly is a host's file system remounted read-only by the
// kernel.
const KindFSReadOnly Kind = "fs_readonly"

var fsReadOnly = &mechanism{
	kind:   KindFSReadOnly,
	class:  classCause,
	label:  "a file system remounted read-only by the kernel after I/O errors",
	detect: detectFSReadOnly,
	related: exceptOwnAndChanges(KindFSReadOnly, func(h *Hypothesis, f *Finding) bool {
		return sameNode(f.Subject, h.Subject) || slices.Contains(h.top().Related, f.Subject) || f.Subject == "node" || strings.HasPrefix(f.Subject, h.Subject+"-")
	}),
	fitsChange:     changeSays(fsStorageChangeRE),
	strictTriggers: true,
	describe:       describeFSReadOnly,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		host, mnt := h.Subject, orWord(h.fact("mountpoint"), "the file system")
		dev := orWord(h.fact("device"), "its device")
		r.high("Restore writes on %s: find why %s failed (dmesg -T, smartctl -a, the storage array's or multipath's path state), then unmount %s, run fsck (e2fsck -f, xfs_repair) on %s and mount it read-write again (or fail over to a healthy host); remount,rw without the check risks the data", host, dev, mnt, dev)
		if t := h.Trigger; t != nil {
			r.high("Hold and review the storage change %s (%s) with its owners: the write errors began with it", orWord(t.fact("revision"), t.Subject), truncate(t.fact("description"), 120))
		}
		r.med("Do not roll back %s: its release does not make the file system read-only; retry the failed writes once it is writable", orWord(h.fact("clients"), "the application"))
		r.low("Alert on node_filesystem_readonly == 1 and on the kernel's I/O errors and 'Remounting filesystem read-only' in its log")
	},
}

var (
	// fsRemountRE is the kernel taking a file system's writes away: ext4's
	// and ext3's remount, XFS's shutdown, btrfs's forced read-only.
	fsRemountRE = regexp.MustCompile(`(?i)Remounting filesystem read-only|XFS \([\w.-]+\): (?:Filesystem has been shut down|Corruption of in-memory data detected\. +Shutting down filesystem|Log I/O Error Detected\. +Shutting down filesystem)|xfs_do_force_shutdown|BTRFS(?: info| error| warning)? \(device [\w.-]+\)[^\n]{0,120}forced readonly|BTRFS: error \(device [\w.-]+\)[^\n]{0,120}forced readonly`)
	// fsCauseRE is what came before: the device's write errors and the
	// journal aborted.
	fsIOErrorRE = regexp.MustCompile(`(?:blk_update_request: |print_req_error: )?(?:critical medium |critical target )?I/O error,? dev ([\w.-]+), sector \d+|Buffer I/O error on (?:dev(?:ice)? )?([\w.-]+)`)
	fsJournalRE = regexp.MustCompile(`Aborting journal on device ([\w.-]+?)(?:-\d+)?\.|Detected aborted journal|Journal has aborted|EXT4-fs error \(device ([\w.-]+)\)`)
	// fsDeviceRE names the device of a file system's kernel line.
	fsDeviceRE = regexp.MustCompile(`(?:EXT[234]-fs(?: error)? \(device |EXT[234]-fs \(|XFS \(|BTRFS[^(]*\(device )([\w.-]+)\)`)
	// fsEROFSRE is a process's write refused.
	fsEROFSRE = regexp.MustCompile(`(?i)Read-only file system|\bEROFS\b`)
	// fsMountROLineRE is mount's (or /proc/mounts') line for a read-only
	// mount: "/dev/sdb1 on /srv/data type ext4 (ro,relatime,…)" or
	// "/dev/sdb1 /srv/data ext4 ro,relatime 0 0".
	fsMountROLineRE = regexp.MustCompile(`^(/dev/\S+) (?:on )?(/\S*) (?:type )?(\w+) \(?ro,`)
	// fsStorageChangeRE is a change to the storage under a host.
	fsStorageChangeRE = regexp.MustCompile(`(?i)\bstorage\b|\bsan\b|multipath|\bpath failover|firmware|\biscsi\b|\bfibre channel\b|\bhba\b|\bvolume\b|\bdisk\b|\bebs\b|\bvmdk\b|datastore|\bnfs\b|\braid\b|\bcontroller\b`)
)

// fsState is what the evidence says of one host's read-only file system.
type fsState struct {
	f                                        Finding
	device, mountpoint, fstype               string
	remount, ioError, journal, erofs, mounts string
	ioErrors                                 int
	clients                                  []string
}

// detectFSReadOnly reads the kernel's remount (or shutdown) of a file
// system from host logs and from dmesg or journalctl -k handed over as
// command output, or node_filesystem_readonly turning 1; with them the
// device's I/O errors, the aborted journal, mount's ro flag and the
// writes refused with "Read-only file system".
func detectFSReadOnly(ev *Gathered, found []Finding) []Finding {
	hosts := map[string]*fsState{}
	var order []string
	get := func(host string) *fsState {
		host = shortHost(host)
		if st := hosts[host]; st != nil {
			return st
		}
		for h, st := range hosts {
			if sameNode(h, host) {
				return st
			}
		}
		st := &fsState{f: Finding{Kind: KindFSReadOnly, Subject: host, Object: "host " + host, Source: SrcLogs, Severity: SevCritical, Weight: 0.9}}
		hosts[host] = st
		order = append(order, host)
		return st
	}
	var erofs []templateMatch
	type fsCause struct {
		host, io, jl string
		at           time.Time
		n            int
	}
	var causes []fsCause
	// Kernel lines in the hosts' logs.
	for set, t := range incidentTemplates(ev) {
		if line := templateLine(t, fsEROFSRE); line != "" && !matchLine(fsRemountRE, line) {
			erofs = append(erofs, templateMatch{set, t, line})
			continue
		}
		line := templateLine(t, fsRemountRE)
		io := templateLine(t, fsIOErrorRE)
		jl := templateLine(t, fsJournalRE)
		if line == "" && io == "" && jl == "" {
			continue
		}
		l := orWord(line, orWord(io, jl))
		host := ""
		if m := findSubmatch(syslogHostRE, l); m != nil {
			host = m[1]
		}
		host = orWord(host, serverOfLog(set))
		at := firstOf(t.FirstIncident, t.FirstSeen)
		if line == "" {
			// The device's errors: kept for the host whose remount
			// the kernel (or the metric) shows.
			causes = append(causes, fsCause{host, io, jl, at, t.Incident})
			continue
		}
		st := get(host)
		st.noteRemount(line, at)
		st.f.Evidence = append(st.f.Evidence, templateEvidence(*set, t, line))
	}
	// dmesg, journalctl -k, mount and touch run on the host.
	for _, c := range ev.Commands {
		host := ""
		var remount, io, jl, mountLine, refused string
		var at time.Time
		ios := 0
		for _, l := range c.Lines {
			switch {
			case matchLine(fsRemountRE, l):
				if remount == "" {
					remount = strings.TrimSpace(l)
					at = kernelLineTime(l, ev.Window)
				}
			case matchLine(fsIOErrorRE, l):
				ios++
				if io == "" {
					io = strings.TrimSpace(l)
				}
			case matchLine(fsJournalRE, l):
				if jl == "" {
					jl = strings.TrimSpace(l)
				}
			case matchLine(fsMountROLineRE, l):
				mountLine = strings.TrimSpace(l)
			case matchLine(fsEROFSRE, l) && refused == "":
				refused = strings.TrimSpace(l)
			}
			if m := findSubmatch(syslogHostRE, l); m != nil && host == "" {
				host = m[1]
			}
		}
		host = orWord(c.Host, host)
		if host == "" && len(order) == 1 {
			host = order[0]
		}
		if remount == "" && io == "" && jl == "" && mountLine == "" && refused == "" {
			continue
		}
		if host == "" {
			continue
		}
		var st *fsState
		if remount != "" {
			st = get(host)
			if st.f.Weight == 0 {
				st.f.Weight = 0.9
			}
			if st.remount == "" {
				st.f.Evidence = append(st.f.Evidence, fmt.Sprintf("%s on %s: %s", truncate(c.Command, 80), shortHost(host), truncate(remount, 200)))
			}
			st.noteRemount(remount, at)
		} else if st = hosts[shortHost(host)]; st == nil {
			// Shown before the host is known to have remounted: keep it
			// for the metric below.
			st = get(host)
			st.f.Weight = 0
		}
		if io != "" || jl != "" {
			st.noteCause(io, jl, kernelLineTime(orWord(io, jl), ev.Window), ios)
		}
		if mountLine != "" {
			m := findSubmatch(fsMountROLineRE, mountLine)
			st.mounts = fmt.Sprintf("%s on %s: %s", truncate(c.Command, 60), shortHost(host), mountLine)
			st.mountpoint = orWord(st.mountpoint, m[2])
			st.fstype = orWord(st.fstype, m[3])
			st.device = orWord(st.device, strings.TrimPrefix(m[1], "/dev/"))
		}
		if refused != "" && st.erofs == "" {
			st.erofs = refused
			st.f.Evidence = append(st.f.Evidence, fmt.Sprintf("%s on %s: %s", truncate(c.Command, 80), shortHost(host), truncate(refused, 200)))
		}
	}
	// node_exporter: node_filesystem_readonly turning 1 in the window.
	for _, ms := range ev.Metrics {
		if ms.Name != "node_filesystem_readonly" {
			continue
		}
		for _, s := range ms.Series {
			if s.Labels["__name__"] != "" && s.Labels["__name__"] != "node_filesystem_readonly" {
				continue
			}
			at, ok := fsTurnedReadOnly(s.Points, ev.Window)
			if !ok {
				continue
			}
			host := shortHost(strings.Split(s.Labels["instance"], ":")[0])
			host = orWord(orWord(s.Labels["nodename"], s.Labels["node"]), host)
			if host == "" {
				continue
			}
			st := get(host)
			if st.f.Weight == 0 {
				st.f.Weight = 0.85
			}
			if st.remount == "" {
				st.f.Source = SrcMetrics
				st.f.Time = at
			}
			st.mountpoint = orWord(st.mountpoint, s.Labels["mountpoint"])
			st.fstype = orWord(st.fstype, s.Labels["fstype"])
			st.device = orWord(st.device, strings.TrimPrefix(s.Labels["device"], "/dev/"))
			st.f.Evidence = append(st.f.Evidence, fmt.Sprintf("node_filesystem_readonly of %s on %s turned 1 at %s", orWord(s.Labels["mountpoint"], "a file system"), host, ts(at)))
		}
	}
	for _, c := range causes {
		for h, st := range hosts {
			if sameNode(h, shortHost(c.host)) {
				st.noteCause(c.io, c.jl, c.at, c.n)
			}
		}
	}
	var out []Finding
	for _, host := range order {
		st := hosts[host]
		if st.f.Weight == 0 || st.remount == "" && st.f.Source != SrcMetrics {
			continue
		}
		// The writes refused: the services whose logs say so.
		for _, x := range erofs {
			subj := x.set.Subject
			if x.set.Host {
				continue
			}
			if !slices.Contains(st.clients, subj) {
				st.clients = append(st.clients, subj)
				st.f.Evidence = append(st.f.Evidence, templateEvidence(*x.set, x.t, x.line))
			}
			st.erofs = orWord(st.erofs, x.line)
		}
		f := &st.f
		f.setFact("device", st.device)
		f.setFact("mountpoint", st.mountpoint)
		f.setFact("fstype", st.fstype)
		f.setFact("line", st.remount)
		f.setFact("io_error", st.ioError)
		f.setFact("journal", st.journal)
		f.setFact("erofs", st.erofs)
		if st.ioErrors > 0 {
			f.setFact("io_errors", fmt.Sprint(st.ioErrors))
		}
		if st.mounts != "" {
			f.Evidence = append(f.Evidence, st.mounts)
		}
		for _, s := range ev.Scope.Subjects() {
			st.clients = appendNew(st.clients, s)
		}
		f.setFact("clients", strings.Join(st.clients, ", "))
		f.Related = append(f.Related, st.clients...)
		f.Summary = fmt.Sprintf("host %s: file system %s remounted read-only", host, orWord(st.mountpoint, orWord(st.device, "")))
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		out = append(out, *f)
	}
	return out
}

// noteRemount records the kernel's remount line.
func (st *fsState) noteRemount(line string, at time.Time) {
	if st.remount == "" {
		st.remount = line
	}
	if !at.IsZero() && (st.f.Time.IsZero() || at.Before(st.f.Time)) {
		st.f.Time = at
	}
	if m := findSubmatch(fsDeviceRE, line); m != nil && st.device == "" {
		st.device = m[1]
	}
	if strings.Contains(line, "EXT4") {
		st.fstype = orWord(st.fstype, "ext4")
	} else if strings.Contains(line, "XFS") {
		st.fstype = orWord(st.fstype, "xfs")
	} else if strings.Contains(line, "BTRFS") {
		st.fstype = orWord(st.fstype, "btrfs")
	}
}

// noteCause records the device's write errors and the aborted journal.
func (st *fsState) noteCause(io, jl string, at time.Time, n int) {
	if io != "" {
		st.ioErrors += max(n, 1)
		if st.ioError == "" {
			st.ioError = io
			st.f.Evidence = append(st.f.Evidence, "kernel: "+truncate(io, 200))
		}
	}
	if jl != "" && st.journal == "" {
		st.journal = jl
		st.f.Evidence = append(st.f.Evidence, "kernel: "+truncate(jl, 200))
	}
	if !at.IsZero() && at.Before(st.f.Time) {
		st.f.Time = at
	}
}

// fsTurnedReadOnly reports when a node_filesystem_readonly series turned
// 1 in the window after being 0 before it.
func fsTurnedReadOnly(pts []evidence.Point, w Window) (time.Time, bool) {
	wasRW := false
	for _, p := range pts {
		if p.V == 0 {
			wasRW = true
			continue
		}
		if p.V >= 1 && wasRW && (w.Start.IsZero() || !p.T.Before(w.BaselineStart)) {
			return p.T, true
		}
	}
	return time.Time{}, false
}

func describeFSReadOnly(h *Hypothesis, sc Scope) string {
	host := h.Subject
	fs := "a file system"
	if mp := h.fact("mountpoint"); mp != "" {
		fs = "the file system " + mp
	}
	var on []string
	if t := h.fact("fstype"); t != "" {
		on = append(on, t)
	}
	if d := h.fact("device"); d != "" {
		on = append(on, "on "+d)
	}
	if len(on) > 0 {
		fs += " (" + strings.Join(on, " ") + ")"
	}
	d := fmt.Sprintf("the kernel remounted %s of %s read-only", fs, host)
	switch io, jl := h.fact("io_error"), h.fact("journal"); {
	case io != "" && jl != "":
		d += fmt.Sprintf(" after write I/O errors on the disk aborted its journal (%s; %s)", quote(kernelText(io), 120), quote(kernelText(jl), 100))
	case io != "":
		d += fmt.Sprintf(" after write I/O errors on the disk (%s)", quote(kernelText(io), 120))
	case jl != "":
		d += fmt.Sprintf(" after its journal aborted (%s)", quote(kernelText(jl), 120))
	}
	if l := h.fact("line"); l != "" {
		d += ": " + quote(kernelText(l), 120)
	} else {
		d += " (node_filesystem_readonly turned 1)"
	}
	d += ". Every write to it fails with \"Read-only file system\" (EROFS) while reads still work"
	if c := h.fact("clients"); c != "" {
		d += fmt.Sprintf(", so %s fails whatever writes there", c)
	}
	if e := h.fact("erofs"); e != "" {
		d += ": " + quote(ReadableLine(e), 160)
	}
	d += " — the cause is the disk or its storage path, not the application's release"
	return d
}

// kernelText is a kernel line without its syslog or dmesg prefix.
func kernelText(l string) string {
	if i := strings.Index(l, "kernel: "); i >= 0 {
		return strings.TrimSpace(l[i+len("kernel: "):])
	}
	if m := dmesgPrefixRE.FindStringIndex(l); m != nil {
		return strings.TrimSpace(l[m[1]:])
	}
	return strings.TrimSpace(l)
}

// dmesgPrefixRE is dmesg's time prefix ("[Wed Nov 25 11:11:48 2026] ",
// "[12345.678901] ").
var dmesgPrefixRE = regexp.MustCompile(`^\s*\[[^\]]+\]\s*`)
