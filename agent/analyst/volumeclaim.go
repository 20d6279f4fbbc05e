package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindVolumeClaim: an alert's claim that a volume is filling, checked
// against the volume's series and what grows on it.
const KindVolumeClaim Kind = "volume_claim"

// MetricVolume is the class of the series gathered to check a volume
// claim (kubelet volume stats and the byte-sized series of the pods on
// the volume); they are never anomalies of their own.
const MetricVolume = "volume"

// A volume alert taken as a claim to check: the kubelet's volume series
// (used and capacity bytes) say how full the volume is and how fast it
// grows, hence when it will be full; the byte-sized series of the pod
// that mounts it say what grows on it. A volume that is full or filling
// confirms the alert and names the growing data; a flat, roomy volume
// refutes it.
var volumeClaim = &mechanism{
	kind:   KindVolumeClaim,
	class:  classCause,
	label:  "volume alert checked against the volume's growth",
	detect: detectVolumeClaim,
	describe: func(h *Hypothesis, sc Scope) string {
		alert := orWord(h.fact("alert"), "volume")
		target := h.Subject
		if c := h.fact("claim"); c != "" && c != h.Subject {
			target = "volume " + c + " of " + h.Subject
		}
		if h.fact("real") == "" {
			return fmt.Sprintf("the %s alert on %s is not borne out: it is %s full (%s of %s) and %s", alert, target, h.fact("used_pct"), h.fact("used"), h.fact("capacity"), orWord(h.fact("trend"), "not growing"))
		}
		d := fmt.Sprintf("the %s alert on %s is real: it is %s full (%s of %s)", alert, target, h.fact("used_pct"), h.fact("used"), h.fact("capacity"))
		if h.fact("growing") != "" {
			d += fmt.Sprintf(", growing %s, full %s", orWord(h.fact("rate"), "steadily"), orWord(h.fact("full_in"), "soon"))
		}
		if g := h.fact("grower"); g != "" {
			d += fmt.Sprintf("; what grows on it is %s of %s (%s, %s of the volume's growth)", g, orWord(h.fact("pod"), h.Subject), h.fact("grower_rate"), h.fact("grower_share"))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("real") == "" {
			r.high("No need to grow volume %s now: it is %s full and %s", h.fact("claim"), h.fact("used_pct"), orWord(h.fact("trend"), "not growing"))
			r.low("Base the alert on the volume's growth over a longer window")
			return
		}
		if g := h.fact("grower"); g != "" {
			r.high("Stop the growth of %s on %s (compact, rotate or expire the data it measures) before the volume fills %s", g, orWord(h.fact("pod"), h.Subject), orWord(h.fact("full_in"), "soon"))
		} else {
			r.high("Find what grows on volume %s and stop it before it fills %s", h.fact("claim"), orWord(h.fact("full_in"), "soon"))
		}
		r.med("Expand PersistentVolumeClaim %s (its StorageClass must allow volume expansion) to gain time", h.fact("claim"))
		r.low("Alert on the volume's time to full as well as its free share")
	},
}

var (
	volumeFillRE  = regexp.MustCompile(`(?i)VolumeFilling|VolumeFull|VolumeUsage|DiskFilling|DiskSpace|FilesystemSpace|FilesystemAlmostOutOfSpace|(?:volume|disk|filesystem|pvc)\b[^.;]{0,40}\b(?:filling|full|out of space|running out)|(?:filling|running out)[^.;]{0,20}\b(?:volume|disk|space)`)
	volumeAlertRE = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*(?:Volume|Disk|Filesystem)[A-Za-z0-9]*\b`)
)

// volumeClaimMetrics names the metrics that check a volume claim: the
// kubelet's volume series, and the byte-sized series of the pods that use
// the claims named in the question (a StatefulSet's claim ends with its
// pod's name) or of the subject's pods.
func volumeClaimMetrics(labels []evidence.Labels, sc Scope) []string {
	text := strings.ToLower(sc.Message + " " + sc.Hint + " " + sc.Alert)
	claims := map[string]bool{}
	for _, l := range labels {
		if c := l["persistentvolumeclaim"]; c != "" && strings.HasPrefix(l["__name__"], "kubelet_volume_stats_") && strings.Contains(text, strings.ToLower(c)) {
			claims[c] = true
		}
	}
	onClaim := func(pod string) bool {
		if pod == "" {
			return false
		}
		for c := range claims {
			if strings.HasSuffix(c, "-"+pod) {
				return true
			}
		}
		return sc.Service != "" && workloadOfName(pod) == sc.Service
	}
	set := map[string]bool{}
	for _, l := range labels {
		n := l["__name__"]
		switch {
		case strings.HasPrefix(n, "kubelet_volume_stats_") && strings.HasSuffix(n, "_bytes"):
			set[n] = true
		case strings.Contains(n, "bytes") && !strings.HasPrefix(n, "container_") && !strings.HasSuffix(n, "_total") && !strings.HasSuffix(n, "_bucket") && onClaim(l["pod"]):
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) > 12 {
		out = out[:12]
	}
	return out
}

// detectVolumeClaim checks an alert's claim that a volume is filling.
func detectVolumeClaim(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	text := sc.Message + " " + sc.Hint + " " + sc.Alert
	if !matchLine(volumeFillRE, text) {
		return nil
	}
	lower := strings.ToLower(text)
	series := func(suffix string) map[string]evidence.Series {
		out := map[string]evidence.Series{}
		for _, ms := range ev.Metrics {
			if !strings.HasSuffix(ms.Name, "kubelet_volume_stats_"+suffix) {
				continue
			}
			for _, s := range ms.Series {
				if c := s.Labels["persistentvolumeclaim"]; c != "" && len(s.Points) > 0 {
					out[c] = s
				}
			}
		}
		return out
	}
	used, capacity, avail := series("used_bytes"), series("capacity_bytes"), series("available_bytes")
	// The claim: the one the question names, else the only one.
	claim := ""
	var names []string
	for c := range capacity {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		if strings.Contains(lower, strings.ToLower(c)) {
			claim = c
		}
	}
	if claim == "" && len(names) == 1 {
		claim = names[0]
	}
	if claim == "" {
		return nil
	}
	capS := capacity[claim]
	capP, _ := lastPoint(capS.Points)
	if capP.V <= 0 {
		return nil
	}
	usedPts := used[claim].Points
	if len(usedPts) == 0 && len(avail[claim].Points) > 0 {
		for _, p := range avail[claim].Points {
			usedPts = append(usedPts, evidence.Point{T: p.T, V: capP.V - p.V})
		}
	}
	if len(usedPts) < 3 {
		return nil
	}
	cur := usedPts[len(usedPts)-1]
	slope, _ := linearFit(usedPts)
	pod := ""
	if s, ok := used[claim]; ok {
		pod = s.Labels["pod"]
	}
	subject := sc.Service
	if subject == "" && pod != "" {
		subject = workloadOfName(pod)
	}
	if subject == "" {
		subject = claim
	}
	alert := "volume"
	if m := findString(volumeAlertRE, text); m != "" {
		alert = m
	}
	f := Finding{Kind: KindVolumeClaim, Subject: subject, Object: "persistentvolumeclaim " + claim, Namespace: sc.Namespace, Time: usedPts[0].T,
		Severity: SevWarning, Weight: 0.9, Source: SrcMetrics}
	f.setFact("alert", alert)
	f.setFact("claim", claim)
	f.setFact("pod", pod)
	f.setFact("used", humanBytes(int64(cur.V)))
	f.setFact("capacity", humanBytes(int64(capP.V)))
	f.setFact("used_pct", fmt.Sprintf("%.0f%%", 100*cur.V/capP.V))
	f.Evidence = []string{fmt.Sprintf("the %s alert states: %s", alert, quote(strings.TrimSpace(sc.Message), 220))}
	var fullIn time.Duration
	if slope > 0 {
		fullIn = time.Duration((capP.V - cur.V) / slope * float64(time.Second))
		f.setFact("rate", humanBytes(int64(slope*3600))+"/h")
		f.setFact("full_in", "in about "+humanDuration(fullIn))
	}
	span := usedPts[len(usedPts)-1].T.Sub(usedPts[0].T)
	growing := slope > 0 && slope*span.Seconds() >= 0.01*capP.V
	f.Evidence = append(f.Evidence, fmt.Sprintf("volume %s: %s used of %s (%s), %s over the last %s", claim, humanBytes(int64(cur.V)), humanBytes(int64(capP.V)), f.fact("used_pct"),
		map[bool]string{true: "growing " + f.fact("rate") + ", full " + f.fact("full_in"), false: "not growing"}[growing], humanDuration(span)))
	if !growing && cur.V < 0.85*capP.V {
		f.Severity = SevInfo
		f.Weight = 0.5
		f.setFact("trend", "not growing")
		f.Summary = fmt.Sprintf("volume %s is %s full and not growing: the alert is not borne out", claim, f.fact("used_pct"))
		return []Finding{f}
	}
	f.setFact("real", "true")
	if growing {
		f.setFact("growing", "true")
	}
	// What grows on it: the byte-sized series of the pod on the claim
	// whose growth is the largest share of the volume's.
	if growing {
		best, bestSlope := "", 0.0
		for _, ms := range ev.Metrics {
			if ms.Class != MetricVolume || strings.HasPrefix(ms.Name, "kubelet_volume_stats_") {
				continue
			}
			for _, s := range ms.Series {
				p := s.Labels["pod"]
				if p == "" || !(strings.HasSuffix(claim, "-"+p) || p == pod) || len(s.Points) < 3 {
					continue
				}
				if sl, _ := linearFit(s.Points); sl > bestSlope || sl == bestSlope && ms.Name < best {
					best, bestSlope = ms.Name, sl
					if pod == "" {
						pod = p
						f.setFact("pod", p)
					}
				}
			}
		}
		if best != "" && bestSlope >= 0.3*slope {
			f.setFact("grower", best)
			f.setFact("grower_rate", "+"+humanBytes(int64(bestSlope*3600))+"/h")
			f.setFact("grower_share", fmt.Sprintf("%.0f%%", min(100, 100*bestSlope/slope)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s grows %s, %s of the volume's growth", best, orWord(pod, subject), f.fact("grower_rate"), f.fact("grower_share")))
		}
	}
	f.Summary = fmt.Sprintf("volume %s is %s full: the alert is real", claim, f.fact("used_pct"))
	if growing {
		f.Summary = fmt.Sprintf("volume %s is %s full and filling (full %s): the alert is real", claim, f.fact("used_pct"), orWord(f.fact("full_in"), "soon"))
	}
	return []Finding{f}
}
