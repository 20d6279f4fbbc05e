// Package openapitest checks real HTTP exchanges against rootcause's
// OpenAPI document (server/openapi.json) with kin-openapi, so the document
// cannot drift from the handlers. It is used by the server tests (every
// response of the test harness) and by the end-to-end tests (every
// response of the real binary).
//
// It lives apart from package server so the production binary does not
// link kin-openapi, and it does not import server so that server's own
// tests can use it: callers pass the document's bytes
// (server.OpenAPIDocument()).
//
// The document is OpenAPI 3.1.0. kin-openapi v0.152 loads 3.1 documents and,
// for them, validates schemas with a JSON Schema 2020-12 validator, so type
// arrays (["string", "null"]), const and oneOf are checked as written; no
// transformation to 3.0 is needed.
package openapitest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

func init() {
	// Bodies the document declares as plain strings.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
}

// StatusClientClosedRequest (499) is logged only; nobody reads its body.
const statusClientClosedRequest = 499

// Checker validates exchanges against one document. It is safe for
// concurrent use.
type Checker struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router

	mu      sync.Mutex
	checked map[string]map[int]int // "METHOD /path" -> status -> count
	checks  int
}

// Load parses and validates the document, and builds a router from it.
func Load(doc []byte) (*openapi3.T, routers.Router, error) {
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if err := d.Validate(context.Background()); err != nil {
		return nil, nil, fmt.Errorf("invalid OpenAPI document: %w", err)
	}
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		return nil, nil, fmt.Errorf("building a router from the OpenAPI document: %w", err)
	}
	return d, r, nil
}

// loaded memoizes Load per document, since every harness builds a Checker.
var loaded sync.Map // string(doc) -> *loadResult

type loadResult struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// New returns a Checker for doc; an unusable document fails t at once.
func New(t testing.TB, doc []byte) *Checker {
	t.Helper()
	v, _ := loaded.LoadOrStore(string(doc), &loadResult{})
	lr := v.(*loadResult)
	lr.once.Do(func() { lr.doc, lr.router, lr.err = Load(doc) })
	if lr.err != nil {
		t.Fatal(lr.err)
	}
	return &Checker{t: t, doc: lr.doc, router: lr.router, checked: map[string]map[int]int{}}
}

// Doc returns the parsed document.
func (c *Checker) Doc() *openapi3.T { return c.doc }

// Check validates one exchange: the answer's status, headers and body
// against the operation the request matches. For a 2xx answer the request
// itself (parameters and body) must also match the document: the server
// accepted it, so the document must too. A request that matches no
// documented path or method must have been answered 404 or 405 with the
// Error body. reqBody is the request body that was sent (nil for none).
func (c *Checker) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	if status == statusClientClosedRequest || req.Method == http.MethodHead {
		return nil
	}
	// The router matches on the path alone; the document's server is "/".
	rq := req.Clone(context.Background())
	rq.URL.Scheme, rq.URL.Host, rq.Host = "", "", ""
	rq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(rq)
	if err != nil {
		if !errors.Is(err, routers.ErrPathNotFound) && !errors.Is(err, routers.ErrMethodNotAllowed) {
			return fmt.Errorf("%s %s: finding the route: %w", req.Method, req.URL.Path, err)
		}
		return c.checkUnrouted(req, status, header, body)
	}
	c.record(req.Method+" "+route.Path, status)

	reqInput := &openapi3filter.RequestValidationInput{
		Request:    rq,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         true,
		},
	}
	if status >= 200 && status < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), reqInput); err != nil {
			return fmt.Errorf("%s %s was answered %d but the request does not match the document: %w", req.Method, req.URL.Path, status, err)
		}
	}
	if strings.EqualFold(header.Get("Content-Encoding"), "gzip") && len(body) > 0 {
		// The document describes the content; check it decoded.
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s %s -> %d: Content-Encoding gzip but the body is not gzip: %w", req.Method, req.URL.Path, status, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("%s %s -> %d: corrupt gzip body: %w", req.Method, req.URL.Path, status, err)
		}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s -> %d does not match the document: %w\nbody: %s", req.Method, req.URL.Path, status, err, truncate(body))
	}
	return nil
}

// checkUnrouted validates the answer to a request outside the document.
func (c *Checker) checkUnrouted(req *http.Request, status int, header http.Header, body []byte) error {
	c.record("unrouted", status)
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		return fmt.Errorf("%s %s is not in the document but was answered %d (an undocumented route?)", req.Method, req.URL.Path, status)
	}
	if header.Get("X-Request-Id") == "" {
		return fmt.Errorf("%s %s -> %d: no X-Request-Id", req.Method, req.URL.Path, status)
	}
	return c.validateSchema("Error", header, body)
}

// validateSchema checks a JSON body against components/schemas/name.
func (c *Checker) validateSchema(name string, header http.Header, body []byte) error {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if mt != "application/json" {
		return fmt.Errorf("error answer with Content-Type %q", header.Get("Content-Type"))
	}
	ref := c.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("the document has no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error answer is not JSON: %w: %s", err, truncate(body))
	}
	if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("answer does not match schema %s: %w: %s", name, err, truncate(body))
	}
	return nil
}

func (c *Checker) record(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	if c.checked[op] == nil {
		c.checked[op] = map[int]int{}
	}
	c.checked[op][status]++
}

// Checked returns how many exchanges were validated, per operation
// ("METHOD /path" as in the document, or "unrouted") and status.
func (c *Checker) Checked() map[string]map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[int]int, len(c.checked))
	for k, v := range c.checked {
		m := make(map[int]int, len(v))
		for s, n := range v {
			m[s] = n
		}
		out[k] = m
	}
	return out
}

// Count returns the number of exchanges checked.
func (c *Checker) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks
}

// Summary lists the checked operations and statuses, for test logs.
func (c *Checker) Summary() string {
	m := c.Checked()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		st := make([]int, 0, len(m[k]))
		for s := range m[k] {
			st = append(st, s)
		}
		sort.Ints(st)
		fmt.Fprintf(&sb, "%s %v\n", k, st)
	}
	return sb.String()
}

// Transport returns a RoundTripper that sends through base (nil:
// http.DefaultTransport) and reports every exchange that does not match
// the document with t.Errorf. Streaming answers (text/event-stream) are
// read whole before they are returned, so use it only for streams that
// end.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

type transport struct {
	c    *Checker
	base http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := tr.c.Check(req, reqBody, resp.StatusCode, resp.Header, body); err != nil {
		tr.c.t.Errorf("OpenAPI contract: %v", err)
	}
	return resp, nil
}

// Middleware wraps h: every answer it writes is recorded and checked
// (failures go to t.Errorf) after h returns.
func (c *Checker) Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(body)
		if err := c.Check(r, reqBody, res.StatusCode, res.Header, body); err != nil {
			c.t.Errorf("OpenAPI contract: %v", err)
		}
	})
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}
