package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindDiskClaim: an alert's claim that a host's disk is filling ("will fill
// in 4 hours"), checked against the filesystem's free-space series. Such
// alerts extrapolate the last hour's write rate; a large temporary write
// (a backup's staging dump, a sort spill, an export) makes them fire and
// then frees its space. Free space back at its usual level refutes the
// claim, and the host's own log says what wrote and removed the data;
// free space still falling confirms it.
const KindDiskClaim Kind = "disk_claim"

var diskClaim = &mechanism{
	kind:     KindDiskClaim,
	class:    classCause,
	label:    "disk-fill alert checked against the filesystem's free space",
	detect:   detectDiskClaim,
	describe: describeDiskClaim,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		mp := orWord(h.fact("mountpoint"), "the filesystem")
		if h.fact("real") == "" {
			r.high("No action needed on %s of %s now: its free space is back to %s; the alert extrapolated a temporary write", mp, h.Subject, h.fact("now"))
			if w := h.fact("writer"); w != "" {
				r.med("Stage %s's data on another volume (or stream it) so that its temporary write does not trip the disk-fill alert", w)
			}
			r.low("Make the fill prediction look at a longer window (predict_linear over 6h) or require the condition for longer before paging")
			return
		}
		if h.fact("filler_path") != "" {
			recommendFiller(h, r)
			return
		}
		r.high("Free space on %s of %s before it fills %s: remove or move what is growing (%s)", mp, h.Subject, orWord(h.fact("full_in"), "soon"), orWord(h.fact("writer"), "find it with du"))
		r.med("Grow the filesystem %s of %s to gain time", mp, h.Subject)
		r.low("Alert on the growth's cause as well as on the prediction")
	},
}

var (
	diskClaimRE   = regexp.MustCompile(`(?i)(disk|filesystem|volume|storage|space)\w*\s?(will\s?)?(fill|full|out\s?of\s?space|running\s?out|exhaust)|will\s?fill|OutOfSpace|(Disk|Filesystem|Fs)(Space|Usage|Fill)`)
	diskAlertRE   = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*(?:Disk|Filesystem|Volume|Space)[A-Za-z0-9]*\b`)
	freeBytesRE   = regexp.MustCompile(`(?i)filesystem_(avail|free)_bytes|disk_(free|avail(able)?)_bytes|LogicalDisk_free_bytes|FreeStorageSpace`)
	removalLineRE = regexp.MustCompile(`(?i)\b(removed|deleted|cleaned( up)?|cleanup|purged|rm -rf|unlinked|freed)\b`)
)

// detectDiskClaim checks an alert's claim that a host's disk is filling.
func detectDiskClaim(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	text := sc.Message + " " + sc.Hint + " " + sc.Alert
	if !matchLine(diskClaimRE, text) {
		return nil
	}
	lower := strings.ToLower(text)
	type cand struct {
		s          evidence.Series
		host, mp   string
		base, low  float64
		lowAt      time.Time
		last       evidence.Point
		named      bool
		hostNamed  bool
		dropShare  float64
		recoveredT time.Time
	}
	var cs []cand
	for _, ms := range ev.Metrics {
		if !matchLine(freeBytesRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			if len(s.Points) < 5 {
				continue
			}
			host, hostNamed := seriesHost(s.Labels, lower, ev.K8s.Nodes)
			if sc.Service != "" && host != "" && !strings.EqualFold(host, sc.Service) && !hostNamed {
				continue
			}
			mp := orWord(s.Labels["mountpoint"], orWord(s.Labels["device"], s.Labels["volume"]))
			c := cand{s: s, host: host, mp: mp, hostNamed: hostNamed, named: mp != "" && strings.Contains(lower, strings.ToLower(mp))}
			// The usual level: the median before the window (or of the
			// first fifth of the series).
			var before []float64
			for _, p := range s.Points {
				if p.T.Before(ev.Window.Start) {
					before = append(before, p.V)
				}
			}
			if len(before) < 3 {
				for _, p := range s.Points[:max(3, len(s.Points)/5)] {
					before = append(before, p.V)
				}
			}
			c.base = medianOf(before)
			c.low = c.base
			for _, p := range s.Points {
				if p.V < c.low {
					c.low, c.lowAt = p.V, p.T
				}
			}
			c.last = s.Points[len(s.Points)-1]
			if c.base <= 0 {
				continue
			}
			c.dropShare = (c.base - c.low) / c.base
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	// The filesystem the claim names, else the one whose free space fell
	// the most.
	// A host the claim names (its node, its address) rules the others
	// out: another node's disk says nothing of it.
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].hostNamed != cs[j].hostNamed {
			return cs[i].hostNamed
		}
		if cs[i].named != cs[j].named {
			return cs[i].named
		}
		return cs[i].dropShare > cs[j].dropShare
	})
	c := cs[0]
	subject := orWord(sc.Service, c.host)
	alert := orWord(findString(diskAlertRE, text), "disk")
	f := Finding{Kind: KindDiskClaim, Subject: subject, Object: "filesystem " + c.mp + " of " + orWord(c.host, subject), Namespace: sc.Namespace,
		Severity: SevWarning, Weight: 0.75, Source: SrcMetrics}
	f.setFact("alert", alert)
	f.setFact("mountpoint", c.mp)
	f.setFact("host", c.host)
	f.setFact("usual", humanBytes(int64(c.base)))
	f.setFact("low", humanBytes(int64(c.low)))
	f.setFact("now", humanBytes(int64(c.last.V)))
	f.setFact("low_at", ts(c.lowAt))
	f.Evidence = []string{fmt.Sprintf("the %s alert claims the disk of %s is filling: %s", alert, subject, quote(strings.TrimSpace(sc.Message), 200))}
	drop := c.base - c.low
	recovered := drop > 0 && c.last.V >= c.base-0.2*drop && c.last.T.After(c.lowAt)
	// Free space low against the filesystem's size is the claim borne
	// out whatever the trend in the window: an alert that the disk is
	// almost full, with a tenth of it left, is real.
	size := filesystemSize(ev, c.s.Labels, c.host, c.mp)
	lowNow := size > 0 && c.last.V < lowFreeShare*size
	if size > 0 {
		f.setFact("size", humanBytes(int64(size)))
		f.setFact("free_share", fmt.Sprintf("%.1f%%", 100*c.last.V/size))
	}
	// Onset: the first point of the fall.
	onset := c.lowAt
	for _, p := range c.s.Points {
		if p.V <= c.base-0.1*drop {
			onset = p.T
			break
		}
	}
	if drop <= 0 {
		onset = ev.Window.Start
	}
	f.Time = onset
	switch {
	case !lowNow && (recovered || drop < 0.02*c.base):
		f.Summary = fmt.Sprintf("free space on %s of %s is back to its usual %s: the %s alert is not borne out", c.mp, subject, humanBytes(int64(c.base)), alert)
		if drop >= 0.02*c.base {
			// The time the space came back.
			for _, p := range c.s.Points {
				if p.T.After(c.lowAt) && p.V >= c.base-0.2*drop {
					c.recoveredT = p.T
					break
				}
			}
			f.setFact("recovered_at", ts(c.recoveredT))
			f.setFact("temporary", "true")
			f.Evidence = append(f.Evidence, fmt.Sprintf("free space on %s of %s fell from %s to %s (at %s) and is back to %s since %s", c.mp, subject, humanBytes(int64(c.base)), humanBytes(int64(c.low)), ts(c.lowAt), humanBytes(int64(c.last.V)), ts(c.recoveredT)))
			if w, wl, rl := diskWriter(ev.Logs, c.host, subject, c.mp, onset, c.recoveredT); w != "" {
				f.setFact("writer", w)
				f.setFact("write_line", wl)
				f.setFact("removal_line", rl)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s wrote to %s: %s", w, c.mp, quote(ReadableLine(wl), 200)))
				if rl != "" {
					f.Evidence = append(f.Evidence, fmt.Sprintf("and removed it: %s", quote(ReadableLine(rl), 200)))
				}
				f.Weight = 0.9
			}
		} else {
			f.Evidence = append(f.Evidence, fmt.Sprintf("free space on %s of %s stays at %s (usual %s)", c.mp, subject, humanBytes(int64(c.last.V)), humanBytes(int64(c.base))))
		}
	default:
		f.setFact("real", "true")
		f.Severity = SevCritical
		f.Weight = 0.9
		// The recent fall rate, extrapolated.
		var recent []evidence.Point
		for _, p := range c.s.Points {
			if !p.T.Before(c.last.T.Add(-time.Hour)) {
				recent = append(recent, p)
			}
		}
		if slope, _ := linearFit(recent); slope < 0 {
			f.setFact("rate", humanBytes(int64(-slope*3600))+"/h")
			f.setFact("full_in", "in about "+humanDuration(time.Duration(c.last.V/-slope*float64(time.Second))))
		}
		if lowNow {
			f.Evidence = append(f.Evidence, fmt.Sprintf("free space on %s of %s is %s, %s of its %s", c.mp, orWord(c.host, subject), humanBytes(int64(c.last.V)), f.fact("free_share"), f.fact("size")))
		}
		if drop >= 0.02*c.base {
			f.Evidence = append(f.Evidence, fmt.Sprintf("free space on %s of %s fell from %s to %s and has not come back", c.mp, subject, humanBytes(int64(c.base)), humanBytes(int64(c.last.V))))
		}
		if filler(ev, &f, c.host) {
			// The filler is the cause: the workload writing, on the host.
			if w := f.fact("filler_workload"); w != "" {
				f.Subject = w
				f.Related = append(f.Related, orWord(c.host, subject))
			}
		} else if w, wl, _ := diskWriter(ev.Logs, c.host, subject, c.mp, onset, time.Time{}); w != "" {
			f.setFact("writer", w)
			f.setFact("write_line", wl)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s writes to %s: %s", w, c.mp, quote(ReadableLine(wl), 200)))
		}
		f.Summary = fmt.Sprintf("free space on %s of %s keeps falling (%s now): the %s alert is real", c.mp, subject, humanBytes(int64(c.last.V)), alert)
		if lowNow {
			f.Summary = fmt.Sprintf("free space on %s of %s is down to %s (%s of %s): the %s alert is real", c.mp, orWord(c.host, subject), humanBytes(int64(c.last.V)), f.fact("free_share"), f.fact("size"), alert)
		}
		if w := f.fact("filler_path"); w != "" {
			f.Summary += fmt.Sprintf("; %s holds %s", w, f.fact("filler_size"))
		}
	}
	return []Finding{f}
}

// diskWriter finds, in the host's logs, what wrote to the mountpoint when
// its free space fell (a line naming a path under it, from shortly before
// the fall) and the line that removed it when the space came back.
func diskWriter(sets []LogSet, host, subject, mp string, onset, recovered time.Time) (who, writeLine, removalLine string) {
	if mp == "" || mp == "/" {
		return "", "", ""
	}
	var bestAt time.Time
	for i := range sets {
		set := &sets[i]
		onHost := set.Host && (strings.EqualFold(set.Subject, host) || strings.EqualFold(set.Subject, subject)) ||
			strings.Contains(strings.ToLower(set.Source), strings.ToLower(orWord(host, subject)))
		if !onHost {
			continue
		}
		ts := slices.Clone(set.Templates)
		sort.SliceStable(ts, func(a, b int) bool { return ts[a].FirstSeen.Before(ts[b].FirstSeen) })
		for _, t := range ts {
			if !strings.Contains(t.Example, mp) || t.FirstSeen.IsZero() {
				continue
			}
			if d := onset.Sub(t.FirstSeen); d < -10*time.Minute || d > 30*time.Minute {
				continue
			}
			if matchLine(removalLineRE, t.Example) {
				continue
			}
			if who == "" || t.FirstSeen.Before(bestAt) {
				who, writeLine, bestAt = programOf(t.Example, subjectOfSource(set.Source)), t.Example, t.FirstSeen
			}
		}
		if who == "" || recovered.IsZero() {
			continue
		}
		for _, t := range ts {
			if !matchLine(removalLineRE, t.Example) || t.LastSeen.IsZero() {
				continue
			}
			if d := t.LastSeen.Sub(recovered); d < -15*time.Minute || d > 5*time.Minute {
				continue
			}
			removalLine = t.Example
		}
	}
	return who, writeLine, removalLine
}

var syslogProgramRE = regexp.MustCompile(`^\S+\s+\S+\s+([A-Za-z][\w.@-]*)\[\d+\]:`)

// programOf is the program a syslog line names ("host pg-backup[412233]:"),
// else the log source's name.
func programOf(line, source string) string {
	if m := findSubmatch(syslogProgramRE, line); m != nil {
		return m[1]
	}
	return source
}

func describeDiskClaim(h *Hypothesis, sc Scope) string {
	alert := orWord(h.fact("alert"), "disk")
	mp := orWord(h.fact("mountpoint"), "the filesystem")
	if h.fact("real") != "" {
		host := orWord(h.fact("host"), h.Subject)
		d := fmt.Sprintf("the %s alert on %s is real: free space on %s keeps falling (%s now, usual %s)", alert, host, mp, h.fact("now"), h.fact("usual"))
		if fs := h.fact("free_share"); fs != "" {
			d = fmt.Sprintf("the %s alert on %s is real: %s has %s free, %s of its %s", alert, host, mp, h.fact("now"), fs, h.fact("size"))
			if h.fact("usual") != h.fact("now") {
				d += fmt.Sprintf(" (usual %s)", h.fact("usual"))
			}
		}
		if r := h.fact("rate"); r != "" {
			d += fmt.Sprintf(", %s, full %s", r, h.fact("full_in"))
		}
		if p := h.fact("filler_path"); p != "" {
			return d + "; " + describeFiller(h)
		}
		if w := h.fact("writer"); w != "" {
			d += fmt.Sprintf("; what writes to it: %s — %s", w, quote(ReadableLine(h.fact("write_line")), 180))
		}
		return d
	}
	if h.fact("temporary") == "" {
		return fmt.Sprintf("the %s alert on %s is not borne out: free space on %s stays at %s, its usual level; the disk is not filling", alert, h.Subject, mp, h.fact("now"))
	}
	d := fmt.Sprintf("the %s alert on %s is not borne out: free space on %s fell from %s to %s (lowest at %s) during a temporary write and is back to %s since %s, so the disk is not filling and no action is needed", alert, h.Subject, mp, h.fact("usual"), h.fact("low"), h.fact("low_at"), h.fact("now"), h.fact("recovered_at"))
	if w := h.fact("writer"); w != "" {
		d += fmt.Sprintf("; the write was %s's: %s", w, quote(ReadableLine(h.fact("write_line")), 180))
		d += h.quoteClause(", then it removed the data: ", "removal_line", 160)
	}
	return d
}
