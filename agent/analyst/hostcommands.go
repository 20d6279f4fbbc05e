package analyst

import (
	"context"
	"regexp"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Runbooks, maintenance scripts and CI jobs often log the kubectl commands
// they run against the cluster ("$ kubectl patch cronjob ... suspend",
// "kubectl cordon ip-10-0-1-7", "kubectl label ns ..."). Such a command is a
// change like any other, but it may be days older than the incident
// window: a CronJob suspended before a maintenance and never resumed, a
// node cordoned for an investigation and forgotten. The gatherer reads
// these lines from each host log over the month before the window, as it
// reads earlier changes (Gathered.HostCommands).

// hostCommandPattern is the search for a command that changes cluster
// objects, as a host log records it.
const hostCommandPattern = `(?i)\bkubectl\b.*\b(?:patch|edit|apply|label|annotate|cordon|uncordon|drain|taint|scale|suspend|resume|set|delete|replace)\b`

var hostCommandRE = regexp.MustCompile(hostCommandPattern)

// maxHostCommands bounds the command lines kept per host log.
const maxHostCommands = 200

// earlierHostCommands searches one host log for the cluster-changing
// commands it records, from the month before the window to its end.
func (g *gatherer) earlierHostCommands(ctx context.Context, sp specialist, source string) []evidence.LogLine {
	w := g.sc.Window
	start := orTime(w.BaselineStart, w.Start)
	if start.IsZero() || w.End.IsZero() || !sp.run.Has("search_logs") {
		return nil
	}
	out, ok := g.call(ctx, sp, "search_logs", map[string]any{"source": source, "pattern": hostCommandPattern,
		"since": start.Add(-earlierChanges).Format(time.RFC3339), "until": w.End.Format(time.RFC3339), "limit": maxHostCommands})
	if !ok {
		return nil
	}
	lr, _ := as[*evidence.LogResult](out)
	if lr == nil {
		return nil
	}
	var lines []evidence.LogLine
	for _, l := range lr.Lines {
		if l.Time.IsZero() || !matchLine(hostCommandRE, l.Text) {
			continue
		}
		if l.Source == "" {
			l.Source = source
		}
		lines = append(lines, l)
	}
	return lines
}
