package kubetext

import (
	"regexp"
	"strings"
)

// Output piped through grep (`kubectl get pods -A | grep -v Running`)
// loses the table's header but keeps its alignment. For the tables whose
// columns are fixed — pods and events — the header is put back: the
// columns kubectl prints for that command (-A adds NAMESPACE, -o wide the
// pod's IP and node), at the positions the first row's cells start. When a
// row does not fit those columns, none is read.

var readyRe = regexp.MustCompile(`^\d+/\d+$`)

// headerless returns the rows of a piped get pods or get events output
// with the header kubectl printed for it, or nil when they do not fit.
func headerless(c *command, kind string, rows []string) []string {
	if !c.piped || len(rows) == 0 {
		return nil
	}
	var cols []string
	var fits func(f []string) bool
	switch kind {
	case "Pod":
		cols = []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
		if c.wide {
			cols = append(cols, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
		}
		if c.all {
			cols = append([]string{"NAMESPACE"}, cols...)
		}
		ready := 1
		if c.all {
			ready = 2
		}
		fits = func(f []string) bool { return len(f) == len(cols) && readyRe.MatchString(f[ready]) }
	case "Event":
		cols = []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
		if c.all {
			cols = append([]string{"NAMESPACE"}, cols...)
		}
		typ := len(cols) - 4
		fits = func(f []string) bool {
			return len(f) >= len(cols) && (f[typ] == "Normal" || f[typ] == "Warning") && strings.Contains(f[typ+2], "/")
		}
	default:
		return nil
	}
	first := rows[0]
	if !fits(splitRuns(first)) {
		return nil
	}
	// the header's columns start where the first row's cells start
	r := []rune(first)
	var starts []int
	for i := 0; i < len(r) && len(starts) < len(cols); i++ {
		if r[i] != ' ' && (i == 0 || i >= 2 && r[i-1] == ' ' && r[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	if len(starts) != len(cols) {
		return nil
	}
	var h []rune
	for i, s := range starts {
		for len(h) < s {
			h = append(h, ' ')
		}
		if len(h) > s {
			return nil // a column name wider than the column: not kubectl's layout
		}
		h = append(h, []rune(cols[i])...)
		if i+1 < len(starts) && len(h)+2 > starts[i+1] {
			return nil
		}
	}
	out := []string{string(h)}
	for _, l := range rows {
		if strings.TrimSpace(l) == "" {
			break
		}
		if !fits(splitRuns(l)) {
			return nil // all rows or none: a guess about some is no reading
		}
		out = append(out, l)
	}
	return out
}
