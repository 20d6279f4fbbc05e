package apiclient

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestNewBackend(t *testing.T) {
	hc := &http.Client{}
	for _, c := range []struct {
		name     string
		cfg      Config
		wantScan int
		wantCode string
	}{
		{"default scan", Config{URL: "http://jaeger:16686", HTTP: hc}, 500, ""},
		{"scan set", Config{URL: "http://tempo:3200/base", HTTP: hc, ScanTraces: 7}, 7, ""},
		{"scan capped", Config{URL: "http://tempo:3200", HTTP: hc, ScanTraces: evidence.MaxTraceLimit + 1}, evidence.MaxTraceLimit, ""},
		{"no scheme", Config{URL: "tempo:3200", HTTP: hc}, 0, evidence.CodeInvalid},
		{"no client", Config{URL: "http://tempo:3200"}, 0, evidence.CodeInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := NewBackend("tempo", c.cfg, 500)
			if c.wantCode != "" {
				if evidence.CodeOf(err) != c.wantCode || evidence.SourceOf(err) != "tempo" {
					t.Fatalf("error %v, want %s from tempo", err, c.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.ScanTraces != c.wantScan || b.API.Source != "tempo" {
				t.Errorf("scan %d source %q, want %d tempo", b.ScanTraces, b.API.Source, c.wantScan)
			}
		})
	}
}

func TestTraceID(t *testing.T) {
	b, err := NewBackend("jaeger", Config{URL: "http://jaeger:16686", HTTP: &http.Client{}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		" 0AF7651916CD43DD8448EB211C80319C ": "0af7651916cd43dd8448eb211c80319c",
		"0af7651916cd43dd8448eb211c80319c":   "0af7651916cd43dd8448eb211c80319c",
		"0af7651916cd43dd":                   "",
		"not-hex-not-hex-not-hex-not-hex!":   "",
	} {
		got, err := b.TraceID(in)
		if want == "" {
			if evidence.CodeOf(err) != evidence.CodeInvalid {
				t.Errorf("%q: %q %v, want invalid", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}

func TestScan(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	span := func(trace, id string, at time.Duration) evidence.Span {
		return evidence.Span{TraceID: trace, SpanID: id, Start: t0.Add(at), End: t0.Add(at + time.Second)}
	}
	traces := [][]evidence.Span{
		{span("a", "1", -time.Minute), span("a", "2", 0), span("a", "3", time.Minute)},
		{span("b", "4", 30*time.Second)},
		{span("a", "2", 0)}, // a again, from another service's search
	}
	var got []string
	stopAt := ""
	s := Scan{Start: t0, End: t0.Add(time.Minute), Fn: func(sp *evidence.Span) error {
		if sp.SpanID == stopAt {
			return evidence.ErrStop
		}
		got = append(got, sp.SpanID)
		return nil
	}}
	for _, tr := range traces {
		if s.Seen(tr[0].TraceID) {
			continue
		}
		if err := s.Spans(tr); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"2", "4"}) {
		t.Errorf("spans passed %v, want each trace once, in the window", got)
	}

	stopAt = "4"
	s = Scan{Start: t0, End: t0.Add(time.Minute), Fn: s.Fn}
	err := s.Spans(traces[1])
	if !errors.Is(err, evidence.ErrStop) || Done(err) != nil {
		t.Errorf("stop: %v, Done %v", err, Done(err))
	}
	boom := errors.New("boom")
	if Done(boom) != boom || Done(nil) != nil {
		t.Error("Done changes other results")
	}
}

func TestHeaderSecretsAndRedact(t *testing.T) {
	secrets := HeaderSecrets(map[string]string{"Authorization": "Bearer tok-123456", "X-Scope-OrgID": "acme", "X-Key": "k-abcdefgh"})
	if want := []string{"Bearer tok-123456", "k-abcdefgh", "tok-123456"}; !slices.Equal(secrets, want) {
		t.Errorf("secrets %q, want %q (longest first; short values and schemes alone are not secrets)", secrets, want)
	}
	for in, want := range map[string]string{
		"denied: Bearer tok-123456":   "denied: [REDACTED]",
		"token tok-123456 is revoked": "token [REDACTED] is revoked",
		"key k-abcdefgh for acme":     "key [REDACTED] for acme",
		"nothing secret":              "nothing secret",
	} {
		if got := Redact(in, secrets); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
