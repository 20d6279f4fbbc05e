package analyst

import (
	"regexp"
	"strconv"
	"strings"
)

// The asked service's own latency, as localization reads it, is held to
// the bar the metric detector holds every latency series to (meaningful:
// the peak at least half again its baseline): a mean that went from 39 ms
// to 48 ms on one pod is the noise of a service serving normally, not an
// episode. Without this bar such a wobble is the one signal "bearing on"
// the subject, and a question "is X affected?" asked while its neighbours
// fail is answered with the neighbours' failure instead of "X is healthy,
// the failures nearby are these".

// entryRiseRE reads the rise localization describes ("... rose from 39.4
// ms to 48.5 ms at 13:20").
var entryRiseRE = regexp.MustCompile(`\brose from (-?[0-9.]+) ?(ms|s|%)? to (-?[0-9.]+) ?(ms|s|%)? at \d\d:\d\d$`)

// entryLatencyBar is the least ratio of peak to baseline a latency rise
// must reach to be a change (meaningful's default bar).
const entryLatencyBar = 1.5

// dropEntryWobble removes the asked service's own latency finding that
// localization added when its rise is under the latency bar.
func dropEntryWobble(fs []Finding, sc Scope) []Finding {
	if sc.Service == "" {
		return fs
	}
	out := fs[:0:0]
	for _, f := range fs {
		if f.Kind == KindLatency && f.Source == SrcMetrics && strings.EqualFold(f.Subject, sc.Service) && f.fact("baseline") == "" && entryWobble(f.Summary) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// entryWobble reports whether a localization rise ("rose from A to B at
// HH:MM") stays under the latency bar.
func entryWobble(summary string) bool {
	m := findSubmatch(entryRiseRE, summary)
	if m == nil {
		return false
	}
	before, err1 := strconv.ParseFloat(m[1], 64)
	peak, err2 := strconv.ParseFloat(m[3], 64)
	if err1 != nil || err2 != nil {
		return false
	}
	// "rose from 0 to 0": what it rose by does not even show; a share
	// from 0% to under minRatioShare of requests is a flicker
	// (errorshare.go).
	if before <= 0 {
		if m[4] == "%" {
			return peak < 100*minRatioShare
		}
		return peak <= 0 && m[2] == m[4]
	}
	before *= unitScale(m[2])
	peak *= unitScale(m[4])
	return peak < entryLatencyBar*before
}

// unitScale converts a value in ms or s to seconds (1 otherwise).
func unitScale(u string) float64 {
	if u == "ms" {
		return 0.001
	}
	return 1
}
