package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// Connections reset by the peer (ECONNRESET, broken pipe): the service
// called restarts, or an idle timeout or load balancer closes them, or a
// proxy in front of it refuses what the caller sends. Each runtime words
// it its own way: Go and C "connection reset by peer", the JVM
// "java.net.SocketException: Connection reset", Python
// ConnectionResetError, Node ECONNRESET or "socket hang up", .NET "An
// existing connection was forcibly closed by the remote host", curl
// "(56) Recv failure: Connection reset by peer".
var connReset = &mechanism{
	kind:       KindConnReset,
	class:      classDependency,
	label:      "connection resets",
	lines:      regexp.MustCompile(`(?i)connection reset by peer|ECONNRESET|broken pipe|unexpected EOF|SocketException: Connection reset\b|ConnectionResetError|\bsocket hang up\b|forcibly closed by the remote host|\bConnection reset\b[;:,)]`),
	lineWeight: 0.55,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return networkChangeFits(c) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("connections from %s to %s are reset (connection reset by peer): %s", orWord(h.fact("caller"), "the service"), orWord(h.fact("target"), s), quote(ReadableLine(h.fact("line")), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Check %s for restarts, idle-timeout mismatches or load-balancer resets", s))
		r.add(finding.PriorityLow, "Retry idempotent calls on connection resets")
	},
}
