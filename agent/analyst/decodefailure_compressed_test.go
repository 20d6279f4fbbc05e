package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDecodeFailureCompressedValue reads a value that begins with gzip's
// magic bytes as each runtime reports it, follows the data store the
// reader names to the other service that names it too (its writer) and
// that writer's change, and says the value is compressed.
func TestDecodeFailureCompressedValue(t *testing.T) {
	writerLine := `2026-11-21T13:41:28.000Z  INFO 1 --- [pricing] [main] c.a.p.cache.CacheConfig : cache: redis offers-cache.shop.svc:6379 prefix=offer:v2: codec=GzipJsonRedisSerializer(minSize=1024)`
	cases := []struct {
		name    string
		reader  []string
		writer  string
		compres bool
	}{
		{"Node JSON.parse in a pino line", []string{
			`{"level":30,"time":1795273810120,"msg":"redis connected","url":"redis://offers-cache.shop.svc:6379","keyPrefix":"offer:v2:"}`,
			`{"level":50,"time":1795282166705,"msg":"offer lookup failed","err":{"type":"SyntaxError","message":"Unexpected token '\u001f', \"\u001f\ufffd\b\u0000\u0000\" ... is not valid JSON"}}`,
		}, "pricing", true},
		{"Go encoding/json on a cached body", []string{
			`time=2026-11-21T13:50:00Z level=INFO msg="cache ready" addr=redis://offers-cache.shop.svc:6379/0`,
			`time=2026-11-21T13:51:02Z level=ERROR msg="read offer" key=offer:v2:991 err="invalid character '\x1f' looking for beginning of value"`,
		}, "pricing", true},
		{"Python json on bytes", []string{
			`2026-11-21 13:50:00,001 INFO cache: connecting to rediss://default@offers-cache.shop.svc:6380`,
			`2026-11-21 13:51:02,114 ERROR offers: read failed: UnicodeDecodeError: 'utf-8' codec can't decode byte 0x8b in position 1: invalid start byte`,
		}, "pricing", true},
		{"Jackson, the store named by no other service", []string{
			`2026-11-21 13:50:00.001  INFO 1 --- [main] c.a.CacheConfig : redis://offers-cache.shop.svc:6379`,
			`2026-11-21 13:51:02.114 ERROR 1 --- [nio-8080-exec-1] c.a.OfferCache : com.fasterxml.jackson.core.JsonParseException: Illegal character ((CTRL-CHAR, code 31)): only regular white space (\r, \n, \t) is allowed between tokens`,
		}, "", true},
	}
	for _, c := range cases {
		sets := []LogSet{minedSet("offers-web", false, 0, c.reader...)}
		if c.writer != "" {
			sets = append(sets, minedSet("pricing", false, 0, writerLine))
		}
		ev := &Gathered{Logs: sets, Window: win, Changes: []evidence.Change{
			{Timestamp: win.Start.Add(-time.Hour), Service: "pricing", Kind: "deploy", Revision: "4.0.0", Description: "pricing 4.0.0: smaller cache entries"},
			{Timestamp: win.Start.Add(-2 * time.Hour), Service: "offers-web", Kind: "deploy", Revision: "2.2.0", Description: "offers-web 2.2.0"},
		}}
		found := DetectLogs(sets, win)
		decodeFailure.detect(ev, found)
		var f *Finding
		for i := range found {
			if found[i].Kind == KindDecodeFailure && found[i].Subject == "offers-web" {
				f = &found[i]
			}
		}
		if f == nil {
			t.Errorf("%s: no decode failure in %v", c.name, found)
			continue
		}
		if (f.fact("decode_compressed") == "gzip") != c.compres {
			t.Errorf("%s: compressed %q", c.name, f.fact("decode_compressed"))
		}
		if f.fact("decode_source") != c.writer {
			t.Errorf("%s: source %q, want %q", c.name, f.fact("decode_source"), c.writer)
		}
		if c.writer != "" && !strings.Contains(f.fact("decode_notice"), "pricing 4.0.0") {
			t.Errorf("%s: notice %q", c.name, f.fact("decode_notice"))
		}
		h := &Hypothesis{Kind: KindDecodeFailure, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
		if d := describe(h, Scope{}); !strings.Contains(d, "gzip-compressed") {
			t.Errorf("%s: description %q", c.name, d)
		}
	}
	// A plain syntax error of a body is no compressed value.
	for _, l := range []string{`SyntaxError: Unexpected token < in JSON at position 0`, `invalid character '<' looking for beginning of value`} {
		if compressedValueRE.MatchString(l) {
			t.Errorf("%q read as a compressed value", l)
		}
	}
}

// TestDecodeFailureUpstreamNamed reads Go's encoding/json failing on a
// response type's field as a decode failure (not a config file), says
// which JSON type came where the code expects another, follows the
// service the line names as the one that answered, and does not take the
// line's own timestamp for a timestamp that failed.
func TestDecodeFailureUpstreamNamed(t *testing.T) {
	cases := []struct {
		name, line, producer string
	}{
		{"slog JSON with an upstream field", `{"time":"2026-11-22T10:19:51.586332Z","level":"ERROR","msg":"quote failed","upstream":"rates","status":200,"err":"decode rates: json: cannot unmarshal string into Go struct field RateResponse.items.amount of type float64"}`, "rates"},
		{"logfmt with peer=", `time=2026-11-22T10:19:51Z level=error msg="list items" peer=stock-api err="json: cannot unmarshal number into Go struct field ItemsReply.sku of type string"`, "stock-api"},
		{"zap console, no service named", `2026-11-22T10:19:51.586Z	ERROR	client/quotes.go:41	quote failed	{"error": "json: cannot unmarshal string into Go struct field QuoteResult.total of type int64"}`, ""},
	}
	for _, c := range cases {
		if k, _ := ClassifyLine(c.line); k != KindDecodeFailure {
			t.Errorf("%s: classified %q", c.name, k)
			continue
		}
		sets := []LogSet{minedSet("web", false, 0, c.line), minedSet("rates", false, 0, `INFO serving`), minedSet("stock-api", false, 0, `INFO serving`)}
		ev := &Gathered{Logs: sets, Window: win, Changes: []evidence.Change{
			{Timestamp: win.Start.Add(-10 * time.Minute), Service: c.producer, Kind: "deploy", Revision: "2.0.0", Description: c.producer + " 2.0.0: amounts as decimals"},
		}}
		found := DetectLogs(sets, win)
		decodeFailure.detect(ev, found)
		var f *Finding
		for i := range found {
			if found[i].Kind == KindDecodeFailure && found[i].Subject == "web" {
				f = &found[i]
			}
		}
		if f == nil {
			t.Errorf("%s: no decode failure", c.name)
			continue
		}
		if f.fact("decode_source") != c.producer || !strings.Contains(f.fact("decode_expected"), "where its code expects") || f.fact("decode_time") != "" {
			t.Errorf("%s: source %q expected %q time %q", c.name, f.fact("decode_source"), f.fact("decode_expected"), f.fact("decode_time"))
		}
	}
}

// TestDecodeFailureContractSkew reads a protobuf message that no longer
// parses as each runtime reports it, and follows it to the service whose
// change names the contract package at another version than the one the
// reader says it was built with.
func TestDecodeFailureContractSkew(t *testing.T) {
	build := map[string]string{
		"zap JSON":    `{"level":"info","msg":"dependencies","pricing_proto":"github.com/acme/pricing-proto v1.12.0"}`,
		"logfmt":      `level=info msg="build info" deps="pricing-proto@1.12.0 grpc@1.68.0"`,
		"Java banner": `INFO  c.a.Main : contracts: pricing-proto 1.12.0, orders-schema 4.1.0`,
	}
	fails := map[string]string{
		"zap JSON":    `{"level":"error","msg":"pricing quote failed","error":"rpc error: code = Internal desc = grpc: failed to unmarshal the received message: proto: cannot parse invalid wire-format data"}`,
		"logfmt":      `level=error msg="quote" err="grpc: failed to unmarshal the received message: proto: cannot parse invalid wire-format data"`,
		"Java banner": `ERROR c.a.QuoteClient : com.google.protobuf.InvalidProtocolBufferException: Protocol message contained an invalid tag (zero).`,
	}
	for name, b := range build {
		sets := []LogSet{minedSet("checkout", false, 0, b, fails[name])}
		ev := &Gathered{Logs: sets, Window: win, Changes: []evidence.Change{
			{Timestamp: win.Start.Add(-time.Hour), Service: "search", Kind: "deploy", Description: "search 2.0.0: uses pricing-proto v1.12.0"},
			{Timestamp: win.Start.Add(-30 * time.Minute), Service: "pricing", Kind: "deploy", Revision: "3.8.0", Description: "pricing 3.8.0: campaign badges (pricing-proto v1.13.0)"},
		}}
		found := DetectLogs(sets, win)
		decodeFailure.detect(ev, found)
		var f *Finding
		for i := range found {
			if found[i].Kind == KindDecodeFailure {
				f = &found[i]
			}
		}
		if f == nil {
			t.Errorf("%s: no decode failure in %v", name, found)
			continue
		}
		if f.fact("decode_source") != "pricing" || !strings.Contains(f.fact("decode_contract"), "1.12.0") || !strings.Contains(f.fact("decode_contract"), "1.13.0") {
			t.Errorf("%s: source %q contract %q", name, f.fact("decode_source"), f.fact("decode_contract"))
		}
	}
}
