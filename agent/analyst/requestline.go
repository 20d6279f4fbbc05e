package analyst

import (
	"regexp"
	"strconv"
	"strings"
)

// A request line is one request an access log records: a proxy's (Envoy's
// default format and Istio's, nginx's combined format and ingress-nginx's)
// or a service's own request log (logfmt or flattened JSON: method=,
// path=, status=, duration_ms=). Its fields let a log search group what it
// matched by route, upstream or client, and read the time a request took.

// requestLine is the fields of one request.
type requestLine struct {
	Method string
	Path   string // as logged, with its query
	Route  string // the path without its query, identifiers masked
	Status int    // 0 when not logged
	// Flags are Envoy's response flags ("UT", "UF,URX"), "" for none.
	Flags    string
	Duration float64 // seconds, -1 when not logged
	// Upstream is the cluster, service or host the request was sent to.
	Upstream string
	Host     string // the authority asked for
	Client   string // the downstream address
	// Agent is the client's User-Agent; ClientID the client's own name
	// when the log records one (client_id=, consumer=, api_key=).
	Agent, ClientID string
}

var (
	quotedReqRE   = regexp.MustCompile(`"([A-Z]{3,7}) (\S+) (?:HTTP/[\d.]+|HTTP/\d)"`)
	plainReqRE    = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (/\S*) (?:HTTP/[\d.]+ )?([1-5]\d\d)\b(?:\s+(\d+(?:\.\d+)?)\s*(ms|s)\b)?`)
	quotedFieldRE = regexp.MustCompile(`"([^"]*)"`)
	envoyFlagsRE  = regexp.MustCompile(`^(?:-|[A-Z]{2,4}(?:,[A-Z]{2,4})*)$`)
	kvFieldRE     = regexp.MustCompile(`(?:^|[\s{,])"?([A-Za-z_][\w.@-]*)"?\s*[=:]\s*"?([^"\s,}]*)"?`)
	istioUpRE     = regexp.MustCompile(`\b(?:outbound|inbound)\|\d*\|[^|\s]*\|([\w.-]+)`)
	bracketUpRE   = regexp.MustCompile(`\[([a-z0-9][\w.-]*-\d{2,5})\]`)
	// A User-Agent: a product token with its version ("okhttp/4.12.0",
	// "Mozilla/5.0 (…)"), not a URL, an address or an identifier.
	userAgentRE  = regexp.MustCompile(`^[A-Za-z][\w.+-]*/\S`)
	ipLikeRE     = regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3}){3}$`)
	clientAddrRE = regexp.MustCompile(`^(?:\S+\s+)?(\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f:]{3,39})\s+\S+\s+\S+\s+\[`)
)

// parseRequestLine reads the request a log line records, if it records
// one.
func parseRequestLine(line string) (requestLine, bool) {
	r := requestLine{Duration: -1}
	text := MiningText(line)
	if m := quotedReqRE.FindStringSubmatchIndex(text); m != nil {
		r.Method, r.Path = text[m[2]:m[3]], text[m[4]:m[5]]
		rest := text[m[1]:]
		head := rest
		if i := strings.IndexByte(head, '"'); i >= 0 {
			head = head[:i]
		}
		fs := strings.Fields(head)
		if len(fs) > 0 {
			r.Status = statusCode(fs[0])
		}
		quoted := findAllSubmatch(quotedFieldRE, rest, -1)
		switch {
		case len(fs) >= 5 && matchLine(envoyFlagsRE, fs[1]) && isCount(fs[2]) && isCount(fs[3]) && isCount(fs[4]):
			// Envoy: status flags bytes_in bytes_out duration_ms
			// upstream_ms "xff" "agent" "id" "authority" "upstream".
			if fs[1] != "-" {
				r.Flags = fs[1]
			}
			r.Duration = msField(fs[4])
			if len(quoted) >= 4 {
				r.Host = quoted[3][1]
			}
			if len(quoted) >= 5 {
				r.Upstream = upstreamName(quoted[4][1])
			}
		case len(fs) >= 2 && matchLine(envoyFlagsRE, fs[1]) && fs[1] != "-":
			// Istio: status flags details ... then the counts.
			r.Flags = fs[1]
		}
		if m := findSubmatch(istioUpRE, rest); m != nil {
			r.Upstream = ShortHost(m[1])
		}
		// ingress-nginx: ... "agent" length time [ns-svc-port] [alt] addr ...
		if m := findSubmatch(bracketUpRE, rest); m != nil && r.Upstream == "" {
			r.Upstream = m[1]
			if len(quoted) >= 2 {
				after := rest[strings.LastIndex(rest, `"`)+1:]
				if f := strings.Fields(after); len(f) >= 2 && r.Duration < 0 {
					if v, err := strconv.ParseFloat(f[1], 64); err == nil {
						r.Duration = v
					}
				}
			}
		}
		if m := findSubmatch(clientAddrRE, text); m != nil {
			r.Client = m[1]
		}
		// The User-Agent: the first quoted field after the request that
		// reads as one (nginx's and Apache's combined format put the
		// referer before it, Envoy's and Istio's the forwarded-for
		// address, an ALB nothing).
		for _, q := range quoted {
			if matchLine(userAgentRE, q[1]) {
				r.Agent = q[1]
				break
			}
		}
		// Envoy's and Istio's forwarded-for address, when no address
		// leads the line.
		if r.Client == "" && len(quoted) > 0 {
			if a, _, _ := strings.Cut(quoted[0][1], ","); matchLine(ipLikeRE, a) {
				r.Client = a
			}
		}
	} else if m := findSubmatch(plainReqRE, text); m != nil {
		r.Method, r.Path, r.Status = m[1], m[2], statusCode(m[3])
		if m[4] != "" {
			v, _ := strconv.ParseFloat(m[4], 64)
			if m[5] == "ms" {
				v /= 1000
			}
			r.Duration = v
		}
	}
	// key=value fields (logfmt, flattened JSON) fill in the rest.
	for _, m := range findAllSubmatch(kvFieldRE, text, -1) {
		k, v := strings.ToLower(m[1]), m[2]
		if v == "" || v == "-" {
			continue
		}
		switch k {
		case "method", "http_method", "http.method", "verb", "request_method":
			if r.Method == "" {
				r.Method = strings.ToUpper(v)
			}
		case "path", "uri", "url", "request_uri", "http.path", "http.target", "url.path", "route", "endpoint", "http.route":
			if r.Path == "" && strings.HasPrefix(v, "/") {
				r.Path = v
			}
		case "status", "status_code", "code", "response_code", "http_status", "http.status_code", "statuscode", "resp_status":
			if r.Status == 0 {
				r.Status = statusCode(v)
			}
		case "upstream", "upstream_cluster", "cluster", "backend", "upstream_host", "upstream_name", "proxy_upstream_name", "upstream_service":
			if r.Upstream == "" {
				r.Upstream = upstreamName(v)
			}
		case "user_agent", "http_user_agent", "useragent", "user-agent", "http.user_agent", "user_agent.original", "ua":
			if r.Agent == "" {
				r.Agent = v
			}
		case "client_id", "clientid", "consumer", "consumer_id", "api_client", "api_key_name", "app_id", "partner", "partner_id":
			if r.ClientID == "" {
				r.ClientID = v
			}
		case "client_ip", "remote_addr", "remote_ip", "client.address", "source.address", "downstream_remote_address", "x_forwarded_for", "clientip":
			if r.Client == "" {
				r.Client, _, _ = strings.Cut(v, ":")
			}
		case "host", "authority", "http.host", "server_name":
			if r.Host == "" {
				r.Host = v
			}
		case "rt", "request_time", "duration", "elapsed", "latency", "response_time", "took":
			if r.Duration < 0 {
				r.Duration = durationValue(v, "s")
			}
		case "duration_ms", "total_ms", "elapsed_ms", "latency_ms", "response_time_ms", "took_ms", "time_ms":
			if r.Duration < 0 {
				r.Duration = durationValue(v, "ms")
			}
		}
	}
	if r.Path == "" || r.Status == 0 && r.Method == "" {
		return requestLine{}, false
	}
	r.Route = routeOf(r.Path)
	return r, true
}

func statusCode(s string) int {
	if len(s) != 3 || s[0] < '1' || s[0] > '5' {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func isCount(s string) bool {
	if s == "-" {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func msField(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return v / 1000
}

var durUnitRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)(ms|s|us|µs|m)?$`)

// durationValue reads a duration field in seconds; a bare number is in
// unit.
func durationValue(v, unit string) float64 {
	m := findSubmatch(durUnitRE, v)
	if m == nil {
		return -1
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	u := m[2]
	if u == "" {
		u = unit
	}
	switch u {
	case "ms":
		x /= 1000
	case "us", "µs":
		x /= 1e6
	case "m":
		x *= 60
	}
	return x
}

// upstreamName names an upstream from what a proxy logs for it: a cluster
// name as it is, a cluster DNS name shortened to its service, an address
// kept as it is ("-" and empty are none).
func upstreamName(v string) string {
	v = strings.TrimPrefix(strings.TrimPrefix(v, "tcp://"), "http://")
	if v == "" || v == "-" {
		return ""
	}
	if h, p, ok := strings.Cut(v, ":"); ok && isCount(p) && !strings.Contains(p, ".") {
		if ShortHost(h) != h {
			return ShortHost(h)
		}
		return v
	}
	return ShortHost(v)
}

var idSegmentRE = regexp.MustCompile(`^(?:\d+|[0-9a-f]{8,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[\w.-]*\d[\w.-]*)$`)

// routeOf is a path without its query, with segments that identify one
// object (numbers, UUIDs, hex, codes carrying digits such as SHP-1702635)
// masked as {id}: requests to one route share it. Short versions (v1, v2)
// stay.
func routeOf(path string) string {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s == "" || len(s) <= 3 && !allDigits(s) {
			continue
		}
		if matchLine(idSegmentRE, strings.ToLower(s)) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// envoyFlagMeaning says what an Envoy response flag means.
var envoyFlagMeaning = map[string]string{
	"UT":    "upstream request timeout",
	"UF":    "upstream connection failure",
	"UH":    "no healthy upstream",
	"URX":   "upstream retry limit exceeded",
	"UC":    "upstream connection terminated",
	"UR":    "upstream remote reset",
	"UO":    "upstream overflow (circuit breaker open)",
	"NR":    "no route configured",
	"NC":    "no upstream cluster",
	"DC":    "downstream connection terminated",
	"LH":    "local health check failed",
	"RL":    "rate limited locally",
	"UAEX":  "denied by the external authorization service",
	"DI":    "delay injected",
	"FI":    "fault injected",
	"SI":    "stream idle timeout",
	"DT":    "request exceeded its max duration",
	"UPE":   "upstream protocol error",
	"UMSDR": "upstream max stream duration reached",
}

// flagsMeaning explains a response flags field ("UT" → "UT: upstream
// request timeout").
func flagsMeaning(flags string) string {
	var out []string
	for _, f := range strings.Split(flags, ",") {
		if m := envoyFlagMeaning[f]; m != "" {
			out = append(out, f+": "+m)
		}
	}
	return strings.Join(out, ", ")
}
