package kubetext

import (
	"regexp"
	"strings"
)

// Output piped through grep (`kubectl get pods -A | grep -v Running`)
// loses the table's header but keeps its alignment, and --no-headers
// leaves it out. For the tables whose
// columns are fixed — pods, events and services — the header is put back: the
// columns kubectl prints for that command (-A adds NAMESPACE, -o wide the
// pod's IP and node), at the positions the first row's cells start. When a
// row does not fit those columns, none is read.

var readyRe = regexp.MustCompile(`^\d+/\d+$`)

// serviceTypes are the TYPE column's values of a get services row;
// ipLikeRe a CLUSTER-IP cell (IPv4 or IPv6, dual-stack lists).
var (
	serviceTypes = map[string]bool{"ClusterIP": true, "NodePort": true, "LoadBalancer": true, "ExternalName": true}
	ipLikeRe     = regexp.MustCompile(`^[0-9a-fA-F:.,]+$`)
)

// headerless reads the rows of a piped or --no-headers get pods or get
// events output (the first at line first) as a table with the columns
// kubectl printed for it, or returns nil when they do not fit, or there
// are more than maxRows.
func headerless(c *command, kind string, rows []string, first, maxRows int) *table {
	if !c.piped && !flagOn(c, "--no-headers") || len(rows) == 0 {
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
		if flagOn(c, "--show-labels") {
			cols = append(cols, "LABELS")
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
	case "Service":
		cols = []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}
		if c.wide {
			cols = append(cols, "SELECTOR")
		}
		if c.all {
			cols = append([]string{"NAMESPACE"}, cols...)
		}
		typ := 1
		if c.all {
			typ = 2
		}
		fits = func(f []string) bool {
			return len(f) == len(cols) && serviceTypes[f[typ]] && (f[typ+1] == "None" || f[typ+1] == "<none>" || ipLikeRe.MatchString(f[typ+1]))
		}
	default:
		return nil
	}
	row0 := rows[0]
	if !fits(splitRuns(row0)) {
		return nil
	}
	// the header's columns start where the first row's cells start
	r := []rune(row0)
	var starts []int
	for i := 0; i < len(r) && len(starts) < len(cols); i++ {
		if r[i] != ' ' && (i == 0 || i >= 2 && r[i-1] == ' ' && r[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	if len(starts) != len(cols) {
		return nil
	}
	if c.piped && kind == "Pod" {
		// A pipe kept kubectl's layout, header included: every column is
		// at least as wide as its name and two spaces. (An events row is
		// recognised by its own cells, a type kubectl prints and a
		// kind/name object, so an events table copied with its columns
		// narrowed, as into a ticket, is read all the same.)
		w := 0
		for i, s := range starts {
			if w > s {
				return nil // a column name wider than the column: not kubectl's layout
			}
			w = s + len([]rune(cols[i])) + 2
		}
	}
	t := &table{cols: cols, starts: starts}
	for i, l := range rows {
		if strings.TrimSpace(l) == "" {
			break
		}
		if !fits(splitRuns(l)) {
			return nil // all rows or none: a guess about some is no reading
		}
		if len(t.rows) >= maxRows {
			t.cut = true
			break
		}
		t.rows = append(t.rows, cells(l, starts))
		t.raw = append(t.raw, l)
		t.lines = append(t.lines, first+i)
	}
	return t
}
