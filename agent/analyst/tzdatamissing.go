package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A process told its time zone (TZ=Europe/Berlin) in an image without the
// time zone database: a `FROM scratch` or minimal image has no
// /usr/share/zoneinfo, and most runtimes do not fail on it. Go's time
// package silently falls back to UTC when TZ names a zone it cannot load
// (unless the binary embeds time/tzdata); glibc does the same; an explicit
// load fails ("unknown time zone Europe/Berlin", Python's
// ZoneInfoNotFoundError, Java's ZoneRulesException). Nothing errors:
// every local clock time the service is configured with (a 14:00 cutoff,
// a 02:00 batch) now applies in UTC, an hour or two off the intended
// zone. The origin is a release that moved the runtime image to scratch,
// distroless/static or another base without tzdata.

// KindTZDataMissing is a process whose configured time zone its image
// cannot load, so it runs in UTC.
const KindTZDataMissing Kind = "tzdata_missing"

var (
	// zoneinfoPathRE is a zone file a command looked for.
	zoneinfoPathRE = regexp.MustCompile(`zoneinfo/([A-Z][A-Za-z_]+(?:/[A-Za-z_+-]+){0,2})`)
	// fileMissingRE is a shell's answer for a file that is not there.
	fileMissingRE = regexp.MustCompile(`(?i)No such file or directory|can't open|cannot access|cannot open|not found`)
	// unknownZoneRE is a runtime refusing to load a zone it has no data
	// for.
	unknownZoneRE = regexp.MustCompile(`unknown time zone ([A-Z][A-Za-z_]+/[A-Za-z_+/-]+)|ZoneInfoNotFoundError: '?No time zone found with key ([A-Z][A-Za-z_]+/[A-Za-z_+/-]+)|ZoneRulesException: Unknown time-zone ID: ([A-Z][A-Za-z_]+/[A-Za-z_+/-]+)|UnknownTimeZoneError: '([A-Z][A-Za-z_]+/[A-Za-z_+/-]+)'`)
	// clockTimeRE is a configured local clock time (a cutoff, a run
	// hour).
	clockTimeRE = regexp.MustCompile(`^([01]?\d|2[0-3]):([0-5]\d)$`)
	// envVarRE is an environment variable's name.
	envVarRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	// baseImageChangeRE is a change of a runtime image's base.
	baseImageChangeRE = regexp.MustCompile(`(?i)\bscratch\b|distroless|\balpine\b|base image|\bDockerfile\b|\btzdata\b|zoneinfo|runtime (?:stage|image)|\bchainguard\b|\bubi-micro\b`)
)

var tzdataMissing = &mechanism{
	kind:   KindTZDataMissing,
	class:  classCause,
	label:  "time zone database missing from the image (the process runs in UTC)",
	detect: detectTZDataMissing,
	related: func(h *Hypothesis, f *Finding) bool {
		return (f.Kind == KindLogErrors || f.Kind == KindConfigError) && strings.EqualFold(f.Subject, h.Subject)
	},
	fitsChange:     changeSays(baseImageChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		zone := orWord(h.fact("zone"), "its configured zone")
		d := fmt.Sprintf("%s runs in UTC instead of %s: its image has no time zone database (no /usr/share/zoneinfo/%s, as in a FROM scratch or minimal image without tzdata), so TZ=%s is silently ignored and local times fall back to UTC", h.Subject, zone, zone, zone)
		if m := h.fact("missing"); m != "" {
			d += fmt.Sprintf(" (%s)", m)
		}
		if c := h.fact("clock_settings"); c != "" {
			d += fmt.Sprintf("; the clock times it is configured with (%s) now apply in UTC", c)
			if s := h.fact("shifted"); s != "" {
				d += ", " + s
			}
		}
		d += "; nothing fails, the service computes with the wrong hour"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Give %s's image the time zone database: copy /usr/share/zoneinfo from the build stage (or install tzdata), or embed it in the binary (Go: import _ \"time/tzdata\" or -tags timetzdata; Java and Python: the runtime's or the tzdata package)", h.Subject)
		r.rollback()
		r.med("Check, after changing a runtime image's base, that the process reports the intended zone (log the zone it loaded at start, fail when TZ cannot be loaded)")
		r.low("Alert on business times computed outside their expected local hours (a cutoff applied late), not only on errors")
	},
}

// detectTZDataMissing finds a workload whose image lacks the zone file of
// the TZ it is given: a command run in or beside its container that found
// no /usr/share/zoneinfo/ZONE, or its runtime refusing to load the zone.
func detectTZDataMissing(ev *Gathered, _ []Finding) []Finding {
	type miss struct{ zone, what string }
	byWorkload := map[string]miss{}
	var order []string
	add := func(w, zone, what string) {
		if w == "" || zone == "" || zone == "UTC" || strings.HasPrefix(zone, "Etc/") {
			return
		}
		if _, ok := byWorkload[w]; !ok {
			order = append(order, w)
			byWorkload[w] = miss{zone, what}
		}
	}
	for _, c := range ev.Commands {
		if !c.Exec {
			continue
		}
		m := findSubmatch(zoneinfoPathRE, c.Run)
		if m == nil || !slices.ContainsFunc(c.Lines, func(l string) bool { return matchLine(fileMissingRE, l) }) {
			continue
		}
		add(commandWorkload(&c), m[1], fmt.Sprintf("%s: %s", quote(truncate(c.Run, 100), 110), quote(truncate(strings.TrimSpace(strings.Join(c.Lines, " ")), 120), 130)))
	}
	for x := range incidentMatches(ev, unknownZoneRE) {
		if m := findSubmatch(unknownZoneRE, x.line); m != nil {
			add(x.set.Subject, firstGroup(m), fmt.Sprintf("its log: %s", quote(ReadableLine(x.line), 160)))
		}
	}
	var out []Finding
	for _, w := range order {
		ms := byWorkload[w]
		env, ns, started := workloadEnv(ev, w)
		// The zone it is given: its TZ (the file looked for is the one it
		// names).
		if tz := env["TZ"]; tz != "" && tz != ms.zone && !strings.HasSuffix(ms.zone, tz) {
			continue
		}
		f := Finding{Kind: KindTZDataMissing, Subject: w, Namespace: ns, Severity: SevWarning, Weight: 0.85, Source: SrcKubernetes,
			Time: orTime(started, ev.Window.Start)}
		f.setFact("zone", ms.zone)
		f.setFact("missing", ms.what)
		var clocks []string
		var first string
		keys := slices.Sorted(maps.Keys(env))
		for _, k := range keys {
			if clockTimeRE.MatchString(env[k]) {
				clocks = append(clocks, k+"="+env[k])
				if first == "" {
					first = env[k]
				}
			}
		}
		f.setFact("clock_settings", strings.Join(clocks, ", "))
		if loc, err := time.LoadLocation(ms.zone); err == nil && first != "" {
			at := orTime(ev.Window.End, time.Now())
			hh, mm := 0, 0
			fmt.Sscanf(first, "%d:%d", &hh, &mm)
			utc := time.Date(at.Year(), at.Month(), at.Day(), hh, mm, 0, 0, time.UTC)
			if local := utc.In(loc); local.Format("15:04") != utc.Format("15:04") {
				f.setFact("shifted", fmt.Sprintf("%s is applied at %s UTC, %s %s", first, utc.Format("15:04"), local.Format("15:04"), ms.zone))
			}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s is given TZ=%s but its image has no zone file for it: %s", w, ms.zone, ms.what))
		if len(clocks) > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s is configured with local clock times: %s", w, strings.Join(clocks, ", ")))
		}
		f.Summary = fmt.Sprintf("%s cannot load time zone %s (no zoneinfo in its image): it runs in UTC", w, ms.zone)
		out = append(out, f)
	}
	return out
}

// workloadEnv is the environment of a workload's main container (its
// Deployment's template, else one of its pods), its namespace and when
// its running pods started.
func workloadEnv(ev *Gathered, w string) (map[string]string, string, time.Time) {
	env := map[string]string{}
	ns := ""
	var started time.Time
	put := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, e := range c.Env {
				if _, ok := env[e.Name]; !ok && e.Value != "" {
					env[e.Name] = e.Value
				}
			}
			break
		}
	}
	for _, d := range ev.K8s.Deployments {
		if d.Name == w {
			ns = d.Namespace
			put(d.Spec.Template.Spec.Containers)
		}
	}
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if WorkloadOfPod(p) != w {
			continue
		}
		if ns == "" {
			ns = p.Namespace
		}
		put(p.Spec.Containers)
		if t := p.CreationTimestamp.Time; !t.IsZero() && (started.IsZero() || t.After(started)) {
			started = t
		}
	}
	// What a command printed of the process's environment (TZ=…).
	for _, c := range ev.Commands {
		if commandWorkload(&c) != w {
			continue
		}
		for _, l := range c.Lines {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && envVarRE.MatchString(k) && !strings.ContainsAny(v, " \t") {
				if _, seen := env[k]; !seen {
					env[k] = v
				}
			}
		}
	}
	return env, ns, started
}
