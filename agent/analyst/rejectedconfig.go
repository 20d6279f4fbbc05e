package analyst

import (
	"context"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A server that rejected a new configuration keeps running the one it had,
// and says so once, when the edit arrives: CoreDNS's "Corefile changed but
// reload failed", Prometheus's "Error reloading config" after "loading
// groups failed … parse error", nginx's "[emerg]", BIND's "reloading
// configuration failed". What that leaves unapplied (a repointed
// forwarder, an alerting rule) may only show days later, when the lines
// are long before the incident window the logs are mined over. The
// gatherer therefore asks each pod log it reads for these lines before
// the window (a bounded, pattern-filtered read); mechanisms that explain
// a configuration not in effect (reloadrejected.go, dnsreloadfailed.go)
// read them from Gathered.RejectedReloads.

// rejectedConfigPattern matches a server's log line of a configuration
// (reload) it rejected.
const rejectedConfigPattern = `(?i)Corefile changed but reload failed|Error reloading config|loading groups failed|error loading rules|reloading configuration failed|configuration file \S+ test failed|\[emerg\]|Failed to apply configuration`

var rejectedConfigRE = regexp.MustCompile(rejectedConfigPattern)

// maxRejectedLines bounds the lines read per pod.
const maxRejectedLines = 20

// earlierRejections reads, from a pod's log before the incident window,
// the lines in which it rejected a configuration.
func (g *gatherer) earlierRejections(ctx context.Context, sp specialist, p *corev1.Pod) []evidence.LogLine {
	w := g.sc.Window
	start := orTime(w.BaselineStart, w.Start)
	if start.IsZero() {
		return nil
	}
	out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name,
		"until": start.Add(-time.Second).Format(time.RFC3339), "pattern": rejectedConfigPattern, "limit": maxRejectedLines})
	if !ok {
		return nil
	}
	lr, _ := as[*evidence.LogResult](out)
	if lr == nil {
		return nil
	}
	var lines []evidence.LogLine
	for _, l := range lr.Lines {
		if !l.Time.IsZero() && l.Time.Before(start) && matchLine(rejectedConfigRE, l.Text) {
			if l.Source == "" {
				l.Source = p.Name
			}
			lines = append(lines, l)
		}
	}
	return lines
}
