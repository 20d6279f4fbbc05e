package mergeconf

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rootcause/rootcause/secretref"
)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the config JSON Schema (draft 2020-12), as served at
// /api/v1/config/schema. The caller gets its own copy.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// schemaURL names the embedded schema inside the compiler; nothing is
// fetched.
const schemaURL = "https://rootcause.dev/schemas/config.json"

var compiled = sync.OnceValues(func() (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("parsing schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range formats {
		c.RegisterFormat(f)
	}
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("loading schema.json: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compiling schema.json: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(schemaJSON, &raw); err != nil {
		return nil, fmt.Errorf("parsing schema.json: %w", err)
	}
	return &compiledSchema{sch: sch, root: raw}, nil
})

type compiledSchema struct {
	sch  *jsonschema.Schema
	root map[string]any // the raw document, walked for rootcause's x- keywords
}

// formats are the custom string formats schema.json uses.
var formats = []*jsonschema.Format{
	{Name: "secret-ref", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		_, err := secretref.Parse(s)
		return err
	}},
	{Name: "http-url", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		return checkHTTPURL(s)
	}},
	{Name: "webhook-url", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		return checkHTTPURL(s)
	}},
	{Name: "int", Validate: func(v any) error {
		switch x := v.(type) {
		case json.Number:
			if _, err := strconv.ParseInt(string(x), 10, 64); err != nil {
				return errors.New("not an integer literal")
			}
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return errors.New("not an integer")
			}
		}
		return nil
	}},
}

// maxURLLength bounds every URL in the config.
const maxURLLength = 2048

// checkHTTPURL accepts absolute http and https URLs with a host and without
// user info (credentials belong in secret references, never in a URL).
func checkHTTPURL(s string) error {
	if len(s) > maxURLLength {
		return fmt.Errorf("longer than %d characters", maxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("scheme must be http or https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("host missing")
	}
	if u.User != nil {
		return errors.New("user info not allowed")
	}
	return nil
}

// schemaNode is one node of the raw schema with $ref resolved: the
// referenced definition overlaid with the referencing node's own keywords.
type schemaNode map[string]any

func (c *compiledSchema) resolve(n map[string]any) schemaNode {
	ref, ok := n["$ref"].(string)
	if !ok {
		return n
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return n
	}
	defs, _ := c.root["$defs"].(map[string]any)
	target, _ := defs[name].(map[string]any)
	out := schemaNode{}
	for k, v := range c.resolve(target) {
		out[k] = v
	}
	for k, v := range n {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

// child returns the schema of member key of an object node, or nil.
func (c *compiledSchema) child(n schemaNode, key string) schemaNode {
	if props, ok := n["properties"].(map[string]any); ok {
		if p, ok := props[key].(map[string]any); ok {
			return c.resolve(p)
		}
	}
	if ap, ok := n["additionalProperties"].(map[string]any); ok {
		return c.resolve(ap)
	}
	return nil
}

// items returns the schema of an array node's items, or nil.
func (c *compiledSchema) items(n schemaNode) schemaNode {
	if it, ok := n["items"].(map[string]any); ok {
		return c.resolve(it)
	}
	return nil
}

func (n schemaNode) isArray() bool { return n["type"] == "array" }

func (n schemaNode) flag(name string) bool { b, _ := n[name].(bool); return b }

func (n schemaNode) str(name string) string { s, _ := n[name].(string); return s }

// pathInfo is what the schema says about a path in a document.
type pathInfo struct {
	known     bool       // every key along the path is in the schema
	node      schemaNode // the schema of the last key (nil when !known)
	adminOnly bool       // some key along the path is x-admin-only
	managed   bool       // some key along the path is x-managed
}

// lookup walks the schema along keys. A path that enters an array stops
// there (arrays are leaves).
func (c *compiledSchema) lookup(keys []string) pathInfo {
	n := c.resolve(c.root)
	var info pathInfo
	for _, k := range keys {
		if n.isArray() {
			break
		}
		n = c.child(n, k)
		if n == nil {
			return info
		}
		info.adminOnly = info.adminOnly || n.flag("x-admin-only")
		info.managed = info.managed || n.flag("x-managed")
	}
	info.known, info.node = true, n
	return info
}

// topLevel returns the schema of the top-level key, or nil.
func (c *compiledSchema) topLevel(key string) schemaNode {
	props, _ := c.root["properties"].(map[string]any)
	p, ok := props[key].(map[string]any)
	if !ok {
		return nil
	}
	return c.resolve(p)
}

// integrations returns the keys of tools that are integrations (the
// properties of the tools object in the schema).
func (c *compiledSchema) integrations() map[string]bool {
	tools := c.topLevel("tools")
	props, _ := tools["properties"].(map[string]any)
	out := make(map[string]bool, len(props))
	for k := range props {
		out[k] = true
	}
	return out
}

// mustCompiled returns the compiled schema; the embedded schema compiling
// is checked by the tests, so a failure here is a build defect.
func mustCompiled() *compiledSchema {
	c, err := compiled()
	if err != nil {
		panic(err)
	}
	return c
}
