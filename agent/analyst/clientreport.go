package analyst

import (
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// What users' browsers and apps reported, as the bundle reader hands it
// over (agent/evidence/bundle/clientreports.go): HAR exports, Sentry and
// Crashlytics reports and pasted pages, each a command output whose
// command begins "client report:". The helpers here are shared by the
// mechanisms that read them (clientresponseshape.go, cookieheadersize.go,
// samesitecookie.go, browserextension.go).

// clientReportPrefix begins the command of a client report.
const clientReportPrefix = "client report:"

// clientReports lists the client reports among the handed-over outputs.
func clientReports(ev *Gathered) []evidence.CommandOutput {
	var out []evidence.CommandOutput
	for _, c := range ev.Commands {
		if strings.HasPrefix(c.Command, clientReportPrefix) {
			out = append(out, c)
		}
	}
	return out
}

// clientReportName is the file a client report was read from.
func clientReportName(c evidence.CommandOutput) string {
	s := strings.TrimSpace(strings.TrimPrefix(c.Command, clientReportPrefix))
	if i := strings.LastIndex(s, " ("); i > 0 {
		s = s[:i]
	}
	return s
}

var (
	// clientFirstSeenRE is an error tracker's "First seen:" (Sentry,
	// Crashlytics, Bugsnag), up to the end of its date.
	clientFirstSeenRE = regexp.MustCompile(`(?i)first seen:?\s+(.+?(?:UTC|GMT|Z|[+-]\d\d:?\d\d))\b`)
	// clientProjectRE is the project an error tracker's page is of:
	// "Sentry > org > project > ...", "Crashlytics > app (Android, ...)".
	clientProjectRE = regexp.MustCompile(`(?i)^\s*(?:sentry|bugsnag|rollbar)\s*>\s*[^>]+?>\s*([a-z0-9][a-z0-9._-]*)|crashlytics\s*>\s*([a-z0-9][a-z0-9._-]*)\s*\(`)
)

// clientTimeLayouts are the forms of dates error trackers print.
var clientTimeLayouts = []string{
	time.RFC3339,
	"Jan 2, 2006, 15:04:05 MST",
	"Jan 2, 2006 15:04:05 MST",
	"Jan 2, 2006 3:04:05 PM MST",
	"Jan 2, 2006, 3:04:05 PM MST",
	"2006-01-02 15:04:05 MST",
}

// clientTime reads a date as error trackers print it.
func clientTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range clientTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// clientFirstSeen is the earliest "First seen" of lines.
func clientFirstSeen(lines []string) time.Time {
	var first time.Time
	for _, l := range lines {
		if m := findSubmatch(clientFirstSeenRE, l); m != nil {
			if t, ok := clientTime(m[1]); ok && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
	}
	return first
}

// clientProject is the client an error report is of: its tracker's
// project, else its release tag's name (clientReleaseVerRE).
func clientProject(lines []string) string {
	for _, l := range lines {
		if m := findSubmatch(clientProjectRE, l); m != nil {
			return strings.ToLower(firstGroup(m))
		}
	}
	for _, l := range lines {
		if m := findSubmatch(clientReleaseVerRE, l); m != nil {
			return strings.ToLower(m[1])
		}
	}
	return ""
}
