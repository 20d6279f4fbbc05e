package mergeconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/rootcause/rootcause/secretref"
)

// Error codes of a FieldError; they are the API's error codes (spec 7).
const (
	CodeInvalidField = "invalid_field"    // an immutable field was in the patch
	CodeValidation   = "validation_error" // any other invalid value or key
)

// Levels of the organization tree.
const (
	LevelOrg   = "org"
	LevelGroup = "group"
	LevelTeam  = "team"
)

// FieldError is a validation failure of one field. The server maps it to
// 400 with code Code: invalid_field carries error.field, validation_error
// carries error.details {field, error: Message}. Message never contains the
// field's value (it may be a secret pasted in the wrong place).
type FieldError struct {
	Code    string
	Field   string // dotted path, keys escaped as JoinPath does
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func fieldErr(code string, keys []string, format string, args ...any) *FieldError {
	return &FieldError{Code: code, Field: JoinPath(keys...), Message: fmt.Sprintf(format, args...)}
}

// Options says who writes a document, where, and what exists around it.
// Nil functions know nothing: every tool, tool server and peer is unknown,
// except that a nil KnownIntegration knows the integrations of schema.json.
type Options struct {
	// Level is the node's level: LevelOrg, LevelGroup or LevelTeam ("" is
	// LevelTeam, the strictest).
	Level string
	// Admin reports whether the writer is an admin. Only admins may set
	// admin-only settings (contract section 3).
	Admin bool
	// KnownTool reports whether a tool exists: the built-in catalog plus
	// "server:tool" names of configured tool servers (and "a2a:<peer>").
	KnownTool func(name string) bool
	// KnownIntegration reports whether name is an integration key of tools.
	KnownIntegration func(name string) bool
	// ToolServer reports whether a tool server is configured and enabled.
	ToolServer func(name string) (exists, enabled bool)
	// PeerAgent reports whether a peer agent is defined (and enabled).
	PeerAgent func(name string) bool
	// Before is the node's own document before the write (ValidatePatch
	// sets it). Tool, tool-server and peer names already in it at the same
	// place are not judged again: what was valid when saved must not block
	// an unrelated change because a tool server is slow or gone today.
	Before map[string]any
}

// AdminOnly reports whether the setting at the dotted key path is one only
// admins may write (x-admin-only on the path in schema.json).
func AdminOnly(keys ...string) bool {
	c, err := compiled()
	if err != nil {
		return true
	}
	return c.lookup(keys).adminOnly
}

// had reports whether the list at keys in opts.Before already held name.
func (o Options) had(name string, keys ...string) bool {
	var v any = o.Before
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		v = m[k]
	}
	switch x := v.(type) {
	case []any:
		return slices.Contains(x, any(name))
	case map[string]any:
		_, ok := x[name]
		return ok
	}
	return false
}

// KnownSet returns a lookup function over names, for Options.KnownTool and
// the like.
func KnownSet(names ...string) func(string) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

// ToolServersOf returns, for Options.ToolServer, the tool servers defined
// under tool_servers in an effective config. A server is enabled unless its
// enabled is false.
func ToolServersOf(effective map[string]any) func(string) (exists, enabled bool) {
	servers, _ := effective["tool_servers"].(map[string]any)
	return func(name string) (bool, bool) {
		s, ok := servers[name].(map[string]any)
		if !ok {
			return false, false
		}
		return true, s["enabled"] != false
	}
}

// PeersOf returns, for Options.PeerAgent, the enabled peers defined under
// a2a_peers in an effective config.
func PeersOf(effective map[string]any) func(string) bool {
	peers, _ := effective["a2a_peers"].(map[string]any)
	return func(name string) bool {
		p, ok := peers[name].(map[string]any)
		return ok && p["enabled"] != false
	}
}

// ValidatePatch checks a merge patch against a node's own document and
// returns the node's new own document (MergePatch(own, patch)). In order it
// rejects: immutable keys in the patch (invalid_field); changes to keys
// rootcause manages (webhooks.signing_secret); for non-admins, changes to
// admin-only settings, env:/file: references and server paths; then
// everything Validate checks, on the new own document. Only what the patch
// changes is held to the admin rule, so a team keeps working with settings
// an admin made at its level. The returned error is a *FieldError, the
// first by field path when there are several.
func ValidatePatch(own, patch map[string]any, opts Options) (map[string]any, error) {
	c, err := compiled()
	if err != nil {
		return nil, err
	}
	if own, err = normalize(own); err != nil {
		return nil, err
	}
	if patch, err = normalize(patch); err != nil {
		return nil, &FieldError{Code: CodeValidation, Message: "config is not representable as JSON"}
	}
	if e := checkImmutable(c, patch); e != nil {
		return nil, e
	}
	if opts.Before == nil {
		opts.Before = own
	}
	next := MergePatch(own, patch)
	if e := checkChanges(c, own, next, opts, true); e != nil {
		return nil, e
	}
	if e := validateDoc(c, next, opts); e != nil {
		return nil, e
	}
	return next, nil
}

// Validate checks a whole own document of a node: the schema (types, unknown
// keys, formats, ranges), immutable keys, the level a key may be set at,
// tool, tool-server and peer names, and secret references. When
// opts.Admin is false the whole document counts as written by the caller,
// so any admin-only setting in it is rejected; use ValidatePatch for
// updates. The error is a *FieldError.
func Validate(doc map[string]any, opts Options) error {
	c, err := compiled()
	if err != nil {
		return err
	}
	if doc, err = normalize(doc); err != nil {
		return &FieldError{Code: CodeValidation, Message: "config is not representable as JSON"}
	}
	if e := checkImmutable(c, doc); e != nil {
		return e
	}
	if e := checkChanges(c, nil, doc, opts, false); e != nil {
		return e
	}
	if e := validateDoc(c, doc, opts); e != nil {
		return e
	}
	return nil
}

func checkImmutable(c *compiledSchema, doc map[string]any) *FieldError {
	for _, k := range sortedKeys(doc) {
		if n := c.topLevel(k); n != nil && n.flag("x-immutable") {
			return fieldErr(CodeInvalidField, []string{k}, "is immutable and cannot be set through the API")
		}
	}
	return nil
}

// checkChanges holds each changed leaf between old and next to the admin
// and managed rules.
func checkChanges(c *compiledSchema, old, next map[string]any, opts Options, managed bool) *FieldError {
	type leaf struct {
		keys []string
		new  any
	}
	var leaves []leaf
	diffInto(nil, old, next, func(p []string, ch Change) { leaves = append(leaves, leaf{p, ch.New}) })
	sort.Slice(leaves, func(i, j int) bool { return JoinPath(leaves[i].keys...) < JoinPath(leaves[j].keys...) })
	for _, l := range leaves {
		info := c.lookup(l.keys)
		if managed && info.managed {
			return fieldErr(CodeValidation, l.keys, "is managed by rootcause and cannot be set through the config")
		}
		if opts.Admin {
			continue
		}
		switch {
		case info.adminOnly:
			return fieldErr(CodeValidation, l.keys, "only an admin can set this")
		case info.node.str("format") == "secret-ref" && hasLocalRef(l.new):
			return fieldErr(CodeValidation, l.keys, "only an admin can set env: and file: references")
		case len(l.keys) == 2 && l.keys[0] == "knowledge_source" && hasServerPath(l.new):
			return fieldErr(CodeValidation, l.keys, "only an admin can set server paths as knowledge sources")
		}
	}
	return nil
}

func hasLocalRef(v any) bool {
	switch x := v.(type) {
	case string:
		r, err := secretref.Parse(x)
		return err == nil && r.LocalOnly()
	case []any:
		return slices.ContainsFunc(x, hasLocalRef)
	}
	return false
}

// hasServerPath reports whether a knowledge_source location list names a
// path on the server (absolute, relative, home or file: URL).
func hasServerPath(v any) bool {
	list, _ := v.([]any)
	for _, e := range list {
		s, _ := e.(string)
		if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "file:") {
			return true
		}
	}
	return false
}

// validateDoc runs the schema, then the checks JSON Schema cannot express.
func validateDoc(c *compiledSchema, doc map[string]any, opts Options) *FieldError {
	inst, err := normalize(doc)
	if err != nil {
		return &FieldError{Code: CodeValidation, Message: "config is not representable as JSON"}
	}
	if err := c.sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return &FieldError{Code: CodeValidation, Message: "config is not valid JSON"}
		}
		return c.firstError(ve)
	}
	return checkSemantics(c, inst, opts)
}

// normalize returns doc with only the types encoding/json decodes to, so
// that documents built in code ([]string, map[string]string, int) are
// validated like decoded ones. Canonical documents are returned as is.
func normalize(doc map[string]any) (map[string]any, error) {
	if canonical(doc) {
		return doc, nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	return Decode(b)
}

func canonical(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, json.Number, float64:
		return true
	case map[string]any:
		for _, e := range x {
			if !canonical(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !canonical(e) {
				return false
			}
		}
		return true
	}
	return false
}

// checkSemantics assumes doc passed the schema, so its shapes are right.
func checkSemantics(c *compiledSchema, doc map[string]any, opts Options) *FieldError {
	level := opts.Level
	if level == "" {
		level = LevelTeam
	}
	for _, k := range sortedKeys(doc) {
		n := c.topLevel(k)
		levels, ok := n["x-levels"].([]any)
		if !ok || slices.Contains(levels, any(level)) {
			continue
		}
		names := make([]string, len(levels))
		for i, l := range levels {
			names[i], _ = l.(string)
		}
		return fieldErr(CodeValidation, []string{k}, "can be set only at the %s level", strings.Join(names, " or "))
	}

	knownTool := opts.KnownTool
	if knownTool == nil {
		knownTool = func(string) bool { return false }
	}
	knownIntegration := opts.KnownIntegration
	if knownIntegration == nil {
		knownIntegration = KnownSet(sortedKeys(c.integrations())...)
	}
	integrations := c.integrations()

	agents, _ := doc["agents"].(map[string]any)
	for _, name := range sortedKeys(agents) {
		a, _ := agents[name].(map[string]any)
		for _, list := range []string{"disable_default_tools", "enable_extra_tools"} {
			items, _ := a[list].([]any)
			for _, it := range items {
				if t, _ := it.(string); !knownTool(t) && !opts.had(t, "agents", name, list) {
					return fieldErr(CodeValidation, []string{"agents", name, list}, "unknown tool %q", t)
				}
			}
		}
	}

	tools, _ := doc["tools"].(map[string]any)
	for _, k := range sortedKeys(tools) {
		if integrations[k] {
			if !knownIntegration(k) {
				return fieldErr(CodeValidation, []string{"tools", k}, "integration %q is not available", k)
			}
			continue
		}
		if !knownTool(k) && !opts.had(k, "tools") {
			return fieldErr(CodeValidation, []string{"tools", k}, "unknown integration or tool %q", k)
		}
	}

	servers, _ := doc["mcp_servers"].([]any)
	for _, it := range servers {
		name, _ := it.(string)
		if opts.had(name, "mcp_servers") {
			continue
		}
		exists, enabled := false, false
		if opts.ToolServer != nil {
			exists, enabled = opts.ToolServer(name)
		}
		switch {
		case !exists:
			return fieldErr(CodeValidation, []string{"mcp_servers"}, "tool server %q is not configured", name)
		case !enabled:
			return fieldErr(CodeValidation, []string{"mcp_servers"}, "tool server %q is disabled", name)
		}
	}

	peers, _ := doc["a2a_agents"].([]any)
	for _, it := range peers {
		name, _ := it.(string)
		if (opts.PeerAgent == nil || !opts.PeerAgent(name)) && !opts.had(name, "a2a_agents") {
			return fieldErr(CodeValidation, []string{"a2a_agents"}, "peer agent %q is not defined in a2a_peers", name)
		}
	}

	defs, _ := doc["tool_servers"].(map[string]any)
	for _, name := range sortedKeys(defs) {
		s, _ := defs[name].(map[string]any)
		transport, ok := s["transport"].(string)
		if !ok {
			continue // an override of an inherited definition
		}
		need, forbid := "url", []string{"command", "args", "env"}
		if transport == "mcp-stdio" {
			need, forbid = "command", []string{"url", "headers"}
		}
		if _, ok := s[need]; !ok {
			return fieldErr(CodeValidation, []string{"tool_servers", name, need}, "is required with transport %s", transport)
		}
		for _, f := range forbid {
			if _, ok := s[f]; ok {
				return fieldErr(CodeValidation, []string{"tool_servers", name, f}, "does not apply to transport %s", transport)
			}
		}
	}
	return nil
}

// firstError turns the schema's error tree into the FieldError of the
// smallest field path.
func (c *compiledSchema) firstError(ve *jsonschema.ValidationError) *FieldError {
	var leaves []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if _, ok := e.ErrorKind.(*kind.PropertyNames); ok || len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, ce := range e.Causes {
			walk(ce)
		}
	}
	walk(ve)
	var out []*FieldError
	for _, l := range leaves {
		out = append(out, c.convert(l))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		return out[i].Message < out[j].Message
	})
	if len(out) == 0 {
		return &FieldError{Code: CodeValidation, Message: "is invalid"}
	}
	return out[0]
}

// convert maps one schema error to a FieldError. The field is the dotted
// path of the instance location, stopping at an array (the item's index
// goes into the message). Messages are rootcause's own: the library's would
// quote the value.
func (c *compiledSchema) convert(e *jsonschema.ValidationError) *FieldError {
	loc := e.InstanceLocation
	var keys []string
	item := ""
	n := c.resolve(c.root)
	for _, k := range loc {
		if n != nil && n.isArray() {
			item = "item " + k + " "
			n = c.items(n)
			break
		}
		keys = append(keys, k)
		if n != nil {
			n = c.child(n, k)
		}
	}
	custom := ""
	if n != nil {
		custom = n.str("x-message")
	}
	msg := func(def string) string {
		if custom != "" {
			return item + custom
		}
		return item + def
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		props := slices.Sorted(slices.Values(k.Properties))
		bad := props[0]
		allowed := ""
		if ps, ok := n["properties"].(map[string]any); ok {
			allowed = "; allowed: " + strings.Join(sortedKeys(ps), ", ")
		}
		if len(keys) == 0 {
			return fieldErr(CodeValidation, []string{bad}, "unknown top-level key")
		}
		return fieldErr(CodeValidation, append(keys, bad), "unknown key%s", allowed)
	case *kind.PropertyNames:
		m := "invalid name"
		if n != nil && n.str("x-name-message") != "" {
			m = n.str("x-name-message")
		}
		return fieldErr(CodeValidation, append(keys, k.Property), "%s", m)
	case *kind.Type:
		return fieldErr(CodeValidation, keys, "%s", msg("must be "+typeNames(k.Want)))
	case *kind.Enum:
		var vals []string
		for _, w := range k.Want {
			vals = append(vals, fmt.Sprint(w))
		}
		return fieldErr(CodeValidation, keys, "%s", msg("must be one of "+strings.Join(vals, ", ")))
	case *kind.Format:
		if k.Want == "secret-ref" && k.Err != nil {
			return fieldErr(CodeValidation, keys, "%s", item+k.Err.Error())
		}
		return fieldErr(CodeValidation, keys, "%s", msg("must be a valid "+k.Want))
	case *kind.Minimum:
		return fieldErr(CodeValidation, keys, "%s", msg("must be at least "+k.Want.RatString()))
	case *kind.Maximum:
		return fieldErr(CodeValidation, keys, "%s", msg("must be at most "+k.Want.RatString()))
	case *kind.MinLength:
		return fieldErr(CodeValidation, keys, "%s", msg("must be at least "+strconv.Itoa(k.Want)+" characters"))
	case *kind.MaxLength:
		return fieldErr(CodeValidation, keys, "%s", msg("must be at most "+strconv.Itoa(k.Want)+" characters"))
	case *kind.Pattern:
		return fieldErr(CodeValidation, keys, "%s", msg("must match "+k.Want))
	default:
		return fieldErr(CodeValidation, keys, "%s", msg("is invalid"))
	}
}

func typeNames(want []string) string {
	var out []string
	for _, w := range want {
		switch w {
		case "integer", "object", "array":
			out = append(out, "an "+w)
		default:
			out = append(out, "a "+w)
		}
	}
	return strings.Join(out, " or ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
