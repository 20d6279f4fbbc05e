package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// KindEphemeralPorts: a host out of local ports for outgoing connections.
// Each new connection to an upstream takes a source port, and a closed
// one holds it in TIME_WAIT for a minute; a proxy that opens a connection
// per request (upstream keepalive dropped, HTTP/1.0 to the upstream)
// cycles through the ephemeral range until connect() fails with
// EADDRNOTAVAIL ("99: Cannot assign requested address") and requests
// wait or fail. The host making the connections is the cause; its
// upstreams are healthy.
const KindEphemeralPorts Kind = "ephemeral_ports"

var ephemeralPorts = &mechanism{
	kind:       KindEphemeralPorts,
	class:      classCause,
	label:      "ephemeral ports exhausted",
	lines:      regexp.MustCompile(`(?i)cannot assign requested address|EADDRNOTAVAIL|ephemeral ports? (are |were )?(exhausted|exhaustion)|no (free|available) (local|ephemeral) ports?|local port range (is )?exhausted`),
	lineWeight: 0.9,
	fitsChange: changeSays(keepAliveChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		return fmt.Sprintf("%s has run out of ephemeral ports for its outgoing connections: every request opens a new upstream connection whose closed socket holds its source port in TIME_WAIT, so connect() fails with EADDRNOTAVAIL (99: Cannot assign requested address) and requests stall: %s",
			h.Subject, quote(ReadableLine(h.fact("line")), 200))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Reuse upstream connections on %s (nginx: keepalive N in the upstream block with proxy_http_version 1.1 and proxy_set_header Connection \"\"), and restore it if a configuration change dropped it", h.Subject)
		r.med("Check TIME_WAIT sockets on %s (ss -s, node_sockstat_TCP_tw) against net.ipv4.ip_local_port_range; widen the range only as a stopgap", h.Subject)
		r.low("Alert on connect() failures with EADDRNOTAVAIL and on TIME_WAIT sockets near the ephemeral port range")
	},
}

// proxiedService names the service a proxy's log line was serving: the
// first segment of its request path that is not an API prefix or version
// ("GET /v1/quotes?zip=1" → "quotes"); "" when the line names no request.
func proxiedService(line string) string {
	m := findSubmatch(requestPathRE, line)
	if m == nil {
		return ""
	}
	for _, seg := range strings.Split(m[1], "/") {
		if seg == "" || seg == "api" || matchLine(apiVersionRE, seg) {
			continue
		}
		return seg
	}
	return ""
}

var apiVersionRE = regexp.MustCompile(`^v\d+([a-z]+\d*)?$`)

// logStreamSuffixes are the names a web server gives its two logs
// ("edge-nginx-access.log", "edge-nginx-error.log") and a runtime its GC
// log beside the application's ("pricing-engine-gc.log" of -Xlog:gc:file,
// "gc.log" rotated per service): each belongs to the server the rest of
// the name says.
var logStreamSuffixes = []string{"-access", "-error", "_access", "_error", "-gc", "_gc"}

// trimLogStream drops an access/error log's suffix from a source's name.
func trimLogStream(b string) string {
	for _, suf := range logStreamSuffixes {
		if t, ok := strings.CutSuffix(b, suf); ok && t != "" {
			return t
		}
	}
	return b
}
