package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/secretref"
)

// maxDiscoveryBytes bounds a GET /tools answer.
const maxDiscoveryBytes = 4 << 20

// httpConn speaks the plain HTTP contract (spec 4.7):
//
//	GET  {url}/tools         → {"tools": [{name, description, parameters}]} or a bare array
//	POST {url}/tools/{name}  ← {"parameters": {...}}  → any JSON
//	GET  {url}/health        → any 2xx
type httpConn struct {
	def      Definition
	base     string
	client   *http.Client
	resolver secretref.Resolver
	maxOut   int
}

func newHTTPConn(def Definition, client *http.Client, res secretref.Resolver, maxOut int) (conn, error) {
	u, err := url.Parse(def.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tool server %q: url must be an http or https URL", def.Name)
	}
	return &httpConn{def: def, base: strings.TrimRight(def.URL, "/"), client: client, resolver: res, maxOut: maxOut}, nil
}

func (c *httpConn) close() error { return nil }

func (c *httpConn) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	headers, err := resolveAll(ctx, c.resolver, c.def.Headers, "headers")
	if err != nil {
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeUnavailable, Err: err}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, &transportError{fmt.Errorf("%s %s: %w", method, path, unwrapURL(err))}
	}
	return resp, nil
}

// unwrapURL drops *url.Error's quoting of the whole URL (it may carry
// credentials in a query) while keeping the cause.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

type httpToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	InputSchema json.RawMessage `json:"input_schema"`
	InputCamel  json.RawMessage `json:"inputSchema"`
	ReadOnly    *bool           `json:"read_only"`
	Destructive *bool           `json:"destructive"`
}

func (c *httpConn) list(ctx context.Context) ([]ToolInfo, error) {
	resp, err := c.do(ctx, http.MethodGet, "/tools", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes+1))
	if err != nil {
		return nil, &transportError{fmt.Errorf("GET /tools: reading the answer: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /tools answered %s: %s", resp.Status, snippet(body))
	}
	if len(body) > maxDiscoveryBytes {
		return nil, fmt.Errorf("GET /tools answered more than %d bytes", maxDiscoveryBytes)
	}
	var defs []httpToolDef
	trimmed := bytes.TrimSpace(body)
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		err = json.Unmarshal(trimmed, &defs)
	case bytes.HasPrefix(trimmed, []byte("{")):
		var wrap struct {
			Tools *[]httpToolDef `json:"tools"`
		}
		err = json.Unmarshal(trimmed, &wrap)
		if err == nil && wrap.Tools == nil {
			err = errors.New(`the object has no "tools" array`)
		}
		if wrap.Tools != nil {
			defs = *wrap.Tools
		}
	default:
		err = errors.New("not JSON")
	}
	if err != nil {
		return nil, fmt.Errorf(`GET /tools: want {"tools": [{"name", "description", "parameters"}]} or a JSON array of tools: %v (answer starts %s)`, err, snippet(body))
	}
	infos := make([]ToolInfo, 0, len(defs))
	for _, d := range defs {
		params := d.Parameters
		if len(params) == 0 {
			params = d.InputSchema
		}
		if len(params) == 0 {
			params = d.InputCamel
		}
		ro := true
		if (d.ReadOnly != nil && !*d.ReadOnly) || (d.Destructive != nil && *d.Destructive) {
			ro = false
		}
		infos = append(infos, ToolInfo{Name: d.Name, Description: d.Description, Parameters: params, ReadOnly: ro})
	}
	return parseToolList(c.def.Name, infos)
}

func (c *httpConn) call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(map[string]json.RawMessage{"parameters": args})
	if err != nil {
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeInvalid, Err: fmt.Errorf("arguments are not JSON: %w", err)}
	}
	path := "/tools/" + url.PathEscape(tool)
	resp, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxOut)+1))
	if err != nil {
		return nil, &transportError{fmt.Errorf("POST %s: the connection broke while reading the answer: %w", path, err)}
	}
	truncated := len(out) > c.maxOut
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeUnavailable,
			Err: fmt.Errorf("%w: the server listed tool %q but POST %s answered 404 (%s); its tool list will be re-read", errToolMissing, tool, path, snippet(out))}
	case resp.StatusCode >= 500:
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeUnavailable,
			Err: fmt.Errorf("POST %s answered %s: %s", path, resp.Status, errorText(out))}
	case resp.StatusCode >= 400:
		// The arguments or the request were refused: the agent can read
		// why and try again.
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeInvalid,
			Err: fmt.Errorf("tool %s refused the call (%s): %s", tool, resp.Status, errorText(out))}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeUnavailable,
			Err: fmt.Errorf("POST %s answered %s", path, resp.Status)}
	}
	if truncated {
		return &Result{Content: string(bytes.ToValidUTF8(out[:c.maxOut], nil)), Truncated: true}, nil
	}
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return nil, &evidence.Error{Source: source(c.def.Name), Code: evidence.CodeUnavailable,
			Err: fmt.Errorf("POST %s answered 200 with a body that is not JSON (Content-Type %q): %s", path, resp.Header.Get("Content-Type"), snippet(out))}
	}
	return &Result{Content: json.RawMessage(trimmed)}, nil
}

func (c *httpConn) ping(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET /health answered %s: %s", resp.Status, snippet(b))
	}
	return nil
}

// errorText extracts a message from an error body: {"error": "..."},
// {"error": {"message": "..."}}, {"message": "..."} or the raw text.
func errorText(b []byte) string {
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		switch e := m["error"].(type) {
		case string:
			return cut(e, 2000)
		case map[string]any:
			if s, ok := e["message"].(string); ok {
				return cut(s, 2000)
			}
		}
		if s, ok := m["message"].(string); ok {
			return cut(s, 2000)
		}
	}
	return snippet(b)
}

// snippet quotes the start of a body for an error message.
func snippet(b []byte) string {
	s := strings.ToValidUTF8(string(bytes.TrimSpace(b)), "?")
	if s == "" {
		return "(empty)"
	}
	return fmt.Sprintf("%q", cut(s, 200))
}
