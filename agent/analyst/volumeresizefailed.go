package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// A volume that was asked to grow and did not. Growing a
// PersistentVolumeClaim (raising spec.resources.requests.storage) asks
// the CSI driver's external-resizer to grow the cloud disk and then the
// kubelet to grow the filesystem; until both succeed the claim keeps its
// old capacity (status.capacity) and the filesystem its old size. The
// cloud may refuse: EBS allows one modification per volume every six
// hours (VolumeModificationRateExceeded), a GCE PD or Azure disk may not
// grow while attached or past a quota, the StorageClass may not allow
// expansion. The resizer says so in the claim's events (VolumeResizeFailed,
// "resize volume ... failed: ... api error VolumeModificationRateExceeded:
// ... Wait at least 6 hours between modifications per EBS volume"), the
// kubelet in the pod's (FileSystemResizeFailed, "MountVolume.NodeExpandVolume
// failed"). When the workload's disk is full, the failed resize is why it
// is still full after the operator grew it: the answer names the refusal,
// not the writer that fills it.

// KindVolumeResizeFailed is a PersistentVolumeClaim whose expansion the
// resizer or the kubelet failed.
const KindVolumeResizeFailed Kind = "volume_resize_failed"

var (
	// resizeFailedRE is the resizer's or the kubelet's failure to grow a
	// volume, by the event's reason or its message.
	resizeFailedRE = regexp.MustCompile(`(?i)VolumeResizeFailed|FileSystemResizeFailed|resize volume .{0,200}failed|NodeExpandVolume failed|ControllerExpandVolume failed|(?:expand|resiz)\w* (?:the )?volume .{0,80}failed|failed to (?:expand|resize) (?:the )?(?:volume|pvc|filesystem)`)
	// resizeWhyRE reads the cloud's own refusal inside the resizer's
	// message: the AWS SDK's "api error Code: text", GCP's "googleapi:
	// Error 400: text", Azure's "Code=\"X\" Message=\"text\"".
	resizeWhyRE = []*regexp.Regexp{
		regexp.MustCompile(`api error (\w+): ([^\n]+)`),
		regexp.MustCompile(`googleapi: (Error \d+): ([^\n]+)`),
		regexp.MustCompile(`Code="(\w+)" Message="([^"]+)"`),
	}
	// diskOutRE is a workload's write failing for a full disk, as
	// databases and runtimes print it.
	diskOutRE = regexp.MustCompile(`(?i)no space left on device|ENOSPC|NOT_ENOUGH_SPACE|not enough space|disk (?:is )?full|could not extend file`)
	// growChangeRE is a change that grew a volume: the trigger.
	growChangeRE = regexp.MustCompile(`(?i)\b(?:pvc|persistentvolumeclaim|volume|disk|storage)\b.{0,80}\b\d+\s*[GT]i?B?\b\s*(?:->|→|to)\s*\d+\s*[GT]i?B?\b|\b(?:resize|grow|expand|extend)\w*\b.{0,40}\b(?:pvc|volume|disk|storage)\b`)
)

var volumeResizeFailed = &mechanism{
	kind:   KindVolumeResizeFailed,
	class:  classCause,
	label:  "volume expansion failed, the volume keeps its old size",
	detect: detectVolumeResizeFailed,
	// The workload's own disk-full lines are the consequence.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindDiskFull && f.Subject == h.Subject
	},
	// The change that grew the volume is the one whose refusal this is.
	fitsChange:     changeSays(growChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		claim := h.fact("claim")
		d := fmt.Sprintf("the expansion of %s's volume (PersistentVolumeClaim %s) failed", h.Subject, claim)
		d += fmt.Sprintf(": the resizer reports %s %s since %s UTC", h.fact("reason"), plural(atoiOr(h.fact("count")), "time", "times"), h.fact("from"))
		if c := h.fact("code"); c != "" {
			d += fmt.Sprintf(", the cloud refusing the modification with %s: %s", c, quote(h.fact("why"), 200))
		} else {
			d += fmt.Sprintf(" (%s)", quote(h.fact("message"), 240))
		}
		d += ". The claim and its filesystem keep their old size"
		if full := h.fact("full"); full != "" {
			d += fmt.Sprintf(", so the disk is still full and %s's writes fail: %s", h.Subject, quote(full, 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		claim := h.fact("claim")
		if strings.Contains(strings.ToLower(h.fact("code")+h.fact("why")), "rate") {
			r.high("Free space on %s's volume now (drop or move old data, stop the job that fills it): the cloud accepts no new size for the volume until its modification cooldown ends (EBS: 6 hours after the last modification)", h.Subject)
			r.med("Retry the expansion of %s once the cooldown is over (the resizer retries by itself), and grow it once by enough rather than in steps", claim)
		} else {
			r.high("Fix what the resizer reports for %s (%s) so the expansion can complete, and free space on %s's volume meanwhile", claim, orWord(h.fact("code"), h.fact("reason")), h.Subject)
			r.med("Check that the StorageClass allows volume expansion and that the driver supports online expansion")
		}
		r.low("Alert on VolumeResizeFailed events and on a claim whose requested size differs from its capacity for more than an hour")
	},
}

// detectVolumeResizeFailed reads the claims whose expansion failed, with
// the cloud's refusal and the workload's disk-full lines.
func detectVolumeResizeFailed(ev *Gathered, found []Finding) []Finding {
	byClaim := map[string]*Finding{}
	counts := map[string]int{}
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if !matchLine(resizeFailedRE, e.Reason) && !matchLine(resizeFailedRE, e.Message) {
			continue
		}
		claim := e.InvolvedObject.Name
		subject := ""
		if e.InvolvedObject.Kind == "Pod" {
			claim = resizeClaimOfPod(ev, e.InvolvedObject.Name, e.Message)
			subject = workloadOfPodName(e.InvolvedObject.Name)
		} else if e.InvolvedObject.Kind != "PersistentVolumeClaim" {
			continue
		}
		if claim == "" {
			continue
		}
		subject = orWord(workloadOfClaim(ev, claim), orWord(subject, claimWorkload(claim, ev.K8s.Pods)))
		first, last := eventTime(e)
		f := byClaim[claim]
		if f == nil {
			f = &Finding{Kind: KindVolumeResizeFailed, Subject: subject, Object: "persistentvolumeclaim " + claim,
				Namespace: orWord(e.InvolvedObject.Namespace, e.Namespace), Time: first, Severity: SevWarning, Weight: 0.6, Source: SrcEvents}
			f.setFact("claim", claim)
			f.setFact("reason", orWord(e.Reason, "VolumeResizeFailed"))
			f.setFact("message", e.Message)
			for _, re := range resizeWhyRE {
				if m := findSubmatch(re, e.Message); m != nil {
					f.setFact("code", m[1])
					f.setFact("why", strings.TrimSpace(m[2]))
					break
				}
			}
			byClaim[claim] = f
		}
		f.Time = earliest(f.Time, first)
		counts[claim] += int(max(e.Count, 1))
		if len(f.Evidence) < 2 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on %s: %s (%s, first %s, last %s)", e.Reason, f.Object, quoteError(e.Message, 400), plural(int(max(e.Count, 1)), "time", "times"), ts(first), ts(last)))
		}
	}
	if len(byClaim) == 0 {
		return nil
	}
	out := make([]Finding, 0, len(byClaim))
	for _, claim := range slices.Sorted(maps.Keys(byClaim)) {
		f := byClaim[claim]
		f.setFact("from", f.Time.UTC().Format("15:04"))
		f.setFact("count", fmt.Sprint(counts[claim]))
		// The workload's writes failing for space: the volume it meant to
		// grow is still full.
		full := ""
		for i := range found {
			g := &found[i]
			if g.Kind == KindDiskFull && g.Subject == f.Subject {
				full = orWord(g.fact("line"), strings.Join(g.Evidence[:min(1, len(g.Evidence))], ""))
				break
			}
		}
		if full == "" {
			for m := range incidentMatches(ev, diskOutRE) {
				if m.set.Subject == f.Subject || subjectOfSource(m.set.Source) == f.Subject {
					full = m.line
					break
				}
			}
		}
		if full != "" {
			f.setFact("full", ReadableLine(full))
			f.Severity, f.Weight = SevCritical, 0.97
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s's writes fail for space: %s", f.Subject, quote(ReadableLine(full), 240)))
		}
		f.Summary = fmt.Sprintf("expansion of PersistentVolumeClaim %s failed (%s)", claim, orWord(f.fact("code"), f.fact("reason")))
		out = append(out, *f)
	}
	return out
}

// resizeClaimOfPod names the claim of a pod's failed filesystem
// expansion: the one its message names, else its only claim.
func resizeClaimOfPod(ev *Gathered, pod, msg string) string {
	var claims []string
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if p.Name != pod {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if strings.Contains(msg, v.PersistentVolumeClaim.ClaimName) || strings.Contains(msg, `"`+v.Name+`"`) {
				return v.PersistentVolumeClaim.ClaimName
			}
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if len(claims) == 1 {
		return claims[0]
	}
	return ""
}
