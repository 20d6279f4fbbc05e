// Package otlpjson reads and writes traces in OTLP/JSON: one
// ExportTraceServiceRequest ({"resourceSpans": [...]}) per document, as the
// OpenTelemetry Collector's file exporter writes it (ids as hex strings,
// 64-bit integers as decimal strings). Decoding is lenient where real
// producers differ: numbers or strings for 64-bit integers and enums, enum
// names ("SPAN_KIND_SERVER"), base64 ids (Tempo), Tempo's "batches" and the
// older "instrumentationLibrarySpans".
package otlpjson

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Request is an ExportTraceServiceRequest.
type Request struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
	// Batches is Tempo's name for resourceSpans (its v1 trace API).
	Batches []ResourceSpans `json:"batches,omitempty"`
}

// ResourceSpans is the spans of one resource (a process, pod or service).
type ResourceSpans struct {
	Resource   Resource     `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans"`
	// ILS is the pre-1.0 name of scopeSpans.
	ILS []ScopeSpans `json:"instrumentationLibrarySpans,omitempty"`
}

// Resource carries the resource attributes.
type Resource struct {
	Attributes []KeyValue `json:"attributes,omitempty"`
}

// ScopeSpans is the spans of one instrumentation scope.
type ScopeSpans struct {
	Scope *Scope     `json:"scope,omitempty"`
	Spans []SpanJSON `json:"spans"`
}

// Scope names an instrumentation scope.
type Scope struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// SpanJSON is one span as OTLP/JSON spells it.
type SpanJSON struct {
	TraceID      string     `json:"traceId"`
	SpanID       string     `json:"spanId"`
	ParentSpanID string     `json:"parentSpanId,omitempty"`
	Name         string     `json:"name"`
	Kind         Enum       `json:"kind"`
	Start        Uint64     `json:"startTimeUnixNano"`
	End          Uint64     `json:"endTimeUnixNano"`
	Attributes   []KeyValue `json:"attributes,omitempty"`
	Status       Status     `json:"status"`
}

// Status is a span status; code 2 is ERROR.
type Status struct {
	Code    Enum   `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// KeyValue is one attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is an attribute value; exactly one field is set.
type AnyValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    *Int64      `json:"intValue,omitempty"`
	DoubleValue *float64    `json:"doubleValue,omitempty"`
	BytesValue  *string     `json:"bytesValue,omitempty"`
	ArrayValue  *ArrayValue `json:"arrayValue,omitempty"`
	KvlistValue *KvList     `json:"kvlistValue,omitempty"`
}

// ArrayValue is an array attribute value.
type ArrayValue struct {
	Values []AnyValue `json:"values"`
}

// KvList is a map attribute value.
type KvList struct {
	Values []KeyValue `json:"values"`
}

// Uint64 is a 64-bit unsigned integer written as a decimal string and read
// from a string or a number.
type Uint64 uint64

// UnmarshalJSON accepts "123" and 123.
func (u *Uint64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "" || s == "null" {
		*u = 0
		return nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want an unsigned integer, got %s", b)
	}
	*u = Uint64(v)
	return nil
}

// MarshalJSON writes a decimal string.
func (u Uint64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(u), 10) + `"`), nil
}

// Int64 is a 64-bit integer written as a decimal string and read from a
// string or a number.
type Int64 int64

// UnmarshalJSON accepts "-12" and -12.
func (i *Int64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want an integer, got %s", b)
	}
	*i = Int64(v)
	return nil
}

// MarshalJSON writes a decimal string.
func (i Int64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(i), 10) + `"`), nil
}

// Enum is an OTLP enum: a number, or its name as protojson also accepts.
type Enum int

var enumNames = map[string]int{
	"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
	"SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
	"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2,
}

// UnmarshalJSON accepts 2, "2" and "SPAN_KIND_SERVER".
func (e *Enum) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if v, ok := enumNames[s]; ok {
		*e = Enum(v)
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 100 {
		return fmt.Errorf("want an enum number or name, got %s", b)
	}
	*e = Enum(v)
	return nil
}

// Spans calls fn with each span of the request, flattened (Decode does
// the same from the JSON text, faster).
func (req *Request) Spans(fn func(*evidence.Span) error) error {
	for _, list := range [][]ResourceSpans{req.ResourceSpans, req.Batches} {
		for i := range list {
			rs := &list[i]
			var svc, pod, ns, node string
			for _, kv := range rs.Resource.Attributes {
				switch kv.Key {
				case "service.name":
					svc = kv.Value.String()
				case "k8s.pod.name":
					pod = kv.Value.String()
				case "k8s.namespace.name":
					ns = kv.Value.String()
				case "k8s.node.name":
					node = kv.Value.String()
				}
			}
			for _, scopes := range [][]ScopeSpans{rs.ScopeSpans, rs.ILS} {
				for j := range scopes {
					for k := range scopes[j].Spans {
						sp, err := scopes[j].Spans[k].flatten()
						if err != nil {
							return err
						}
						sp.Service, sp.Pod, sp.Namespace, sp.Node = svc, pod, ns, node
						if err := fn(sp); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

func (s *SpanJSON) flatten() (*evidence.Span, error) {
	tid, ok := ID(s.TraceID, 16)
	if !ok {
		return nil, fmt.Errorf("span %q: traceId %q is not a 16-byte hex id", s.Name, s.TraceID)
	}
	sid, ok := ID(s.SpanID, 8)
	if !ok {
		return nil, fmt.Errorf("span %q: spanId %q is not an 8-byte hex id", s.Name, s.SpanID)
	}
	var pid string
	if s.ParentSpanID != "" {
		if pid, ok = ID(s.ParentSpanID, 8); !ok {
			return nil, fmt.Errorf("span %q: parentSpanId %q is not an 8-byte hex id", s.Name, s.ParentSpanID)
		}
		if pid == "0000000000000000" {
			pid = ""
		}
	}
	if s.End < s.Start {
		return nil, fmt.Errorf("span %s %q ends before it starts", sid, s.Name)
	}
	sp := &evidence.Span{
		TraceID:       tid,
		SpanID:        sid,
		ParentSpanID:  pid,
		Name:          s.Name,
		Kind:          int(s.Kind),
		Start:         time.Unix(0, int64(s.Start)).UTC(),
		End:           time.Unix(0, int64(s.End)).UTC(),
		Error:         s.Status.Code == 2,
		StatusMessage: s.Status.Message,
	}
	if len(s.Attributes) > 0 {
		sp.Attributes = make(map[string]string, len(s.Attributes))
		for _, kv := range s.Attributes {
			sp.Attributes[kv.Key] = kv.Value.String()
		}
	}
	return sp, nil
}

// ID normalises a trace (n = 16) or span (n = 8) id to lowercase hex: hex
// as OTLP/JSON writes it, or base64 as protobuf's JSON mapping (Tempo)
// does. An all-zero span id is valid (it reads as "no parent").
func ID(s string, n int) (string, bool) {
	if len(s) == 2*n && isHex(s) {
		return strings.ToLower(s), true
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == n {
		return hex.EncodeToString(b), true
	}
	return "", false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// String renders the value as text: strings as they are, numbers in
// decimal, arrays and maps as JSON.
func (v AnyValue) String() string {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return strconv.FormatBool(*v.BoolValue)
	case v.IntValue != nil:
		return strconv.FormatInt(int64(*v.IntValue), 10)
	case v.DoubleValue != nil:
		return strconv.FormatFloat(*v.DoubleValue, 'g', -1, 64)
	case v.BytesValue != nil:
		return *v.BytesValue
	case v.ArrayValue != nil:
		parts := make([]string, len(v.ArrayValue.Values))
		for i, x := range v.ArrayValue.Values {
			parts[i] = x.String()
		}
		b, _ := json.Marshal(parts)
		return string(b)
	case v.KvlistValue != nil:
		m := make(map[string]string, len(v.KvlistValue.Values))
		for _, kv := range v.KvlistValue.Values {
			m[kv.Key] = kv.Value.String()
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	return ""
}

// Encode groups spans by resource (service, pod, namespace, node) into one
// ExportTraceServiceRequest. Attributes are written as strings.
func Encode(spans []evidence.Span) *Request {
	type resKey struct{ svc, pod, ns, node string }
	idx := map[resKey]int{}
	req := &Request{ResourceSpans: []ResourceSpans{}}
	for i := range spans {
		s := &spans[i]
		k := resKey{s.Service, s.Pod, s.Namespace, s.Node}
		j, ok := idx[k]
		if !ok {
			j = len(req.ResourceSpans)
			idx[k] = j
			var attrs []KeyValue
			for _, a := range [][2]string{{"service.name", k.svc}, {"k8s.pod.name", k.pod}, {"k8s.namespace.name", k.ns}, {"k8s.node.name", k.node}} {
				if a[1] != "" {
					attrs = append(attrs, KeyValue{Key: a[0], Value: AnyValue{StringValue: &a[1]}})
				}
			}
			req.ResourceSpans = append(req.ResourceSpans, ResourceSpans{
				Resource:   Resource{Attributes: attrs},
				ScopeSpans: []ScopeSpans{{Scope: &Scope{Name: "rootcause"}}},
			})
		}
		ss := &req.ResourceSpans[j].ScopeSpans[0]
		js := SpanJSON{
			TraceID:      s.TraceID,
			SpanID:       s.SpanID,
			ParentSpanID: s.ParentSpanID,
			Name:         s.Name,
			Kind:         Enum(s.Kind),
			Start:        Uint64(s.Start.UnixNano()),
			End:          Uint64(s.End.UnixNano()),
			Status:       Status{Message: s.StatusMessage},
		}
		if s.Error {
			js.Status.Code = 2
		}
		keys := make([]string, 0, len(s.Attributes))
		for k := range s.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := s.Attributes[k]
			js.Attributes = append(js.Attributes, KeyValue{Key: k, Value: AnyValue{StringValue: &v}})
		}
		ss.Spans = append(ss.Spans, js)
	}
	return req
}

// WriteLines writes spans as OTLP/JSON lines of at most perLine spans each
// (0: 500), the form of a bundle's traces/*.jsonl.
func WriteLines(w io.Writer, spans []evidence.Span, perLine int) error {
	if perLine <= 0 {
		perLine = 500
	}
	for i := 0; i < len(spans); i += perLine {
		b, err := json.Marshal(Encode(spans[i:min(i+perLine, len(spans))]))
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// MarshalJSON writes the enum as a number.
func (e Enum) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(int(e))), nil }

var errEmpty = errors.New("empty document")

// Unwrap returns the request inside a Jaeger api/v3 answer ({"result":
// {...}}), or data itself when it is not wrapped.
func Unwrap(data []byte) ([]byte, error) {
	var w struct {
		Result json.RawMessage `json:"result"`
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmpty
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	if len(w.Result) > 0 {
		return w.Result, nil
	}
	return data, nil
}

// Export writes every span of [start, end) that tr yields as OTLP/JSON
// lines of at most 500 spans (a bundle's traces/*.jsonl) and returns the
// bytes written. Memory stays bounded by one line.
func Export(ctx context.Context, tr evidence.Traces, start, end time.Time, w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	batch := make([]evidence.Span, 0, 500)
	flush := func() error {
		err := WriteLines(cw, batch, 500)
		batch = batch[:0]
		return err
	}
	err := tr.ScanSpans(ctx, start, end, func(s *evidence.Span) error {
		batch = append(batch, *s)
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
