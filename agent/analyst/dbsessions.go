package analyst

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A database server's sessions counted per client (postgres_exporter's
// pg_stat_activity_count, a processlist by user) read by the mechanisms
// that find one client's sessions jumping at the onset while the others'
// stay where they were.

var (
	// sessionsByClientRE names a database server's session counts per
	// user or application.
	sessionsByClientRE = regexp.MustCompile(`^(?:pg_stat_activity_count|pg_stat_activity_active_count|mysql_info_schema_processlist_threads|mysql_info_schema_processlist_by_user|mssql_connections_by_user)$`)
	// nameWordSplitRE splits client and service names into words.
	nameWordSplitRE = regexp.MustCompile(`[^a-z0-9]+`)
)

// sessionLabel is the first of keys a session count's labels set; "" when
// none is.
func sessionLabel(labels map[string]string, keys []string) string {
	for _, l := range keys {
		if v := labels[l]; v != "" {
			return v
		}
	}
	return ""
}

// sessionServer is the host of the database server a session count was
// read from, without its port.
func sessionServer(labels map[string]string) string {
	server := orWord(labels["server"], labels["instance"])
	if h, _, ok := strings.Cut(server, ":"); ok {
		server = h
	}
	return server
}

// sessionRise reads a client's session counts: base is the median of the
// baseline, peak the highest count in the window, at the first time in
// the window the count reached halfway from base to peak (zero when it
// did not rise). ok is false with fewer than three baseline points.
func sessionRise(w Window, pts []evidence.Point) (base, peak float64, at time.Time, ok bool) {
	var before []float64
	for _, p := range pts {
		switch {
		case p.T.Before(w.Start) && !p.T.Before(w.BaselineStart):
			before = append(before, p.V)
		case !p.T.Before(w.Start) && !p.T.After(w.End) && p.V > peak:
			peak = p.V
		}
	}
	if len(before) < 3 {
		return 0, 0, time.Time{}, false
	}
	sort.Float64s(before)
	base = before[len(before)/2]
	gain := peak - base
	for _, p := range pts {
		if !p.T.Before(w.Start) && gain > 0 && p.V >= base+0.5*gain {
			at = p.T
			break
		}
	}
	return base, peak, at, true
}

// distinctWords are a name's words of four letters or more that generic
// does not hold: the words that say whose a client or service is.
func distinctWords(s string, generic map[string]bool) []string {
	var out []string
	for _, t := range nameWordSplitRE.Split(strings.ToLower(s), -1) {
		if len(t) >= 4 && !generic[t] {
			out = append(out, t)
		}
	}
	return out
}

// sharesWord reports whether name has one of words among its distinct
// words.
func sharesWord(name string, words []string, generic map[string]bool) bool {
	for _, t := range distinctWords(name, generic) {
		if slices.Contains(words, t) {
			return true
		}
	}
	return false
}

// affectsRelated reports whether f concerns one of the systems a
// database client's finding names as affected (its "affects" fact: the
// server, the clients refused or waiting, the question's subjects).
func affectsRelated(h *Hypothesis, f *Finding) bool {
	for _, r := range strings.Split(h.fact("affects"), ", ") {
		if r != "" && (f.Subject == r || f.fact("caller") == r || f.relates(r)) {
			return true
		}
	}
	return false
}
