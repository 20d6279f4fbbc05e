package analyst

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/rediscli"
)

// deliveredEntry is a slow-log entry a managed service delivered to a log
// stream (ElastiCache's slow log in CloudWatch Logs), with the node that
// logged it and how many lines of its template the stream held.
type deliveredEntry struct {
	rediscli.SlowEntry
	node        string
	lines       int
	first, last time.Time
}

// deliveredSlowlog reads the slow-log entries of the log streams kept
// line by line (slowlogStream).
func deliveredSlowlog(cmds []evidence.CommandOutput) []deliveredEntry {
	var out []deliveredEntry
	for _, c := range cmds {
		if !strings.HasPrefix(c.Command, streamCommand) {
			continue
		}
		for _, l := range c.Lines {
			e, node, ok := rediscli.ParseDeliveredEntry(l)
			if !ok || node == "" {
				continue
			}
			out = append(out, deliveredEntry{SlowEntry: e, node: strings.ToLower(node), lines: 1, first: e.At, last: e.At})
		}
	}
	return out
}

// streamCommand heads a log stream kept line by line: the command that
// reads it.
const streamCommand = "aws logs filter-log-events --log-group-name "

// slowlogStream keeps a log group's lines whole when they are a managed
// server's slow-log entries, as the output of the command that reads it.
func slowlogStream(group string, lines []evidence.LogLine) (evidence.CommandOutput, bool) {
	c := evidence.CommandOutput{Command: streamCommand + group, Run: streamCommand + group, ExitCode: -1}
	n := 0
	for _, l := range lines {
		if _, _, ok := rediscli.ParseDeliveredEntry(l.Text); ok {
			n++
			c.Lines = append(c.Lines, l.Text)
		}
	}
	return c, n > 0 && 2*n >= len(lines)
}

// redisWordsRE is a client's finding about its calls to a Redis-protocol
// server: the client library's words, the server's port.
var redisWordsRE = regexp.MustCompile(`(?i)\bredis\b|\bvalkey\b|\belasticache\b|:6379\b|:6380\b`)

// serverVictims are the workloads whose findings are about calls to a
// Redis-protocol server that began once its blocking command ran: their
// lines name the server's port or the client library, or the server's
// replication group ("cart-sessions-prod" of node
// "cart-sessions-prod-0001-001").
func serverVictims(found []Finding, inst, blocker string, from time.Time) []string {
	group := inst
	if m := nodeSuffixRE.FindStringIndex(inst); m != nil {
		group = inst[:m[0]]
	}
	var out []string
	for i := range found {
		f := &found[i]
		if f.Subject == "" || ipLike(f.Subject) || strings.EqualFold(f.Subject, blocker) || strings.HasPrefix(strings.ToLower(f.Subject), group) || infoOf(f.Kind).class == classChange {
			continue
		}
		if f.Time.Before(from.Add(-5 * time.Minute)) {
			continue
		}
		text := f.Summary + " " + f.fact("line") + " " + f.fact("dependency") + " " + f.fact("target") + " " + f.fact("metric") + " " + strings.Join(f.Evidence, " ")
		if matchLine(redisWordsRE, text) || len(group) > 3 && strings.Contains(strings.ToLower(text), group) {
			if !slices.Contains(out, f.Subject) {
				out = append(out, f.Subject)
			}
		}
	}
	return out
}

// nodeSuffixRE is the node part of an ElastiCache node id (-0001-001).
var nodeSuffixRE = regexp.MustCompile(`-\d{3,4}-\d{3}$`)
