package analyst

import "time"

// What mechanisms share when they read a gauge against its maximum (a
// pool's connections in use, a server's busy threads).

// timedValue is one sample of a gauge.
type timedValue struct {
	t time.Time
	v float64
}

// covers reports whether t falls from the baseline's start to the
// window's end (an open end takes any later t).
func (w Window) covers(t time.Time) bool {
	return !t.Before(w.BaselineStart) && (w.End.IsZero() || !t.After(w.End))
}

// reachedMax reads a gauge's samples against its maximum m: the first
// one at or after start that reached m (zero when none did), and the
// values before start, its baseline.
func reachedMax(samples []timedValue, start time.Time, m float64) (full time.Time, base []float64) {
	for _, p := range samples {
		if p.t.Before(start) {
			base = append(base, p.v)
		} else if p.v >= m && (full.IsZero() || p.t.Before(full)) {
			full = p.t
		}
	}
	return full, base
}
