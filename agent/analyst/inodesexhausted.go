package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A filesystem out of inodes rather than bytes. Every file takes an
// inode, and an ext4 filesystem has a fixed number of them (one per 16
// KiB by default); a store that writes many small files (Loki's chunks,
// a cache's entries, a mail spool, session files) that nothing deletes
// uses them up while most of the bytes are free. The kernel then answers
// every file creation with ENOSPC, "no space left on device", the same
// error as a full disk, so the operator looks at `df -h`, sees the volume
// half empty and suspects the volume. `df -i` (IUse% 100%), the kubelet's
// kubelet_volume_stats_inodes_free at 0 or node_exporter's
// node_filesystem_files_free at 0 say which it is; the fix is to delete
// the small files (make the retention or compaction that should run
// run), not to grow the volume's bytes.

// KindInodesExhausted is a filesystem whose inodes are all used while its
// writers fail with no space left on device.
const KindInodesExhausted Kind = "inodes_exhausted"

var inodesExhausted = &mechanism{
	kind:   KindInodesExhausted,
	class:  classCause,
	label:  "filesystem out of inodes (many small files), not out of bytes",
	detect: detectInodesExhausted,
	// The writers' no-space errors are its consequence.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindDiskFull && (f.Subject == h.Subject || ofListed(f, h.fact("writers"), ", "))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		where := orWord(h.fact("mount"), "its volume")
		d := fmt.Sprintf("%s's filesystem %s is out of inodes, not out of space: %s of %s inodes used (%s)", h.Subject, where, h.fact("used"), h.fact("total"), h.fact("how"))
		if b := h.fact("bytes_pct"); b != "" {
			d += fmt.Sprintf(" while only %s of its bytes are used", b)
		}
		d += ". Every file takes an inode, so once they are gone each new file fails with no space left on device, however much room the disk has: many small files that nothing deletes (retention or compaction not running) used them up"
		if l := h.fact("line"); l != "" {
			d += fmt.Sprintf("; writes fail (%s): %s", orWord(h.fact("writers"), h.Subject), quote(l, 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Delete the small files that fill %s (old chunks, cache or temp files) and make the retention or compaction that should remove them run; growing the volume's bytes does not add inodes on ext4", orWord(h.fact("mount"), h.Subject+"'s volume"))
		r.med("Find which directory holds the files (find <mount> -xdev -type f | cut -d/ -f1-4 | sort | uniq -c | sort -n), and if many files are legitimate, recreate the filesystem with more inodes (mkfs.ext4 -i) or use XFS, whose inodes grow with the data")
		r.low("Alert on inodes used (kubelet_volume_stats_inodes_used / kubelet_volume_stats_inodes, node_filesystem_files_free) as well as on bytes")
	},
}

// inodeFact is a filesystem's inode count read from df -i or a series.
type inodeFact struct {
	subject, mount, how string
	used, total         float64
}

// dfInodeHeaderRE is df -i's header: GNU coreutils (Inodes IUsed IFree
// IUse%), BusyBox (Inodes Used Available Use%), BSD and macOS (iused
// ifree %iused).
var dfInodeHeaderRE = regexp.MustCompile(`(?i)^Filesystem\s+.*\b(?:Inodes|iused)\b`)

// detectInodesExhausted reads inode exhaustion from df -i outputs and the
// kubelet's and node_exporter's inode series, and names the writers whose
// files fail with no space left on device.
func detectInodesExhausted(ev *Gathered, found []Finding) []Finding {
	var facts []inodeFact
	bytesPct := map[string]string{} // mount → byte use of a df -h
	for _, c := range ev.Commands {
		subject := ""
		if c.Pod != "" {
			subject = workloadOfPodName(c.Pod)
		}
		var cols []string
		for _, l := range c.Lines {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == "Filesystem" {
				cols = nil
				if matchLine(dfInodeHeaderRE, l) {
					cols = dfColumns(l)
				} else if strings.Contains(l, "Use%") || strings.Contains(l, "Capacity") {
					cols = append([]string{"bytes"}, dfColumns(l)...)
				}
				continue
			}
			if cols == nil {
				continue
			}
			if cols[0] == "bytes" {
				if len(f) == len(cols)-1 {
					for i, k := range cols[1:] {
						if (k == "Use%" || k == "Capacity") && strings.HasSuffix(f[i], "%") {
							bytesPct[f[len(f)-1]] = f[i]
						}
					}
				}
				continue
			}
			if len(f) != len(cols) {
				continue
			}
			cell := func(names ...string) float64 {
				for _, n := range names {
					for i, k := range cols {
						if strings.EqualFold(k, n) {
							if v, err := strconv.ParseFloat(strings.TrimSuffix(f[i], "%"), 64); err == nil {
								return v
							}
						}
					}
				}
				return -1
			}
			total := cell("Inodes")
			used := cell("IUsed", "iused", "Used")
			free := cell("IFree", "ifree", "Available")
			if total < 0 && used >= 0 && free >= 0 {
				total = used + free
			}
			if total <= 0 || used < 0 || (free > 0 && free > total*0.005) || used < total*0.995 {
				continue
			}
			facts = append(facts, inodeFact{subject: subject, mount: f[len(f)-1], used: used, total: total, how: "df -i: IUse% " + fmt.Sprintf("%.0f%%", 100*used/total)})
		}
	}
	// The kubelet's per-claim series and node_exporter's per-mount ones.
	inodes := map[string]float64{}
	free := map[string]float64{}
	for name, s := range metricSeries(ev.Metrics) {
		if len(s.Points) == 0 {
			continue
		}
		key := orWord(s.Labels["persistentvolumeclaim"], s.Labels["mountpoint"])
		if key == "" {
			continue
		}
		v := s.Points[len(s.Points)-1].V
		switch name {
		case "kubelet_volume_stats_inodes", "node_filesystem_files":
			inodes[key] = v
		case "kubelet_volume_stats_inodes_free", "node_filesystem_files_free":
			free[key] = v
		}
	}
	for key, total := range inodes {
		f, ok := free[key]
		if !ok || total <= 0 || f > total*0.005 {
			continue
		}
		subject := workloadOfClaim(ev, key)
		facts = append(facts, inodeFact{subject: subject, mount: key, used: total - f, total: total, how: fmt.Sprintf("%.0f inodes free", f)})
	}
	if len(facts) == 0 {
		return nil
	}
	// The writers failing with no space left on device: the disk-full
	// findings, which on a filesystem with free bytes are this.
	var writers []string
	line := ""
	for i := range found {
		g := &found[i]
		if g.Kind != KindDiskFull {
			continue
		}
		own := g.Subject == facts[0].subject
		if own {
			writers = append([]string{g.Subject}, writers...)
		} else {
			writers = appendNew(writers, g.Subject)
		}
		if line == "" || own {
			line = ReadableLine(orWord(g.fact("line"), strings.Join(g.Evidence[:min(1, len(g.Evidence))], "")))
		}
	}
	if len(writers) == 0 {
		return nil
	}
	fa := facts[0]
	subject := orWord(fa.subject, writers[0])
	f := Finding{Kind: KindInodesExhausted, Subject: subject, Object: "filesystem " + orWord(fa.mount, "?") + " of " + subject, Source: SrcMetrics,
		Severity: SevCritical, Weight: 0.95, Time: ev.Window.Start}
	for i := range found {
		if found[i].Kind == KindDiskFull && !found[i].Time.IsZero() && (f.Time.IsZero() || found[i].Time.Before(f.Time) || f.Time.Equal(ev.Window.Start)) {
			f.Time = found[i].Time
		}
	}
	f.setFact("mount", fa.mount)
	f.setFact("used", fmt.Sprintf("%.0f", fa.used))
	f.setFact("total", fmt.Sprintf("%.0f", fa.total))
	f.setFact("how", fa.how)
	f.setFact("bytes_pct", bytesPct[fa.mount])
	f.setFact("writers", strings.Join(writers, ", "))
	f.setFact("line", line)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s of %s inodes used on %s (%s)", subject, f.fact("used"), f.fact("total"), fa.mount, fa.how))
	if b := bytesPct[fa.mount]; b != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("df: %s of the bytes of %s used", b, fa.mount))
	}
	for _, w := range writers {
		f.Related = appendNew(f.Related, w)
	}
	f.Summary = fmt.Sprintf("filesystem %s of %s out of inodes", fa.mount, subject)
	return []Finding{f}
}

// dfColumns splits df's header into its columns ("Mounted on" is one).
func dfColumns(header string) []string {
	f := strings.Fields(strings.Replace(header, "Mounted on", "Mounted_on", 1))
	return f
}
