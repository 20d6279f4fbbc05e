package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestDecodeFailureLines reads a value the reader cannot decode as each
// runtime prints it, and leaves a configuration file that does not parse
// and other errors to their own rules.
func TestDecodeFailureLines(t *testing.T) {
	testLines(t, decodeFailure, []lineCase{
		// Go time.Parse of a JSON field, in a slog line.
		{`time=2026-11-25T07:16:21.390Z level=ERROR msg="decode response" err="parsing time \"\\\"2026-11-25T07:15:00.000+0000\\\"\" as \"\\\"2006-01-02T15:04:05Z07:00\\\"\": cannot parse \"+0000\\\"\" as \"Z07:00\"" field=as_of`, KindDecodeFailure},
		{`{"level":"error","msg":"sync failed","error":"parsing time \"2026-03-01 10:00:00\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \" 10:00:00\" as \"T\""}`, KindDecodeFailure},
		// Go encoding/json on a response body.
		{`level=error msg="fetch quotes" err="decode response body: json: cannot unmarshal string into Go struct field Quote.price of type float64"`, KindDecodeFailure},
		// Python strptime and fromisoformat.
		{`ValueError: time data '2026-11-25T06:00:00.000+0000' does not match format '%Y-%m-%dT%H:%M:%SZ'`, KindDecodeFailure},
		{`ValueError: Invalid isoformat string: '2026-11-25T06:00:00.000+0000'`, KindDecodeFailure},
		// java.time and Jackson.
		{`java.time.format.DateTimeParseException: Text '2026-11-25T06:00:00.000+0000' could not be parsed at index 23`, KindDecodeFailure},
		{`com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type ` + "`com.acme.ShipmentStatus`" + ` from String "RETURNED_TO_SENDER": not one of the values accepted for Enum class: [DELIVERED, IN_TRANSIT]`, KindDecodeFailure},
		// System.Text.Json and DateTime.Parse.
		{`System.Text.Json.JsonException: The JSON value could not be converted to System.DateTime. Path: $.as_of | LineNumber: 0 | BytePositionInLine: 52.`, KindDecodeFailure},
		{`System.FormatException: String '25/11/2026 06:00' was not recognized as a valid DateTime.`, KindDecodeFailure},
		// JSON.parse of an HTML or changed body; serde.
		{`SyntaxError: Unexpected token < in JSON at position 0`, KindDecodeFailure},
		{`Error("unknown variant ` + "`returned_to_sender`" + `, expected one of ` + "`delivered`, `in_transit`" + `", line: 1, column: 42)`, KindDecodeFailure},
		// Near misses: a config file that does not parse, a plain
		// unmarshal of the service's own settings, a panic.
		{`error: yaml: line 12: mapping values are not allowed in this context`, KindConfigInvalid},
		{`failed to load config: json: cannot unmarshal string into Go struct field Config.port of type int`, KindConfigInvalid},
		{`panic: assignment to entry in nil map`, ""},
	})
}

// TestDecodeFailureExplained follows a decode failure to the host the
// reader fetched from and to the producer's own notice near the onset,
// joins a history log of the same reader, and leaves the reader's own
// lines out of the notices.
func TestDecodeFailureExplained(t *testing.T) {
	fetch := `time=2026-11-25T07:16:21.388Z level=INFO msg="fetch latest" url=https://api.ratefeed.io/v3/latest?base=EUR status=200 provider=ratefeed version=1.9.2`
	fail := `time=2026-11-25T07:16:21.390Z level=ERROR msg="decode response" err="parsing time \"\\\"2026-11-25T07:15:00.000+0000\\\"\" as \"\\\"2006-01-02T15:04:05Z07:00\\\"\": cannot parse \"+0000\\\"\" as \"Z07:00\"" field=as_of`
	history := `fx-sync-29926440 level=ERROR msg="decode response" err="parsing time \"\\\"2026-11-25T06:00:00.000+0000\\\"\" as \"\\\"2006-01-02T15:04:05Z07:00\\\"\": cannot parse \"+0000\\\"\" as \"Z07:00\"" field=as_of`
	status := `ratefeed status page: Maintenance in progress: v3 API serializer upgrade.`
	cases := []struct {
		name                   string
		sets                   []LogSet
		source, notice, expect string
		field, value           string
		strong                 bool
	}{
		{"an external API's notice of its serializer upgrade", []LogSet{
			minedSet("fx-sync", false, 40*time.Minute, fetch, fail),
			minedSet("fx-sync-history", true, 0, history),
			minedSet("ratefeed-status", true, 0, status),
		}, "api.ratefeed.io", "serializer upgrade", "RFC 3339", "as_of", "2026-11-25T06:00:00.000+0000", true},
		{"no notice: the value alone is direct", []LogSet{
			minedSet("fx-sync", false, 0, fetch, fail),
		}, "api.ratefeed.io", "", "RFC 3339", "as_of", "2026-11-25T07:15:00.000+0000", true},
		{"Python strptime, no URL in its log", []LogSet{
			minedSet("rates-loader", false, 0, `ERROR rates_loader.sync: run failed: ValueError: time data '2026-11-25T06:00:00.000+0000' does not match format '%Y-%m-%dT%H:%M:%SZ'`),
		}, "", "", "%Y-%m-%dT%H:%M:%SZ", "", "2026-11-25T06:00:00.000+0000", false},
	}
	for _, c := range cases {
		found := DetectLogs(c.sets, win)
		decodeFailure.detect(&Gathered{Logs: c.sets, Window: win}, found)
		var fs []*Finding
		for i := range found {
			if found[i].Kind == KindDecodeFailure {
				fs = append(fs, &found[i])
			}
		}
		if len(fs) == 0 {
			t.Errorf("%s: no decode failure in %v", c.name, found)
			continue
		}
		f := fs[0]
		for _, g := range fs {
			if g.Subject != f.Subject {
				t.Errorf("%s: the history log is not joined to its reader: %s and %s", c.name, f.Subject, g.Subject)
			}
		}
		if f.fact("decode_source") != c.source || !strings.Contains(f.fact("decode_notice"), c.notice) || c.notice == "" && f.fact("decode_notice") != "" {
			t.Errorf("%s: source %q notice %q", c.name, f.fact("decode_source"), f.fact("decode_notice"))
		}
		if f.fact("decode_field") != c.field || f.fact("decode_value") != c.value || !strings.Contains(f.fact("decode_expected"), c.expect) {
			t.Errorf("%s: field %q value %q expected %q", c.name, f.fact("decode_field"), f.fact("decode_value"), f.fact("decode_expected"))
		}
		if (f.fact("why") != "") != c.strong {
			t.Errorf("%s: why %q, want it %v", c.name, f.fact("why"), c.strong)
		}
		h := &Hypothesis{Kind: KindDecodeFailure, Subject: f.Subject, Onset: f.Time, Primary: fs}
		d := describe(h, Scope{})
		for _, want := range []string{f.Subject + " cannot decode", "timestamp format", c.value} {
			if !strings.Contains(d, want) {
				t.Errorf("%s: description %q lacks %q", c.name, d, want)
			}
		}
		if c.source != "" && !strings.Contains(d, "upstream provider "+c.source) {
			t.Errorf("%s: description %q does not name the provider", c.name, d)
		}
	}
	// Only a change that says it touched the format triggers it.
	h := &Hypothesis{Kind: KindDecodeFailure, Subject: "fx-sync", Primary: []*Finding{{Kind: KindDecodeFailure, Facts: map[string]string{"decode_source": "api.ratefeed.io"}}}}
	for desc, want := range map[string]bool{
		"fx-sync 1.9.2: structured logging (slog), no functional change": false,
		"fx-sync 2.0.0: switch to the ratefeed v3 API":                   true,
		"events-api 3.4.0: new timestamp format with milliseconds":       true,
		"gl-export: add CHF ledger to nightly export":                    false,
	} {
		c := &Finding{Kind: KindDeploy, Facts: map[string]string{"description": desc}}
		if got := decodeFailure.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", desc, got, want)
		}
	}
}

// TestDecodeFailureOnsetAtFirstAttempt: a consumer retries one record
// for a long time and prints the exception only on its last attempts (or
// the log read holds only the last ones); the failure began at the
// record's first failed attempt, and the finding's onset, summary and
// evidence start there. Without a retry line the onset is the first
// decode failure line.
func TestDecodeFailureOnsetAtFirstAttempt(t *testing.T) {
	cases := []struct {
		name  string
		retry []string // from the start of the window, one a minute
		trace []string // 45 minutes later
		first bool     // the onset moves to the first retry line
	}{
		{"Spring Kafka listener with a Jackson enum failure",
			[]string{
				`2026-11-26T16:01:34.770Z ERROR 1 --- [tracker] [ntainer#0-1-C-1] c.a.t.EventListener       : event events-4@1882210 failed (attempt 1), retrying in 5000 ms`,
				`2026-11-26T16:02:34.770Z ERROR 1 --- [tracker] [ntainer#0-1-C-1] c.a.t.EventListener       : event events-4@1882210 failed (attempt 13), retrying in 5000 ms`,
			},
			[]string{
				`2026-11-26T16:48:51.204Z ERROR 1 --- [tracker] [ntainer#0-1-C-1] c.a.t.EventListener       : event events-4@1882210 failed (attempt 3871), retrying in 5000 ms`,
				"Caused by: com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type `com.acme.Status` from String \"RETURNED\": not one of the values accepted for Enum class: [CREATED, DELIVERED]",
			}, true},
		{"Python consumer, retry n/m, strptime",
			[]string{
				`2026-11-26 16:01:34,770 WARNING consumer: orders[3]@88402216 retry 1/50 after error`,
				`2026-11-26 16:02:34,770 WARNING consumer: orders[3]@88402216 retry 2/50 after error`,
			},
			[]string{
				`2026-11-26 16:48:51,204 WARNING consumer: orders[3]@88402216 retry 49/50 after error`,
				`ValueError: time data '2026-11-25T06:00:00.000+0000' does not match format '%Y-%m-%dT%H:%M:%SZ'`,
			}, true},
		{"Go consumer, attempt=N, encoding/json on the message",
			[]string{
				`time=2026-11-26T16:01:34Z level=WARN msg="handle message" topic=payments partition=2 offset=77120 attempt=1`,
				`time=2026-11-26T16:02:34Z level=WARN msg="handle message" topic=payments partition=2 offset=77120 attempt=2`,
			},
			[]string{
				`time=2026-11-26T16:48:51Z level=WARN msg="handle message" topic=payments partition=2 offset=77120 attempt=240`,
				`time=2026-11-26T16:48:51Z level=ERROR msg="handle message" err="decode message: json: cannot unmarshal string into Go struct field Payment.amount of type int64"`,
			}, true},
		{"no retry line: the first decode failure line",
			[]string{`2026-11-26T16:01:34Z level=INFO msg="consumer started" topic=payments`},
			[]string{`time=2026-11-26T16:48:51Z level=ERROR msg="handle message" err="decode message: json: cannot unmarshal string into Go struct field Payment.amount of type int64"`},
			false},
	}
	for _, c := range cases {
		m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
		for i, l := range c.retry {
			m.Add(win.Start.Add(time.Duration(i)*time.Minute), "tracker", MiningText(l))
		}
		late := win.Start.Add(45 * time.Minute)
		for i, l := range c.trace {
			m.Add(late.Add(time.Duration(i)*time.Second), "tracker", MiningText(l))
		}
		sets := []LogSet{{Source: "tracker", Subject: "tracker", Namespace: "shop", Origin: SrcLogs, Templates: m.Templates()}}
		found := DetectLogs(sets, win)
		decodeFailure.detect(&Gathered{Logs: sets, Window: win}, found)
		var f *Finding
		for i := range found {
			if found[i].Kind == KindDecodeFailure {
				f = &found[i]
			}
		}
		if f == nil {
			t.Errorf("%s: no decode failure in %v", c.name, found)
			continue
		}
		want := late
		if c.first {
			want = win.Start
		}
		if !f.Time.Equal(want) {
			t.Errorf("%s: onset %s, want %s", c.name, f.Time, want)
		}
		if c.first && (!strings.Contains(f.Summary, "first attempt at "+hm(win.Start)) || len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0], "first failed on the record")) {
			t.Errorf("%s: summary %q, evidence %q do not start at the first attempt", c.name, f.Summary, f.Evidence)
		}
	}
}
