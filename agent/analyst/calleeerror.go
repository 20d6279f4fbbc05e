package analyst

import (
	"math"
	"net"
	"regexp"
	"strings"
)

// A caller's error line that reports the answer of a service it called
// ("Request failed with status code 500" with the request's URL, "upstream
// returned 503 for http://inventory:8080/...") describes the callee's
// failure as the caller saw it: the callee answered, and answered with a
// server error. Such lines relate the caller's errors to the callee named
// by the URL, so that the callee's own faults and changes explain them,
// and a change to the caller does not (it did not make the callee fail).

// calleeStatusRE finds a server-error status reported of a response: an
// HTTP client's "status code 500", "returned 503", "responded with 502",
// "response status: 500", "HTTP 500" or a status field.
var calleeStatusRE = regexp.MustCompile(`(?i)(?:status(?:[ _-]?code)?|returned|responded(?: with)?|response(?: code| status)?|http(?:/\d(?:\.\d)?)?)["']?\s*(?:[:=]\s*)?["']?5\d\d\b`)

// calleeFailure names the service whose server error a caller's log line
// reports: the host of the URL the line names, when the line also reports
// a 5xx answer; "" otherwise (no URL, an address, or no server error).
func calleeFailure(line string) string {
	if !matchLine(calleeStatusRE, line) {
		return ""
	}
	host := ""
	if m := findSubmatch(urlRE, line); m != nil && strings.HasPrefix(strings.ToLower(m[0]), "http") {
		host = m[1]
	} else if m := findSubmatch(upstreamFieldRE, line); m != nil {
		host = m[1]
	}
	if host == "" || net.ParseIP(host) != nil || stopHosts[strings.ToLower(host)] {
		return ""
	}
	return ShortHost(host)
}

// upstreamFieldRE is a structured log's field naming the service a
// request went to (JSON or logfmt): upstream, peer.service, callee,
// dependency, target_service.
var upstreamFieldRE = regexp.MustCompile(`(?i)["']?\b(?:upstream(?:_service|_name)?|peer\.service|callee|dependency|target_service|remote_service)["']?\s*[:=]\s*["']?([a-z][\w.-]*[a-z0-9])`)

// calleeAnswered reports whether a finding holds only a caller's view of
// its callee (lines reporting the callee's server errors, the duration of
// its client calls to the callee) and nothing of its own: the callee's
// failure, which a change to the caller does not explain.
func calleeAnswered(f *Finding) bool {
	return f.fact("callee") != "" && f.fact("own") == "" && f.fact("callee") != f.Subject
}

// calleeLabels are the labels by which an OpenTelemetry or Prometheus
// client metric names the server its calls went to.
var calleeLabels = []string{"server_address", "server.address", "net_peer_name", "net.peer.name", "peer_service", "peer.service",
	"http_host", "upstream_service", "target_service", "remote_service", "rpc_service_target"}

// calleeOfLabels names the service a client series measures calls to (""
// for a server's own series): its server address, shortened to the
// service ("rate-card.pricing.svc.cluster.local" → "rate-card").
func calleeOfLabels(l map[string]string) string {
	for _, k := range calleeLabels {
		if v := l[k]; v != "" {
			if h := DependencyName(v); h != "" && net.ParseIP(h) == nil {
				return ShortHost(h)
			}
		}
	}
	return ""
}

// roleSuffixRE is the part of a service's name that says what it is, not
// what it does about ("tax-service", "inventory-api", "pricing-svc").
var roleSuffixRE = regexp.MustCompile(`(?i)[-_](?:service|svc|api|server|srv|app|backend|worker)$`)

// serviceStem is what a service's name says it deals with ("tax-service" →
// "tax", "inventory-reservation-api" → "inventory reservation"); "" when
// the name carries no role suffix or what is left is too short to mean
// anything.
func serviceStem(name string) string {
	if !matchLine(roleSuffixRE, name) {
		return ""
	}
	s := strings.ToLower(roleSuffixRE.ReplaceAllString(name, ""))
	s = strings.NewReplacer("-", " ", "_", " ").Replace(s)
	if len(s) < 3 {
		return ""
	}
	return s
}

// relateNamedServices relates a caller's new errors to the known services
// their text names by what those services deal with ("validate tax quote:
// quote has 0 lines" names tax-service; "inventory reservation failed"
// inventory-reservation-api): a caller rejecting what a callee answered
// says so in the callee's terms even with no URL or status in the line.
func relateNamedServices(fs []*Finding, sc Scope) {
	type stem struct {
		name string
		re   *regexp.Regexp
	}
	var stems []stem
	for k := range sc.Known {
		if s := serviceStem(k); s != "" {
			stems = append(stems, stem{k, regexp.MustCompile(`(?i)(?:^|[^\w-])` + regexp.QuoteMeta(s) + `(?:$|[^\w-])`)})
		}
	}
	if len(stems) == 0 {
		return
	}
	for _, f := range fs {
		if f.Kind != KindLogErrors || f.fact("line") == "" {
			continue
		}
		text := ReadableLine(f.fact("line"))
		own := serviceStem(f.Subject)
		for _, s := range stems {
			if strings.EqualFold(s.name, f.Subject) || serviceStem(s.name) == own || f.relates(s.name) || !matchLine(s.re, text) {
				continue
			}
			f.Related = append(f.Related, s.name)
			if f.fact("answer") == "" && matchLine(badAnswerRE, text) && !matchLine(ownBugRE, text) {
				f.setFact("answer", s.name)
			}
		}
	}
}

// badAnswerRE finds a caller's words for an answer it could not use: an
// empty, invalid or truncated payload, or one that "has 0 lines" / "came
// back with no items"; ownBugRE finds a caller's own bug ("invalid memory
// address or nil pointer dereference"), which is not one.
var (
	badAnswerRE = regexp.MustCompile(`(?i)\b(?:empty|blank|malformed|invalid|incomplete|truncated|unparsable|unparseable)\b|\b(?:has|have|had|with|contains?|returned|got|came back with)\s+(?:0|zero|no)\s+[a-z]`)
	ownBugRE    = regexp.MustCompile(`(?i)nil pointer|null ?pointer|invalid memory address|index out of (?:range|bounds)|segmentation|\bpanic\b|stack overflow|undefined is not`)
)

// calleeAnswersBadly turns a caller's errors that describe what a named
// callee answered (relateNamedServices recorded the callee as "answer")
// into the callee's failure when the callee itself behaved anew at or
// before their onset: it logged a template new in the window, localization
// found its own signals moved first, or it was changed (a flag, a config,
// a deploy) shortly before. The caller rejecting a bad answer is then a
// consequence, and a change to the caller did not cause it. It returns
// the callers and callees so related ("order-service" → "tax-service").
func calleeAnswersBadly(fs []*Finding) map[string]string {
	out := map[string]string{}
	for _, f := range fs {
		x := f.fact("answer")
		if f.Kind != KindLogErrors || x == "" || f.Time.IsZero() {
			continue
		}
		for _, g := range fs {
			if g == f || g.Subject != x || g.Time.IsZero() || g.Time.After(f.Time) {
				continue
			}
			changed := infoOf(g.Kind).class == classChange && f.Time.Sub(g.Time) <= triggerNear
			anew := g.Kind == KindLocalized || g.Source == SrcLogs && infoOf(g.Kind).class != classChange
			if !changed && !anew {
				continue
			}
			f.setFact("callee", x)
			delete(f.Facts, "own")
			out[f.Subject] = x
			break
		}
	}
	return out
}

// demoteAnsweredCallers keeps a change to a caller from standing above
// the callee whose bad answers the caller's errors report: the callee's
// cause (its new behaviour, the change that brought it) is the root, and
// the caller's change scores below it.
func demoteAnsweredCallers(hs []*Hypothesis, answered map[string]string) {
	for _, c := range hs {
		x := answered[c.Subject]
		if c.class() != classChange || x == "" {
			continue
		}
		for _, k := range hs {
			if k == c || k.Subject != x || k.class() == classSymptom || k.Score < 0.45 {
				continue
			}
			c.Score = math.Min(c.Score, k.Score*0.8)
		}
	}
}
