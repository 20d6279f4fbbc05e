package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An API changed the shape of its JSON responses under clients that are
// already installed or cached: a number became an object ({amount,
// currency}), an empty list became null (a nil Go slice), a field was
// renamed or dropped. The server answers 200 and its own metrics show
// nothing; the clients fail to decode every response (Moshi's
// "JsonDataException: Expected a double but was BEGIN_OBJECT at path
// $.items[0].unitPrice", Gson's "Expected BEGIN_ARRAY but was STRING",
// Jackson's "Cannot deserialize value of type", Swift's
// "typeMismatch"/"valueNotFound", kotlinx's JsonDecodingException) or
// crash on what they read (a browser's "Cannot read properties of null
// (reading 'map')", Firefox's "e.orders is null", Safari's "undefined is
// not an object (evaluating 'e.orders.map')"), and show an error state or
// a blank page. The error tracker (Sentry, Crashlytics) holds it, with the
// app versions hit and the call made just before. The root is the API's
// change: the one whose change names the field, else the one whose name
// the failing call's path carries, else the last change of another
// service before the first occurrence; the client's own release is
// innocent when the error was first seen before it.

// KindClientResponseShape is an API's response shape changed under its
// installed clients.
const KindClientResponseShape Kind = "client_response_shape"

var (
	// clientDecodeRE is a client failing to decode a response, with the
	// path or field when it names one.
	clientDecodeRE = regexp.MustCompile(`(?i)JsonDataException: (?:Expected|Required|Non-null|Unexpected)(?:[^\n]*?at path (\$[\w.\[\]$-]+))?|JsonSyntaxException(?:[^\n]*Expected \w+ but was \w+)(?:[^\n]*?path (\$[\w.\[\]$-]+))?|JsonDecodingException(?:[^\n]*?at path:? ?(\$[\w.\[\]$-]+))?|MismatchedInputException: Cannot deserialize value of type(?:[^\n]*?\["(\w+)"\]\))?|DecodingError\.(?:typeMismatch|valueNotFound|keyNotFound)|\b(?:typeMismatch|valueNotFound|keyNotFound)\((?:Swift\.|CodingKeys)`)
	// clientNullRE is a browser's error on a value a response left null
	// or undefined: Chrome, Firefox and Safari wordings.
	clientNullRE = regexp.MustCompile(`TypeError: (?:Cannot read propert(?:y|ies) of (?:null|undefined) \(reading '(\w+)'\)|(?:\w+\.)*(\w+) is (?:null|undefined)\b|undefined is not an object \(evaluating '(?:\w+\.)*?(\w+)\.\w+'\)|null is not an object \(evaluating '(?:\w+\.)*?(\w+)\.\w+'\)|(?:\w+\.)*(\w+)\.(?:map|forEach|filter|reduce) is not a function)`)
	// clientCodingKeyRE is a field of a Swift coding path.
	clientCodingKeyRE = regexp.MustCompile(`CodingKeys\(stringValue: "(\w+)"`)
	// clientSourceFieldRE is the field a source excerpt's failing line
	// reads a list method on ("> 41 |   data.orders.map(").
	clientSourceFieldRE = regexp.MustCompile(`^\s*>\s*\d+\s*\|.*?\b\w+\.(\w+)\??\.(?:map|forEach|filter|reduce|length)\b`)
	// clientCallRE is a call a client made, with its path: a breadcrumb
	// ("xhr GET https://host/v3/orders [200]"), a log ("GET /v2/cart"),
	// a key ("endpoint=/v2/cart").
	clientCallRE = regexp.MustCompile(`(?i)(?:\b(?:GET|POST|PUT|PATCH)\s+(?:https?://[^/\s]+)?|endpoint[=:]\s*)(/[\w./-]+)`)
	// clientOKRE is the response the client got answered 200.
	clientOKRE = regexp.MustCompile(`(?i)http_status[=:]\s*200\b|<-- 200\b|\[200\]|\bstatus[=:]\s*200\b`)
	// clientVersionsRE is the app versions or releases an error tracker
	// lists for an issue.
	clientVersionsRE = regexp.MustCompile(`(?i)^\s*(?:versions|releases|app versions):?\s+(.+)$`)
	// clientVersionRE is one version in such a list.
	clientVersionRE = regexp.MustCompile(`(?:@|\b)(\d+\.\d+(?:\.\d+)?)\b`)
)

var clientResponseShape = &mechanism{
	kind:           KindClientResponseShape,
	class:          classCause,
	label:          "an API's response shape changed under its installed clients",
	detect:         detectClientResponseShape,
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		client := orWord(h.fact("client"), "its clients")
		d := fmt.Sprintf("%s changed the shape of the JSON it answers with under clients already installed: %s cannot use the response", h.Subject, client)
		if f := h.fact("field"); f != "" {
			d += fmt.Sprintf(" — the field %s is no longer of the type or form its code reads (response shape changed)", f)
		}
		if v := h.fact("versions"); v != "" {
			d += fmt.Sprintf("; hit: app versions %s", v)
		}
		d += h.quoteClause("; the client reports: ", "line", 220)
		if n := h.fact("since"); n != "" {
			d += fmt.Sprintf(" (first seen %s)", n)
		}
		if h.fact("ok") != "" {
			d += fmt.Sprintf(". The server answers 200, so %s's own metrics and logs show no error", h.Subject)
		}
		if c := h.fact("change"); c != "" {
			d += fmt.Sprintf(". The change: %s", quote(c, 220))
		}
		if i := h.fact("innocent"); i != "" {
			d += fmt.Sprintf(". %s's own release came after the first failures and is not the cause", i)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Restore the response shape %s answered with for the versions still installed (keep the old field beside the new one, or version the endpoint), or roll back %s", h.Subject, h.Subject)
		r.med("Make %s tolerate the new shape (a null list as empty, the new type) and force-update the versions that cannot", orWord(h.fact("client"), "the client"))
		r.low("Test API changes against the responses the installed client versions decode (contract tests) and alert on the error tracker's new issues per API release")
	},
}

// detectClientResponseShape reads client reports for a client's failure
// to decode or use a response and follows it to the API that changed.
// Reports of one client (an issue's page and its events) are read
// together: the earliest failure any of them shows is the onset.
func detectClientResponseShape(ev *Gathered, _ []Finding) []Finding {
	var reads []clientShapeRead
	for _, c := range clientReports(ev) {
		if r, ok := readClientShape(ev, c.Lines); ok {
			r.report = clientReportName(c)
			reads = append(reads, r)
		}
	}
	for i, r := range reads {
		for _, o := range reads[i+1:] {
			if o.client != r.client {
				continue
			}
			if r.first.IsZero() || !o.first.IsZero() && o.first.Before(r.first) {
				r.first = o.first
			}
			r.field = orWord(r.field, o.field)
			r.versions = orWord(r.versions, o.versions)
			r.ok = r.ok || o.ok
			for _, c := range o.calls {
				if !slices.Contains(r.calls, c) {
					r.calls = append(r.calls, c)
				}
			}
		}
		if f := r.finding(ev); f != nil {
			return []Finding{*f}
		}
	}
	return nil
}

// clientShapeRead is what one report says of a client's failure.
type clientShapeRead struct {
	report, line, field, client, versions string
	calls                                 []string
	ok                                    bool
	first                                 time.Time
}

// readClientShape reads one report's lines: the failure, the field, the
// calls made, the client, its versions and the first occurrence (the
// tracker's "First seen" of the issue the failure is in: the last one
// before the failure's line, else the first after it).
func readClientShape(ev *Gathered, lines []string) (clientShapeRead, bool) {
	var r clientShapeRead
	at := -1
	for i, l := range lines {
		var m []string
		if m = findSubmatch(clientDecodeRE, l); m == nil {
			m = findSubmatch(clientNullRE, l)
		}
		if m == nil {
			continue
		}
		if r.line == "" {
			r.line, at = strings.TrimSpace(l), i
		}
		if r.field == "" {
			r.field = firstGroup(m)
			if strings.Contains(l, "reading '") {
				r.field = "" // Chrome names the method read, not the field
			}
			if ks := findAllSubmatch(clientCodingKeyRE, l, -1); len(ks) > 0 {
				r.field = ks[len(ks)-1][1]
			}
		}
	}
	if r.line == "" {
		return r, false
	}
	if r.field == "" {
		for _, l := range lines {
			if m := findSubmatch(clientSourceFieldRE, l); m != nil {
				r.field = m[1]
				break
			}
		}
	}
	r.field = strings.TrimPrefix(r.field, "$.")
	for _, l := range lines {
		for _, m := range findAllSubmatch(clientCallRE, l, -1) {
			if !slices.Contains(r.calls, m[1]) {
				r.calls = append(r.calls, m[1])
			}
		}
		if matchLine(clientOKRE, l) {
			r.ok = true
		}
	}
	r.client = clientProject(lines)
	r.first = clientFirstSeen(lines[:at])
	if r.first.IsZero() {
		r.first = clientFirstSeen(lines[at:])
	}
	if r.versions = clientVersions(lines[:at], true); r.versions == "" {
		r.versions = clientVersions(lines[at:], false)
	}
	if r.first.IsZero() {
		for _, l := range lines {
			if t, ok := evidence.LineTime([]byte(l), ev.Window.End); ok && (r.first.IsZero() || t.Before(r.first)) {
				r.first = t
			}
		}
	}
	return r, true
}

// finding follows a read to the API and makes the finding; nil when no
// API's change is found.
func (r clientShapeRead) finding(ev *Gathered) *Finding {
	field := r.field
	if i := strings.LastIndexAny(field, ".]"); i >= 0 {
		field = strings.TrimLeft(field[i+1:], ".")
	}
	api, ch := clientShapeAPI(ev, r.client, field, r.calls, r.first)
	if api == "" {
		return nil
	}
	f := Finding{Kind: KindClientResponseShape, Subject: api, Object: "responses of " + api, Time: r.first,
		Severity: SevCritical, Weight: 0.88, Source: SrcLogs}
	if r.client != "" && r.client != api {
		f.Related = append(f.Related, r.client)
	}
	f.setFact("client", r.client)
	f.setFact("field", r.field)
	f.setFact("line", r.line)
	f.setFact("report", r.report)
	if !r.first.IsZero() {
		f.setFact("since", ts(r.first))
	}
	if r.ok {
		f.setFact("ok", "200")
	}
	f.setFact("versions", r.versions)
	f.setFact("change", ch.Description)
	// The client's own release after the first failure is innocent.
	for _, c := range ev.Changes {
		if r.client != "" && strings.EqualFold(c.Service, r.client) && !r.first.IsZero() && c.Timestamp.After(r.first) {
			f.setFact("innocent", c.Service)
		}
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s fails on %s's response: %s", orWord(r.client, "the client"), api, quote(ReadableLine(r.line), 240)))
	if len(r.calls) > 0 {
		call := "the call before the failure: " + r.calls[0]
		if r.ok {
			call += " (answered 200)"
		}
		f.Evidence = append(f.Evidence, call)
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s changed at %s: %s", api, ts(ch.Timestamp), quote(ch.Description, 200)))
	f.Summary = fmt.Sprintf("%s fails to use %s's responses (%s)", orWord(r.client, "the client"), api, orWord(r.field, "response shape changed"))
	return &f
}

// clientShapeAPI is the API whose response changed: the other service
// whose change names the field, else the changed service whose name a
// called path carries, else the last change of another service before the
// first failure. Changes after the first failure (and some slack) are
// not its cause.
func clientShapeAPI(ev *Gathered, client, field string, calls []string, first time.Time) (string, *evidence.Change) {
	cands := []evidence.Change{}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if c.Service == "" || strings.EqualFold(c.Service, client) || !first.IsZero() && c.Timestamp.After(first.Add(15*time.Minute)) {
			continue
		}
		cands = append(cands, c)
	}
	if len(field) >= 4 {
		for i := len(cands) - 1; i >= 0; i-- {
			if strings.Contains(strings.ToLower(cands[i].Description), strings.ToLower(field)) {
				return cands[i].Service, &cands[i]
			}
		}
	}
	for i := len(cands) - 1; i >= 0; i-- {
		stem := serviceStem(cands[i].Service)
		if len(stem) < 3 {
			continue
		}
		for _, p := range calls {
			for _, seg := range strings.Split(strings.ToLower(p), "/") {
				if seg == stem || strings.TrimSuffix(seg, "s") == strings.TrimSuffix(stem, "s") {
					return cands[i].Service, &cands[i]
				}
			}
		}
	}
	return "", nil
}

// clientVersions is the versions an error tracker lists for the issue,
// in its order: of the first list in lines, or of the last with last.
func clientVersions(lines []string, last bool) string {
	if last {
		lines = slices.Clone(lines)
		slices.Reverse(lines)
	}
	for _, l := range lines {
		m := findSubmatch(clientVersionsRE, l)
		if m == nil {
			continue
		}
		var vs []string
		for _, v := range findAllSubmatch(clientVersionRE, m[1], -1) {
			if !slices.Contains(vs, v[1]) {
				vs = append(vs, v[1])
			}
		}
		if len(vs) > 0 {
			return strings.Join(vs, ", ")
		}
	}
	return ""
}
