package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// etcd writes every change to its write-ahead log and fsyncs it before it
// answers; when its disk is slow (a burstable cloud volume out of burst
// credits, a noisy neighbour on the same device) every request waits for
// the fsync. etcd says so itself: "slow fdatasync" from the WAL, "apply
// request took too long", heartbeats sent late. The API server above it
// only times out ("etcdserver: request timed out"), and kubectl, controllers
// and GitOps syncs are slow: the disk under etcd is the cause, not the
// API server.

// KindEtcdSlowDisk is etcd slowed by its disk's write latency.
const KindEtcdSlowDisk Kind = "etcd_slow_disk"

var etcdSlowDisk = &mechanism{
	kind:   KindEtcdSlowDisk,
	class:  classCause,
	label:  "etcd slowed by disk latency (slow fdatasync)",
	detect: detectEtcdSlowDisk,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is slowed by its disk: its WAL fsyncs are slow (%s \"slow fdatasync\" warnings, up to %s against an expected 1s) so every write waits, requests take too long (%s \"apply request took too long\") and the API server above it times out (etcdserver: request timed out)",
			h.Subject, orWord(h.fact("fsyncs"), "its"), orWord(h.fact("max_took"), "seconds"), orWord(h.fact("applies"), "its"))
		d += h.clause("; the disk is out of burst credits: ", "burst")
		d += h.clause("; ", "volume")
		d += h.clause("; more writes were put on the same disk by the ", "change")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Give etcd's data volume steady IOPS: move it to gp3 with provisioned IOPS/throughput (or io2), and keep other writers (audit logs, backups) off that disk")
		r.med("Check disk latency under etcd (etcd_disk_wal_fsync_duration_seconds p99 under 10ms, EBS BurstBalance, VolumeQueueLength) before blaming the API server")
		r.low("Alert on etcd_disk_wal_fsync_duration_seconds p99 and on BurstBalance below 20%%")
	},
}

var (
	etcdFsyncRE = regexp.MustCompile(`(?i)slow fdatasync|wal sync duration|sync duration of [\d.]+m?s, expected less than`)
	etcdApplyRE = regexp.MustCompile(`(?i)apply request took too long|failed to send out heartbeat on time|waiting for ReadIndex response took too long`)
	etcdTookRE  = regexp.MustCompile(`(?:"took"\s*:\s*"|sync duration of )([\d.]+)(ms|s)\b`)
)

func detectEtcdSlowDisk(ev *Gathered, _ []Finding) []Finding {
	var fsyncs, applies int
	var first time.Time
	var line, source string
	var maxTook float64
	for _, ls := range ev.Logs {
		for _, t := range ls.Templates {
			for _, ex := range t.Lines() {
				if m := findSubmatch(etcdTookRE, ex); m != nil && matchLine(etcdFsyncRE, ex) {
					v, _ := strconv.ParseFloat(m[1], 64)
					if m[2] == "ms" {
						v /= 1000
					}
					maxTook = max(maxTook, v)
				}
			}
			n := t.Incident
			if n == 0 {
				continue
			}
			switch {
			case matchLine(etcdFsyncRE, t.Example):
				fsyncs += n
				if line == "" || t.FirstIncident.Before(first) {
					line, source = t.Example, ls.Source
				}
				if first.IsZero() || (!t.FirstIncident.IsZero() && t.FirstIncident.Before(first)) {
					first = t.FirstIncident
				}
			case matchLine(etcdApplyRE, t.Example):
				applies += n
			}
		}
	}
	if fsyncs == 0 {
		return nil
	}
	subject := "etcd"
	f := Finding{Kind: KindEtcdSlowDisk, Subject: subject, Object: "logs " + source, Source: SrcLogs, Severity: SevCritical, Weight: 0.9, Time: first, Related: []string{source}}
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	f.setFact("fsyncs", strconv.Itoa(fsyncs))
	f.setFact("applies", strconv.Itoa(applies))
	if maxTook > 0 {
		f.setFact("max_took", strconv.FormatFloat(maxTook, 'f', 2, 64)+" s")
	}
	f.setFact("line", line)
	f.Evidence = []string{fmt.Sprintf("logs %s: %d \"slow fdatasync\" warnings in the window (longest %s), %d requests took too long: %s", source, fsyncs, orWord(f.fact("max_took"), "-"), applies, quote(line, 200))}
	// A burstable volume's credits running out.
	for _, ms := range ev.Metrics {
		if !strings.Contains(strings.ToLower(ms.Name), "burstbalance") && !strings.Contains(strings.ToLower(ms.Name), "burst_balance") {
			continue
		}
		for _, s := range ms.Series {
			pts := append([]evidence.Point(nil), s.Points...)
			sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			if len(pts) < 2 {
				continue
			}
			hi, lo := pts[0], pts[0]
			for _, p := range pts {
				if p.V > hi.V && !p.T.After(lo.T) {
					hi = p
				}
				if p.V < lo.V {
					lo = p
				}
			}
			if lo.V > 20 || hi.V-lo.V < 30 {
				continue
			}
			var zero time.Time
			for _, p := range pts {
				if p.V <= 1 {
					zero = p.T
					break
				}
			}
			b := fmt.Sprintf("%s fell from %.0f%% at %s to %.0f%% at %s", orWord(s.Labels["label"], ms.Name), hi.V, ts(hi.T), lo.V, ts(lo.T))
			if !zero.IsZero() {
				b += " (empty from " + ts(zero) + ")"
			}
			f.setFact("burst", b)
			f.Evidence = append(f.Evidence, "burst credits: "+b)
			break
		}
	}
	// The volume, as the cloud describes it.
	for _, c := range ev.Commands {
		out := strings.Join(c.Lines, "\n")
		if m := findSubmatch(gp2RE, out); m != nil && strings.Contains(strings.ToLower(out), "etcd") {
			f.setFact("volume", "its volume is a burstable "+m[1]+" volume (baseline IOPS from its size, bursts on credits)")
			f.Evidence = append(f.Evidence, "volume: "+strings.TrimSpace(c.Command))
			break
		}
	}
	// A change that put more writes on etcd's disk.
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	for _, c := range changes {
		if matchLine(etcdDiskChangeRE, c.Description) && c.Timestamp.Before(f.Time) && f.Time.Sub(c.Timestamp) < 24*time.Hour {
			f.setFact("change", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), c.Description))
			f.Evidence = append(f.Evidence, "writes added to etcd's disk by the "+f.fact("change"))
		}
	}
	f.Summary = fmt.Sprintf("etcd slow fdatasync (%d warnings): disk write latency", fsyncs)
	return []Finding{f}
}

var (
	gp2RE            = regexp.MustCompile(`"?(?:Type|VolumeType)"?\s*:\s*"(gp2|st1|sc1)"`)
	etcdDiskChangeRE = regexp.MustCompile(`(?i)(?:/var/lib/etcd|etcd[-_ ]data|etcd (?:data )?(?:volume|disk))`)
)
