package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// KindCORSRejected: a browser's CORS preflight that the API's answer does
// not allow. Before a cross-origin call with custom headers (or a method
// other than GET/POST, or credentials), the browser sends OPTIONS with
// Origin, Access-Control-Request-Method and Access-Control-Request-Headers;
// when the answer's Access-Control-Allow-Headers lacks a header it asked
// for (or Allow-Origin is not its origin, or Allow-Methods lacks its
// method), the browser blocks the call and never sends it. The API is up
// and serves every non-browser client (curl, mobile apps); the console
// says "CORS". The cause is the CORS configuration of whatever answers
// the preflight (an ingress controller's annotations, a gateway's
// policy), typically reset by a chart or configuration migration.
const KindCORSRejected Kind = "cors_rejected"

var corsRejected = &mechanism{
	kind:   KindCORSRejected,
	class:  classCause,
	label:  "CORS preflight not allowed: browsers block the calls",
	detect: detectCORSRejected,
	// The change that set the CORS policy: one that names CORS, or
	// moves the ingress or its chart and values.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(corsChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("browsers block the calls to %s: their CORS preflight (OPTIONS from origin %s) asks %s, and the answer does not allow it", h.Subject, orWord(h.fact("origin"), "the web app"), h.fact("asked"))
		d += h.clause(": ", "refused")
		d += h.quoteClause("; the preflight's answer: ", "answer_line", 220)
		d += ". The browser then never sends the call; the API itself is up and serves clients that do not preflight (curl, mobile apps)"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch h.fact("what") {
		case "headers":
			r.high("Allow the headers the web app sends in the CORS configuration that answers the preflight for %s (Access-Control-Allow-Headers must list %s; ingress-nginx: the cors-allow-headers annotation, which defaults to a fixed list), or roll back the change that reset it", h.Subject, h.fact("missing"))
		case "origin":
			r.high("Allow the origin %s in the CORS configuration that answers the preflight for %s, or roll back the change that reset it", h.fact("origin"), h.Subject)
		default:
			r.high("Allow the method the web app uses (%s) in the CORS configuration that answers the preflight for %s, or roll back the change that reset it", h.fact("missing"), h.Subject)
		}
		r.med("Check the preflight after every change of the ingress chart or its values: curl -X OPTIONS with the web app's Origin and Access-Control-Request-Headers")
		r.low("Alert on the web app's failed API calls (browser error reporting), which the API's own metrics never see")
	},
}

var (
	corsChangeRE = regexp.MustCompile(`(?i)cors|allow[-_]?(?:headers|origin|methods)|ingress|chart|helm|values|annotation|gateway polic`)
	// A curl header argument: -H 'Name: value' or --header "Name: value".
	curlHeaderRE = regexp.MustCompile(`(?i)(?:-H|--header)\s*(?:'([^']*)'|"([^"]*)"|(\S+))`)
	// A response header line of curl -i / -v output.
	respHeaderRE = regexp.MustCompile(`^[<\s]*([A-Za-z][\w-]*):\s*(.*?)\s*$`)
	// curl's OPTIONS method, and a URL.
	curlOptionsRE = regexp.MustCompile(`(?i)(?:-X\s*|--request[\s=]+)'?OPTIONS\b`)
	corsURLRE     = regexp.MustCompile(`https?://[^\s'"]+`)
)

// detectCORSRejected reads the preflights someone sent by hand (curl -X
// OPTIONS with Origin and Access-Control-Request-* headers) and compares
// what they asked with what the answer allowed.
func detectCORSRejected(ev *Gathered, _ []Finding) []Finding {
	for _, c := range ev.Commands {
		req := curlPreflight(c.Command)
		if req == nil {
			continue
		}
		resp := map[string]string{}
		var allowLine string
		for _, l := range c.Lines {
			m := findSubmatch(respHeaderRE, l)
			if m == nil {
				continue
			}
			k := strings.ToLower(m[1])
			if strings.HasPrefix(k, "access-control-") {
				resp[k] = m[2]
			}
			if k == "access-control-allow-headers" {
				allowLine = strings.TrimSpace(strings.TrimLeft(l, "< "))
			}
		}
		f := Finding{Kind: KindCORSRejected, Subject: orWord(ev.Scope.Service, req["host"]), Namespace: ev.Scope.Namespace, Object: "CORS preflight " + req["url"],
			Time: untimedOnset(ev, corsChangeRE), Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes}
		f.setFact("origin", req["origin"])
		origin := resp["access-control-allow-origin"]
		switch {
		case origin == "" && len(resp) == 0:
			// No CORS answer at all: the preflight may have been
			// refused for another reason (a 404, an auth proxy);
			// nothing is known of the policy.
			continue
		case req["origin"] != "" && origin != "*" && !strings.EqualFold(origin, req["origin"]):
			f.setFact("what", "origin")
			f.setFact("asked", "to be allowed for its origin")
			f.setFact("refused", fmt.Sprintf("Access-Control-Allow-Origin is %q", orWord(origin, "absent")))
			f.setFact("answer_line", "access-control-allow-origin: "+orWord(origin, "(none)"))
		default:
			var missing []string
			allowed := headerSet(resp["access-control-allow-headers"])
			if req["headers"] != "" && !allowed["*"] {
				for _, h := range strings.Split(req["headers"], ",") {
					h = strings.ToLower(strings.TrimSpace(h))
					if h != "" && !allowed[h] && !slices.Contains(missing, h) {
						missing = append(missing, h)
					}
				}
			}
			if len(missing) > 0 {
				f.setFact("what", "headers")
				f.setFact("missing", strings.Join(missing, ", "))
				f.setFact("asked", "to send the headers "+req["headers"])
				f.setFact("refused", fmt.Sprintf("Access-Control-Allow-Headers does not list %s", strings.Join(missing, ", ")))
				f.setFact("answer_line", allowLine)
				break
			}
			methods := headerSet(resp["access-control-allow-methods"])
			if m := strings.ToLower(req["method"]); m != "" && len(methods) > 0 && !methods[m] && !methods["*"] {
				f.setFact("what", "method")
				f.setFact("missing", strings.ToUpper(m))
				f.setFact("asked", "to use the method "+strings.ToUpper(m))
				f.setFact("refused", "Access-Control-Allow-Methods does not list "+strings.ToUpper(m))
				f.setFact("answer_line", "access-control-allow-methods: "+resp["access-control-allow-methods"])
				break
			}
			continue
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("preflight %s: %s", truncate(c.Command, 220), f.fact("refused")))
		if l := f.fact("answer_line"); l != "" {
			f.Evidence = append(f.Evidence, "the answer: "+quote(l, 220))
		}
		f.Summary = fmt.Sprintf("CORS preflight to %s not allowed: %s", f.Subject, f.fact("refused"))
		return []Finding{f}
	}
	return nil
}

// untimedOnset is when a failure that a check run by hand shows (with no
// time of its own) began: just after the last change in the window whose
// text fits re (the setting is as that change left it), else the moment
// the question states, else the window's start.
func untimedOnset(ev *Gathered, re *regexp.Regexp) time.Time {
	var at time.Time
	for _, c := range ev.Changes {
		if c.Timestamp.Before(ev.Window.Start) || c.Timestamp.After(ev.Window.End) {
			continue
		}
		if matchLine(re, strings.ToLower(c.Description)) && c.Timestamp.After(at) {
			at = c.Timestamp
		}
	}
	if !at.IsZero() {
		return at.Add(time.Minute)
	}
	if t, ok := statedOnset(ev.Scope.Message, ev.Window.End); ok && !t.Before(ev.Window.Start) {
		return t
	}
	return ev.Window.Start
}

// curlPreflight reads a curl command sending a CORS preflight: OPTIONS
// with an Origin and Access-Control-Request-Method header. It returns the
// origin, the method and headers asked for, the URL and its host; nil for
// any other command.
func curlPreflight(cmd string) map[string]string {
	if !strings.Contains(cmd, "curl") || !matchLine(curlOptionsRE, cmd) {
		return nil
	}
	req := map[string]string{}
	for _, m := range findAllSubmatch(curlHeaderRE, cmd, -1) {
		h := orWord(m[1], orWord(m[2], m[3]))
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "origin":
			req["origin"] = v
		case "access-control-request-method":
			req["method"] = v
		case "access-control-request-headers":
			req["headers"] = v
		}
	}
	if req["origin"] == "" || req["method"] == "" && req["headers"] == "" {
		return nil
	}
	if u := findString(corsURLRE, curlHeaderRE.ReplaceAllString(cmd, "")); u != "" {
		req["url"] = u
		host := strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
		host, _, _ = strings.Cut(host, "/")
		req["host"] = host
	}
	return req
}

// headerSet is a comma-separated header value as a set of lower-case
// names.
func headerSet(v string) map[string]bool {
	s := map[string]bool{}
	for _, x := range strings.Split(v, ",") {
		if x = strings.ToLower(strings.TrimSpace(x)); x != "" {
			s[x] = true
		}
	}
	return s
}
