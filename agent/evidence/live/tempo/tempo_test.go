package tempo

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// No Tempo can be had here (the Go module proxy refuses github.com/grafana/
// tempo and Debian does not package it), so these tests run the client
// against a loopback stand-in that answers Tempo's documented routes in
// Tempo's JSON forms: search hits with leading zeros of ids trimmed,
// traces as "batches" with base64 ids and enum names (gogo/protobuf's JSON),
// scoped tag values. It evaluates the TraceQL filters the client sends.
type fakeTempo struct {
	spans    []evidence.Span
	requests []string
}

var reCond = regexp.MustCompile(`^(resource\.service\.name|name) = ("(?:[^"\\]|\\.)*")$|^duration >= (\S+)$|^status = error$`)

// match evaluates the client's TraceQL: { c1 && c2 ... } on one span.
func match(t *testing.T, q string, s evidence.Span) bool {
	q = strings.TrimSpace(q)
	if q == "{}" {
		return true
	}
	if !strings.HasPrefix(q, "{ ") || !strings.HasSuffix(q, " }") {
		t.Fatalf("unexpected TraceQL %q", q)
	}
	for _, c := range strings.Split(q[2:len(q)-2], " && ") {
		m := reCond.FindStringSubmatch(c)
		if m == nil {
			t.Fatalf("unexpected TraceQL condition %q", c)
		}
		switch {
		case m[1] != "":
			var v string
			if err := json.Unmarshal([]byte(m[2]), &v); err != nil {
				t.Fatal(err)
			}
			if m[1] == "name" && s.Name != v || m[1] != "name" && s.Service != v {
				return false
			}
		case m[3] != "":
			d, err := time.ParseDuration(m[3])
			if err != nil {
				t.Fatal(err)
			}
			if s.Duration() < d {
				return false
			}
		default:
			if !s.Error {
				return false
			}
		}
	}
	return true
}

func (f *fakeTempo) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	unix := func(r *http.Request, k string) time.Time {
		v := r.URL.Query().Get(k)
		if v == "" {
			return time.Time{}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q", k, v)
		}
		return time.Unix(n, 0)
	}
	overlaps := func(r *http.Request, s evidence.Span) bool {
		st, en := unix(r, "start"), unix(r, "end")
		return (st.IsZero() || !s.End.Before(st)) && (en.IsZero() || !s.Start.After(en))
	}
	mux.HandleFunc("GET /api/v2/search/tag/resource.service.name/values", func(w http.ResponseWriter, r *http.Request) {
		type tv struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		}
		out := []tv{}
		for _, s := range f.spans {
			if overlaps(r, s) && !slices.Contains(out, tv{"string", s.Service}) {
				out = append(out, tv{"string", s.Service})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"tagValues": out, "metrics": map[string]any{}})
	})
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		type hit struct {
			TraceID           string `json:"traceID"`
			RootServiceName   string `json:"rootServiceName"`
			RootTraceName     string `json:"rootTraceName"`
			StartTimeUnixNano string `json:"startTimeUnixNano"`
			DurationMs        int64  `json:"durationMs"`
		}
		byTrace := map[string][]evidence.Span{}
		for _, s := range f.spans {
			byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
		}
		hits := []hit{}
		for id, spans := range byTrace {
			ok := false
			for _, s := range spans {
				if overlaps(r, s) && match(t, q, s) {
					ok = true
				}
			}
			if !ok || len(hits) == limit {
				continue
			}
			sum := evidence.Summarize(spans)
			root, _ := strings.CutPrefix(sum.Root, spans[0].Service+": ")
			hits = append(hits, hit{
				TraceID: strings.TrimLeft(id, "0"), RootServiceName: strings.Split(sum.Root, ": ")[0], RootTraceName: root,
				StartTimeUnixNano: strconv.FormatInt(sum.Start.UnixNano(), 10), DurationMs: sum.Duration.Milliseconds(),
			})
		}
		json.NewEncoder(w).Encode(map[string]any{"traces": hits, "metrics": map[string]any{"inspectedTraces": len(byTrace)}})
	})
	mux.HandleFunc("GET /api/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.requests = append(f.requests, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Scope-OrgID"))
		var spans []evidence.Span
		for _, s := range f.spans {
			if s.TraceID == r.PathValue("id") {
				spans = append(spans, s)
			}
		}
		if len(spans) == 0 {
			http.Error(w, "trace not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(tempoJSON(t, spans))
	})
	return mux
}

// tempoJSON writes spans as Tempo's /api/traces answer: {"batches": ...}
// with base64 ids and enum names.
func tempoJSON(t *testing.T, spans []evidence.Span) []byte {
	req := otlpjson.Encode(spans)
	b, err := json.Marshal(map[string]any{"batches": req.ResourceSpans})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	b64 := func(h string) string {
		raw, _ := hex.DecodeString(h)
		return base64.StdEncoding.EncodeToString(raw)
	}
	kinds := []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}
	for _, rs := range doc["batches"].([]any) {
		for _, ss := range rs.(map[string]any)["scopeSpans"].([]any) {
			for _, sp := range ss.(map[string]any)["spans"].([]any) {
				m := sp.(map[string]any)
				for _, k := range []string{"traceId", "spanId", "parentSpanId"} {
					if v, ok := m[k].(string); ok && v != "" {
						m[k] = b64(v)
					}
				}
				m["kind"] = kinds[int(m["kind"].(float64))]
				if st, ok := m["status"].(map[string]any); ok && st["code"] != nil {
					st["code"] = "STATUS_CODE_ERROR"
				}
			}
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConformanceAgainstStandIn(t *testing.T) {
	f := &fakeTempo{spans: evidencetest.TraceFixture()}
	srv := httptest.NewServer(f.handler(t))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, HTTP: srv.Client(), Headers: map[string]string{"Authorization": "Bearer s3cret-key", "X-Scope-OrgID": "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	evidencetest.RunTraces(t, c)
	if len(f.requests) == 0 || f.requests[0] != "Bearer s3cret-key|shop" {
		t.Errorf("headers sent: %v", f.requests)
	}
}

func TestTraceQL(t *testing.T) {
	for _, c := range []struct {
		q    evidence.TraceQuery
		want string
	}{
		{evidence.TraceQuery{}, "{}"},
		{evidence.TraceQuery{Service: "cart"}, `{ resource.service.name = "cart" }`},
		{evidence.TraceQuery{Service: `we"ird`, Operation: "GET /", MinDuration: 1500 * time.Millisecond, ErrorOnly: true},
			`{ resource.service.name = "we\"ird" && name = "GET /" && duration >= 1.5s && status = error }`},
	} {
		if got := TraceQL(c.q); got != c.want {
			t.Errorf("TraceQL(%+v) = %s, want %s", c.q, got, c.want)
		}
	}
}

func TestErrorsScrubSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/search/tag/"):
			w.Write([]byte(`{"tagValues": ["b", "a", ""]}`)) // Tempo before 2.1
		case strings.HasPrefix(r.URL.Path, "/api/v2/"):
			http.NotFound(w, r)
		default:
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"error": "upstream said: bad token %s"}`, r.Header.Get("Authorization"))
		}
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/", HTTP: srv.Client(), Headers: map[string]string{"Authorization": "Bearer s3cret-key"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Services(t.Context(), time.Time{}, time.Time{})
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Errorf("v1 tag values: %v %v", got, err)
	}
	_, err = c.FindTraces(t.Context(), evidence.TraceQuery{})
	if evidence.CodeOf(err) != evidence.CodeUnavailable || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("error %v: want unavailable with the key scrubbed", err)
	}
}
