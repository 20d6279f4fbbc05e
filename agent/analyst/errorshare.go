package analyst

import (
	"regexp"
	"slices"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An error rate read from its own series (a recording rule's error ratio,
// an errors-per-second counter) rises only when the rise matters against
// that series' own history: a ratio must reach a share of requests that
// someone would notice, and any series must climb well above the highest
// it reached before the incident. A ratio flickering between 0 and 0.03 %
// of requests all day, or a handful of errors on a series that had a few
// before, is noise, not "error rate rose".

// errorRatioNameRE names a series that is a share of requests, not a rate.
var errorRatioNameRE = regexp.MustCompile(`(?i)ratio|percent|_pct\b|_share\b|fraction`)

// minRatioShare is the least share of requests failing (as a fraction) for
// an error ratio's rise to count.
const minRatioShare = 0.005

// errorRiseMatters reports whether sh, a rise of an error series s read
// from its own values (MetricErrors), matters: its peak above twice what
// the baseline usually reached (its 90th percentile: an onset late in the
// baseline does not count as history) when the baseline had errors, held
// for more than one point when it had none, and, for a ratio, at least
// minRatioShare of requests.
func errorRiseMatters(name string, s evidence.Series, sh shift, w Window) bool {
	var base []float64
	nonZeroIn, maxAll := 0, 0.0
	for _, p := range s.Points {
		maxAll = max(maxAll, p.V)
		switch {
		case !p.T.Before(w.BaselineStart) && p.T.Before(w.Start):
			base = append(base, p.V)
		case !p.T.Before(w.Start) && (w.End.IsZero() || !p.T.After(w.End)) && p.V > 0:
			nonZeroIn++
		}
	}
	if matchLine(errorRatioNameRE, name) || matchLine(errorRatioNameRE, s.Labels["__name__"]) {
		share := sh.peak
		if maxAll > 1 && maxAll <= 100 {
			share = sh.peak / 100 // a percentage
		}
		if maxAll <= 100 && share < minRatioShare {
			return false
		}
	}
	if len(base) < 5 {
		return true // no history to judge against
	}
	slices.Sort(base)
	if usual := base[len(base)*9/10]; usual > 0 {
		return sh.peak > 2*usual
	}
	return nonZeroIn >= 2
}
