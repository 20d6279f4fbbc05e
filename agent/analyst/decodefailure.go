package analyst

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindDecodeFailure: a reader fails to decode the data it fetches or
// consumes because its producer changed the data's format: an external
// API that now writes its timestamps with milliseconds and a "+0000"
// offset, a field that became a string, an enum value the reader's code
// does not know. The reader's code did not change; every run or message
// fails at the same field, and what the reader serves goes stale or is
// dropped. The fix is in the reader's parser (accept the new form) or in
// the producer (restore the old one).
const KindDecodeFailure Kind = "decode_failure"

var decodeFailure = &mechanism{
	kind:  KindDecodeFailure,
	class: classCause,
	label: "data it reads no longer parses (its producer changed the format)",
	// Each runtime's own words for a value it cannot decode: Go's time
	// and encoding/json (a response's body, not a config file), Python's
	// strptime and fromisoformat, java.time and Jackson, System.Text.Json
	// and DateTime.Parse, JSON.parse, serde.
	lines:      decodeFailureRE,
	lineWeight: 0.85,
	detect: func(ev *Gathered, found []Finding) []Finding {
		var readers []string
		for i := range found {
			if f := &found[i]; f.Kind == KindDecodeFailure && !slices.Contains(readers, f.Subject) {
				readers = append(readers, f.Subject)
			}
		}
		for i := range found {
			if f := &found[i]; f.Kind == KindDecodeFailure {
				sameReader(f, readers)
				explainDecode(f, ev)
			}
		}
		return missingFieldFailures(ev, readers)
	},
	// A change of the reader's own code triggers it only when it says it
	// touched how the data is read (its parser, format, schema, API
	// version); a deploy of other work near the onset is a coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if matchLine(decodeChangeRE, changeText(c)) {
			return true
		}
		src := decodeSourceName(h.fact("decode_source"))
		return src != "" && strings.Contains(strings.ToLower(changeText(c)), src)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		reader := orWord(h.fact("caller"), h.Subject)
		src := h.fact("decode_source")
		what := "the data it reads"
		if src != "" {
			what = "what " + decodeSourceWords(src) + " sends"
		}
		d := fmt.Sprintf("%s cannot decode %s: ", reader, what)
		field, value := h.fact("decode_field"), h.fact("decode_value")
		switch {
		case h.fact("decode_compressed") != "":
			d += fmt.Sprintf("the value is %s-compressed (it begins with the %s magic bytes), not the plain text its code parses", h.fact("decode_compressed"), h.fact("decode_compressed"))
		case h.fact("decode_missing") != "" && field != "":
			d += fmt.Sprintf("the field %s its code reads is no longer in it", field)
		case field != "" && value != "":
			d += fmt.Sprintf("the value of %s, %q, is not in the format its code parses", field, value)
		case value != "":
			d += fmt.Sprintf("the value %q is not in the format its code parses", value)
		case field != "":
			d += fmt.Sprintf("the value of %s is not in the format its code parses", field)
		default:
			d += "a value in it is not in the format its code parses"
		}
		if e := h.fact("decode_expected"); e != "" {
			d += " (" + e + ")"
		}
		if c := h.fact("decode_contract"); c != "" {
			d += ": " + c + ", and the two versions encode the same messages differently (a field renumbered, reused or retyped)"
		}
		switch {
		case h.fact("decode_compressed") != "":
			d += ": the producer now compresses what it writes"
		case h.fact("decode_time") != "":
			d += ": the producer changed its timestamp format"
		default:
			d += ": the producer changed the format of its data"
		}
		if n := h.fact("decode_notice"); n != "" {
			d += " — its own notice: " + quote(n, 200)
		}
		onset := h.top().Time
		for _, f := range h.Primary {
			if f.Kind == KindDecodeFailure && !f.Time.IsZero() && f.Time.Before(onset) {
				onset = f.Time
			}
		}
		switch {
		case h.fact("decode_compressed") != "":
			d += fmt.Sprintf(". Each read of a value written that way fails since %s (values written before still parse until they are replaced)", hm(onset))
		case h.fact("decode_missing") != "":
			d += fmt.Sprintf(". Every record it consumes fails on it since %s and is not handled (dropped or dead-lettered)", hm(onset))
		default:
			d += fmt.Sprintf(". Every read fails on it since %s, so what %s keeps is the last data it decoded before", hm(onset), reader)
		}
		if l := h.fact("line"); l != "" {
			d += " — " + quote(decodeError(ReadableLine(l)), 240)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		reader := orWord(h.fact("caller"), h.Subject)
		src := orWord(decodeSourceWords(h.fact("decode_source")), "its producer")
		what := orWord(h.fact("decode_field"), "the value that fails")
		r.high("Make %s accept the format %s sends now for %s (parse both the old and the new form), release it and re-run it; or ask %s to restore the previous format", reader, src, what, src)
		r.med("Until then %s serves the last data it decoded: tell its consumers, and alert on the age of that data", reader)
		r.low("Test %s's parser against recorded payloads of %s (a contract test) and alert on decode failures, not only on failed runs", reader, src)
	},
}

var (
	decodeFailureRE = regexp.MustCompile(`(?i)parsing time [^\n]{1,160}?: (?:cannot parse|extra text|month out of range|day out of range|hour out of range)|time data '[^']*' does not match format|Invalid isoformat string|DateTimeParseException: Text '[^']*' could not be parsed|InvalidFormatException: Cannot deserialize value of type|MismatchedInputException: Cannot deserialize value of type|UnrecognizedPropertyException: Unrecognized field|The JSON value could not be converted to|was not recognized as a valid DateTime|Unexpected token \S+ in JSON at position|is not valid JSON|invalid character '\\+x1f' looking for beginning of value|Illegal character \(\(CTRL-CHAR, code 31\)\)|'utf-8' codec can't decode byte 0x8b in position 1|unknown variant ` + "`" + `[^` + "`" + `]+` + "`" + `, expected|(?:response|body|payload|message|event|record)\b[^\n]{0,120}json: cannot unmarshal \w+ into Go|json: cannot unmarshal \w+ into Go struct field \w*(?:Response|Reply|Result|Event|Message|Payload|Body)\.|proto: cannot parse invalid wire-format data|InvalidProtocolBufferException: (?:Protocol message (?:contained an invalid tag|end-group tag did not match)|While parsing a protocol message)|DecodeError: Error parsing message`)

	// A change that touches how data is read or written.
	decodeChangeRE = regexp.MustCompile(`(?i)\b(?:pars(?:er|ing)|serializ\w*|deserializ\w*|format|schema|payload|api version|v\d+ api|contract|enum|timestamp|date ?time|time ?zone|decoder|encoding)\b`)

	// The value that failed, as each runtime quotes it.
	decodeValueRE = regexp.MustCompile(`(?i)parsing time \\*"(?:\\*")?([^"\\]+)|time data '([^']+)'|Invalid isoformat string: '([^']+)'|Text '([^']+)' could not be parsed|from String \\*"([^"\\]+)|String '([^']+)' was not recognized`)
	// The field it was in.
	decodeFieldRE = regexp.MustCompile(`(?i)\bfield[=:]\s*"?([\w.\[\]-]+)|Path: \$\.([\w.\[\]]+)|Go struct field ([\w.]+)|reference chain: [\w.$]+\["(\w+)"\]|Unrecognized field "(\w+)"`)
	// What it expected: Go's layout, Python's format, an enum's values.
	decodeLayoutRE = regexp.MustCompile(`(?i)\bas \\*"(?:\\*")?([^"\\]+)|does not match format '([^']+)'|accepted for Enum class: (\[[^\]]+\])|expected one of ([^\n"]{1,80})`)
	decodeTimeRE   = regexp.MustCompile(`(?i)parsing time|time data|isoformat|DateTime|java\.time|Instant|OffsetDateTime|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}`)
	// Go's encoding/json: the JSON type it got and the Go type of the
	// field.
	goTypeRE = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go (?:struct field|value) [\w.\[\]]* ?of type ([\w.\[\]*]+)`)
	// A value that begins with gzip's magic bytes 1f 8b, as each runtime
	// shows it: JSON.parse's unexpected token U+001F, Go's invalid
	// character '\x1f', Jackson's CTRL-CHAR code 31, Python's undecodable
	// byte 0x8b at position 1, a dump's escaped bytes.
	compressedValueRE = regexp.MustCompile(`(?i)Unexpected token '?(?:\\+u001f|\x{1f})|invalid character '\\+x1f'|CTRL-CHAR, code 31\b|can't decode byte 0x8b in position 1\b|\\+x1f\\+x8b`)
	// A line of the producer that announces a change to what it sends.
	changedWhatRE = regexp.MustCompile(`(?i)upgrade|migrat|serializ|format|schema|breaking|deprecat|new version|\bv\d+(?:\.\d+)*\b`)
	noticeRE      = regexp.MustCompile(`(?i)maintenance|upgrade|migrat|release|rolled out|deploy|version|deprecat|breaking|serializ|format|schema|change`)
)

// sameReader gives a decode failure read from a log kept apart from the
// reader's pods (a file of the runs' history, a log search) the reader
// its lines name ("fx-sync-29926440 ... parsing time"): one failure, with
// its earliest onset.
func sameReader(f *Finding, readers []string) {
	line := f.fact("line")
	for _, r := range readers {
		if r != f.Subject && len(r) > 3 && strings.HasPrefix(f.Subject, r+"-") && strings.Contains(line, r) {
			f.Subject = r
			f.Facts["caller"] = r
			delete(f.Facts, "host") // a log kept of the reader's runs, not a host's own
			return
		}
	}
}

// explainDecode adds to a decode failure what failed (the field, its
// value, the layout the code expects), where the data came from (the
// host the reader fetched it from just before) and what its producer
// announced near the onset.
func explainDecode(f *Finding, ev *Gathered) {
	line := f.fact("line")
	if m := findSubmatch(decodeValueRE, line); m != nil {
		f.setFact("decode_value", firstGroup(m))
	}
	if m := findSubmatch(decodeFieldRE, line); m != nil {
		f.setFact("decode_field", firstGroup(m))
	}
	if m := findSubmatch(decodeLayoutRE, line); m != nil {
		f.setFact("decode_expected", layoutWords(firstGroup(m)))
	} else if m := findSubmatch(goTypeRE, line); m != nil {
		f.setFact("decode_expected", fmt.Sprintf("it gets a %s where its code expects %s", m[1], m[2]))
	}
	// The error's own words say whether a timestamp failed (not the
	// line's own timestamp before them).
	if matchLine(compressedValueRE, line) {
		f.setFact("decode_compressed", "gzip")
	} else if matchLine(decodeTimeRE, decodeError(line)) {
		f.setFact("decode_time", "true")
	}
	reader := orWord(f.fact("caller"), f.Subject)
	if at, retry := entryOnset(ev, f); !at.IsZero() {
		// The failure's onset is the record's first failed attempt: the
		// finding says so, and its evidence starts there.
		f.Summary = fmt.Sprintf("%s fails to decode a record since its first attempt at %s and retries it (%s lines of the exception from %s)", reader, hm(at), orWord(f.fact("lines"), "its"), hm(f.Time))
		f.Evidence = append([]string{fmt.Sprintf("%s first failed on the record at %s and retries it since: %s", reader, hm(at), quote(ReadableLine(retry), 240))}, f.Evidence...)
		f.Time = at
	}
	src := orWord(externalHost(line), "")
	if src == "" {
		src = fetchedHost(ev, reader, f.fact("source"))
	}
	var change *evidence.Change
	if src == "" {
		src, change = producerOf(ev, reader, f)
	}
	f.setFact("decode_source", src)
	if src == "" {
		return
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s reads what it decodes from %s", reader, src))
	if !strings.Contains(src, ".") {
		f.setFact("affected", src) // a service of its own that sends it
	}
	if change != nil {
		f.setFact("decode_notice", change.Description)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s of %s at %s: %s", change.Kind, orWord(change.Revision, ""), change.Service, hm(change.Timestamp), quote(change.Description, 200)))
	} else if n, at := producerNotice(ev, src, reader, f.Time); n != "" {
		f.setFact("decode_notice", n)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s at %s: %s", decodeSourceName(src), hm(at), quote(n, 200)))
	}
	// The line names the value and the reader names where it got it:
	// the mechanism is seen directly.
	if f.fact("decode_value") != "" || f.fact("decode_notice") != "" {
		f.setFact("why", "the data "+src+" sends no longer parses")
		f.Weight = max(f.Weight, 0.9)
	}
}

// fetchedHost is the external host the reader's log says it fetched
// from (a URL in a line of the same source, or of the reader's logs).
func fetchedHost(ev *Gathered, reader, source string) string {
	for _, s := range ev.Logs {
		if s.Source != source && s.Subject != reader {
			continue
		}
		for _, t := range s.Templates {
			for _, l := range t.Lines() {
				if h := externalHost(l); h != "" {
					return h
				}
			}
		}
	}
	return ""
}

// producerNotice is a line of another log (a provider's status page, a
// producer's own log) that names the source and announces a change,
// within two hours before the onset or a quarter of an hour after it.
func producerNotice(ev *Gathered, src, reader string, onset time.Time) (string, time.Time) {
	name := decodeSourceName(src)
	if len(name) < 3 {
		return "", time.Time{}
	}
	best, bestAt, bestStrong := "", time.Time{}, false
	for _, s := range ev.Logs {
		if s.Subject == reader || strings.HasPrefix(s.Subject, reader+"-") {
			continue // the reader's own lines name the source, they announce nothing
		}
		for _, t := range s.Templates {
			for _, c := range []struct {
				l  string
				at time.Time
			}{{t.Example, t.FirstSeen}, {t.Last, t.LastSeen}} {
				l := c.l
				if l == "" || !strings.Contains(strings.ToLower(l), name) || !matchLine(noticeRE, l) || matchLine(decodeFailureRE, l) {
					continue
				}
				at := c.at
				if !onset.IsZero() && !at.IsZero() && (at.Before(onset.Add(-2*time.Hour)) || at.After(onset.Add(15*time.Minute))) {
					continue
				}
				// A notice that names what changed (an upgrade, a format)
				// before one that only says when; then the one closest
				// to the onset.
				strong := matchLine(changedWhatRE, l)
				if best == "" || strong && !bestStrong || strong == bestStrong && !onset.IsZero() && absDur(at.Sub(onset)) < absDur(bestAt.Sub(onset)) {
					best, bestAt, bestStrong = ReadableLine(l), at, strong
				}
			}
		}
	}
	return best, bestAt
}

// decodeSourceName is the name a host goes by in its owners' words: the
// label before the public suffix ("api.ratefeed.io" → "ratefeed").
func decodeSourceName(host string) string {
	if host == "" || net.ParseIP(host) != nil {
		return strings.ToLower(host)
	}
	parts := strings.Split(strings.ToLower(host), ".")
	if len(parts) >= 2 {
		return parts[len(parts)-2]
	}
	return parts[0]
}

// decodeSourceWords says what the source is: an external host is the
// upstream provider.
func decodeSourceWords(src string) string {
	if src == "" {
		return ""
	}
	if strings.Contains(src, ".") {
		return "its upstream provider " + src
	}
	return src
}

// layoutWords names a Go time layout by its standard's name.
func layoutWords(l string) string {
	switch l {
	case "2006-01-02T15:04:05Z07:00":
		return "it expects RFC 3339, " + l
	case "2006-01-02T15:04:05.999999999Z07:00":
		return "it expects RFC 3339 with fractions, " + l
	}
	return "it expects " + l
}

// decodeError is the part of a line that says what did not parse, with
// the escaping of quotes the error went through (quoted in an error,
// the error in a structured log line) undone.
func decodeError(line string) string {
	if loc := decodeFailureRE.FindStringIndex(line); loc != nil {
		line = line[loc[0]:]
	}
	line = strings.ReplaceAll(line, `\`, "")
	for strings.Contains(line, `""`) {
		line = strings.ReplaceAll(line, `""`, `"`)
	}
	return strings.TrimRight(line, `" `)
}

// entryOnset is when the failing record was first tried: an exception
// printed under a consumer's retry line ("carrier event topic-4@1882210
// failed (attempt 3871)") is the same failure since that line's first
// attempt, even when only the last entries' stack traces were read.
func entryOnset(ev *Gathered, f *Finding) (time.Time, string) {
	var onset time.Time
	line := ""
	for _, s := range ev.Logs {
		if s.Source != f.fact("source") {
			continue
		}
		for _, t := range s.Templates {
			// Still retried while the exception is printed (its retry
			// line printed with it, just before or after).
			if matchLine(retryLineRE, t.Example) && !t.LastSeen.Before(f.Time.Add(-time.Minute)) && t.FirstSeen.Before(f.Time) && (onset.IsZero() || t.FirstSeen.Before(onset)) {
				onset, line = t.FirstSeen, t.Example
			}
		}
	}
	return onset, line
}

// producerOf is the service that writes what the reader consumes: the
// one whose change in the window names the value that fails ("new
// shipment status RETURNED_TO_SENDER"), else the one whose log says it
// publishes to the topic the reader's lines name ("published ...
// topic=order-events"), with its change near the onset if it has one.
func producerOf(ev *Gathered, reader string, f *Finding) (string, *evidence.Change) {
	near := func(svc string) *evidence.Change {
		var best *evidence.Change
		for i := range ev.Changes {
			c := &ev.Changes[i]
			if c.Service == svc && (f.Time.IsZero() || !c.Timestamp.After(f.Time.Add(15*time.Minute))) {
				best = c
			}
		}
		return best
	}
	for _, v := range []string{f.fact("decode_value"), f.fact("decode_field")} {
		if len(v) < 4 {
			continue
		}
		for i := range ev.Changes {
			c := &ev.Changes[i]
			if c.Service != "" && c.Service != reader && strings.Contains(strings.ToLower(c.Description), strings.ToLower(v)) {
				return c.Service, c
			}
		}
	}
	// The service the reader's failing line says answered: "upstream":
	// "shipping-quotes", peer=stock-api.
	if m := findSubmatch(answeredByRE, f.fact("line")); m != nil {
		if u := strings.ToLower(m[1]); u != reader && knownService(ev, u) {
			return u, near(u)
		}
	}
	var topics []string
	for _, s := range ev.Logs {
		if s.Subject != reader {
			continue
		}
		for _, t := range s.Templates {
			for _, l := range t.Lines() {
				for _, m := range findAllSubmatch(consumedTopicRE, l, -1) {
					if tp := firstGroup(m); len(tp) > 2 && !slices.Contains(topics, tp) {
						topics = append(topics, tp)
					}
				}
			}
		}
	}
	publishes := func(l string) bool {
		if !matchLine(publishRE, l) {
			return false
		}
		for _, tp := range topics {
			if strings.Contains(l, `"topic":"`+tp+`"`) || strings.Contains(l, "topic="+tp) || strings.Contains(l, `topic="`+tp+`"`) {
				return true
			}
		}
		return false
	}
	for _, s := range ev.Logs {
		if s.Subject == reader || s.Subject == "" {
			continue
		}
		for _, t := range s.Templates {
			if publishes(t.Example) || publishes(t.Last) {
				return s.Subject, near(s.Subject)
			}
		}
	}
	// A workload's log kept as a command's text (kubectl logs
	// deploy/orders-api | grep publish): the workload publishes.
	for _, c := range ev.Commands {
		_, name, ok := strings.Cut(c.Target, "/")
		if c.Exec || !ok || name == "" || name == reader || !strings.Contains(c.Command, "logs") {
			continue
		}
		for _, l := range c.Lines {
			if publishes(l) {
				return name, near(name)
			}
		}
	}
	if w := storeWriter(ev, reader); w != "" {
		return w, near(w)
	}
	if w, c := contractSkew(ev, reader, f); w != "" {
		return w, c
	}
	return "", nil
}

// contractSkew is the other service whose change names a shared contract
// package (a module of generated protobuf, Avro or OpenAPI code: its name
// ends in -proto, -schema, -idl, -contracts or -client) at another
// version than the one the reader's own lines say it was built with
// ("pricing_proto":"github.com/acme/pricing-proto v1.12.0" against a
// change "pricing-svc 3.8.0 (pricing-proto v1.13.0)"): the two sides
// encode the same messages differently. The finding says which versions.
func contractSkew(ev *Gathered, reader string, f *Finding) (string, *evidence.Change) {
	have := map[string]string{}
	for _, s := range ev.Logs {
		if s.Subject != reader {
			continue
		}
		for _, t := range s.Templates {
			for _, l := range t.Lines() {
				for _, m := range findAllSubmatch(contractPkgRE, l, -1) {
					have[strings.ToLower(m[1])] = m[2]
				}
			}
		}
	}
	if len(have) == 0 {
		return "", nil
	}
	for i := range ev.Changes {
		c := &ev.Changes[i]
		if c.Service == "" || c.Service == reader || !f.Time.IsZero() && (c.Timestamp.After(f.Time.Add(15*time.Minute)) || c.Timestamp.Before(f.Time.Add(-24*time.Hour))) {
			continue
		}
		for _, m := range findAllSubmatch(contractPkgRE, c.Description, -1) {
			if v, ok := have[strings.ToLower(m[1])]; ok && v != m[2] {
				f.setFact("decode_contract", fmt.Sprintf("%s is built with %s %s while %s now uses %s %s", reader, m[1], v, c.Service, m[1], m[2]))
				f.Evidence = append(f.Evidence, f.fact("decode_contract"))
				return c.Service, c
			}
		}
	}
	return "", nil
}

// contractPkgRE is a contract package and its version as build lines and
// changes name it ("github.com/acme/pricing-proto v1.12.0",
// "pricing-proto v1.13.0", "orders-schema@2.4.0").
var contractPkgRE = regexp.MustCompile(`(?i)\b([a-z][a-z0-9_-]*[-_](?:proto|protos|schema|schemas|idl|contracts?|client))(?:"?\s*[:=@]\s*"?|\s+)v?(\d+\.\d+(?:\.\d+)?)\b`)

// storeWriter is the other service whose lines name the data store the
// reader reads from ("redis connected url=redis://product-cache:6379",
// "product cache: redis product-cache:6379 prefix=product:v3:"): a
// store two services use, one of them writing what the other decodes.
func storeWriter(ev *Gathered, reader string) string {
	var hosts []string
	for _, s := range ev.Logs {
		if s.Subject != reader {
			continue
		}
		for _, t := range s.Templates {
			for _, l := range t.Lines() {
				for _, m := range findAllSubmatch(storeURLRE, l, -1) {
					if h := strings.ToLower(m[1]); len(h) > 4 && net.ParseIP(h) == nil && h != "localhost" && !slices.Contains(hosts, h) {
						hosts = append(hosts, h)
					}
				}
			}
		}
	}
	if len(hosts) == 0 {
		return ""
	}
	for _, s := range ev.Logs {
		if s.Subject == reader || s.Subject == "" || strings.HasPrefix(s.Subject, reader+"-") {
			continue
		}
		for _, t := range s.Templates {
			for _, l := range t.Lines() {
				low := strings.ToLower(l)
				for _, h := range hosts {
					if strings.Contains(low, h) && !strings.Contains(strings.ToLower(s.Subject), h) && !strings.HasPrefix(h, strings.ToLower(s.Subject)) {
						return s.Subject
					}
				}
			}
		}
	}
	return ""
}

// answeredByRE is the service a structured line says answered the call.
var answeredByRE = regexp.MustCompile(`(?i)\b"?(?:upstream|peer|callee|peer_service|peer\.service|remote_service)"?\s*[:=]\s*"?([a-z][a-z0-9-]{2,})`)

// storeURLRE is a data store's address as clients print it: a URL of a
// cache's, a database's or a broker's scheme.
var storeURLRE = regexp.MustCompile(`(?i)\b(?:rediss?|memcached?|mongodb(?:\+srv)?|postgres(?:ql)?|mysql|amqps?|nats)://(?:[^@/\s"']*@)?([a-z0-9][a-z0-9.-]*[a-z0-9])`)

var (
	// A consumer's retry of one record: "failed (attempt 12)",
	// "retry 3/5", "redelivery 7".
	retryLineRE = regexp.MustCompile(`(?i)\b(?:attempt|retry|retries|redeliver\w*|delivery)\W{0,3}#?\d+`)
	// A topic and partition as consumers print them: "orders-4@1882210",
	// "order-events[3]@88402216", "TopicPartition(topic='x'", "topic=x".
	consumedTopicRE = regexp.MustCompile(`\b([a-z][\w.]*(?:-[a-z][\w.]*)*)(?:-\d+|\[\d+\])@\d+|topic='([\w.-]+)'|\btopic[=:]\s*"?([\w.-]+)`)
	publishRE       = regexp.MustCompile(`(?i)\bpublish|\bproduced?\b|\bsent to topic|\bemitt?ed\b`)
)

// missingFieldRE is a consumer's own words for a field its code reads
// that the record no longer has: Python's and Ruby's KeyError, Jackson's
// missing creator property, Avro's and serde's missing field, Go's
// validator on a required tag, System.Text.Json's missing required
// properties.
var missingFieldRE = regexp.MustCompile(`(?i)\bKeyError: (?:key not found: )?[:'"]?([A-Za-z_][\w.-]*)|Missing required creator property '(\w+)'|missing required field:? "?(\w+)|missing field ` + "`" + `(\w+)` + "`" + `|Field validation for '(\w+)' failed on the 'required' tag|missing required properties,? including:? '(\w+)'`)

// missingFieldFailures reads a field missing from a consumed record as a
// decode failure: only in a reader whose lines name the topic it
// consumes and whose producer is found (a service that publishes to that
// topic); a KeyError of a process's own settings (os.environ) has no
// producer and stays the crash it is.
func missingFieldFailures(ev *Gathered, readers []string) []Finding {
	var out []Finding
	for _, s := range ev.Logs {
		if s.Host || s.Subject == "" || slices.Contains(readers, s.Subject) {
			continue
		}
		for _, t := range s.Templates {
			if t.Incident == 0 {
				continue
			}
			line := t.Example
			m := findSubmatch(missingFieldRE, line)
			if m == nil {
				line = t.Last
				if m = findSubmatch(missingFieldRE, line); m == nil {
					continue
				}
			}
			field := firstGroup(m)
			if strings.ToUpper(field) == field {
				continue // an environment variable's name, not a record's field
			}
			f := Finding{Kind: KindDecodeFailure, Subject: s.Subject, Namespace: s.Namespace, Source: s.Origin,
				Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevWarning, Weight: 0.85,
				Object: s.Origin + " " + s.Source}
			f.setFact("line", line)
			f.setFact("source", s.Source)
			f.setFact("caller", s.Subject)
			f.setFact("decode_field", field)
			f.setFact("decode_missing", "true")
			if src, _ := producerOf(ev, s.Subject, &f); src == "" || !consumesTopic(ev, s.Subject) {
				continue
			}
			// The failures began with the first record the consumer
			// failed to handle, not with the first stack trace read.
			if at := firstTopicFailure(s, t.LastSeen); !at.IsZero() && at.Before(f.Time) {
				f.Time = at
			}
			f.Evidence = append(f.Evidence, templateEvidence(s, t, line))
			explainDecode(&f, ev)
			if f.fact("decode_source") == "" {
				continue
			}
			out = append(out, f)
			readers = append(readers, s.Subject)
			break
		}
	}
	return out
}

// consumesTopic says whether the reader's lines name a topic and offset
// it consumes.
func consumesTopic(ev *Gathered, reader string) bool {
	for _, s := range ev.Logs {
		if s.Subject != reader {
			continue
		}
		for _, t := range s.Templates {
			if matchLine(consumedTopicRE, t.Example) || matchLine(consumedTopicRE, t.Last) {
				return true
			}
		}
	}
	return false
}

// firstTopicFailure is the first error line of the set naming a consumed
// record that was still logged when the missing field was (the header of
// each failure: "failed to handle order-events[3]@88402216").
func firstTopicFailure(s LogSet, last time.Time) time.Time {
	var at time.Time
	for _, t := range s.Templates {
		if LineLevel(t.Example) != "error" || !matchLine(consumedTopicRE, t.Example) || t.LastSeen.Before(last.Add(-time.Minute)) {
			continue
		}
		if at.IsZero() || t.FirstSeen.Before(at) {
			at = t.FirstSeen
		}
	}
	return at
}
