package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/rootcause/rootcause/db"
)

// decodeOption adjusts one decodeJSON call.
type decodeOption int

const (
	// strictFields rejects unknown object keys with 400 invalid_request
	// naming the key.
	strictFields decodeOption = iota + 1
	// optionalBody accepts an empty body (v is left untouched).
	optionalBody
)

// decodeJSON reads the request body as one JSON value into v. The body is
// already limited by the route (1 MiB unless withMaxBody): a larger one is
// 413 payload_too_large. A body must come with Content-Type
// application/json (415 otherwise). Malformed JSON, a wrong type, trailing
// data or an empty body (unless optionalBody) is 400 invalid_request with a
// message naming the byte offset or the field.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, opts ...decodeOption) error {
	_ = w // the body limit was installed by handle, with w
	var strict, optional bool
	for _, o := range opts {
		switch o {
		case strictFields:
			strict = true
		case optionalBody:
			optional = true
		}
	}
	if r.Body == nil || r.ContentLength == 0 {
		if optional {
			return nil
		}
		return db.Errorf(db.EINVALID, "request body is empty; expected a JSON object")
	}
	if err := checkJSONContentType(r); err != nil {
		return err
	}

	// Read the whole (limited) body first: encoding/json would silently
	// replace invalid UTF-8 with U+FFFD; it is refused here, so what is
	// stored is what was sent.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	switch trimmed := bytes.TrimSpace(body); {
	case len(trimmed) == 0:
		if optional {
			return nil
		}
		return db.Errorf(db.EINVALID, "request body is empty; expected a JSON object")
	}
	if err := checkJSONBody(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			if optional {
				return nil
			}
			return db.Errorf(db.EINVALID, "request body is empty; expected a JSON object")
		}
		return decodeError(err)
	}
	// Exactly one value: anything but whitespace after it is an error.
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return db.Errorf(db.EINVALID, "malformed JSON: unexpected data after the JSON value at byte offset %d", dec.InputOffset()-int64(len(extra)))
	default:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(err)
		}
		return db.Errorf(db.EINVALID, "malformed JSON: unexpected data after the JSON value at byte offset %d", dec.InputOffset())
	}
}

// MaxJSONDepth is the deepest nesting of objects and arrays a request body
// may have. No request needs more, and a limit keeps recursive merge and
// validation of hostile bodies cheap.
const MaxJSONDepth = 64

// checkJSONBody refuses a body that is not valid UTF-8 (encoding/json would
// silently replace the bad bytes, so what is stored would differ from what
// was sent), that nests deeper than MaxJSONDepth, or that is ambiguous
// (duplicate keys, lone surrogate escapes: checkJSONAmbiguity).
func checkJSONBody(body []byte) error {
	if !utf8.Valid(body) {
		return db.Errorf(db.EINVALID, "request body is not valid UTF-8 (first bad byte at offset %d)", invalidUTF8Offset(body))
	}
	if off := depthExceeded(body, MaxJSONDepth); off >= 0 {
		return db.Errorf(db.EINVALID, "malformed JSON: nesting deeper than %d levels at byte offset %d", MaxJSONDepth, off)
	}
	if err := checkJSONAmbiguity(body); err != nil {
		return db.Errorf(db.EINVALID, "%s", err)
	}
	return nil
}

// depthExceeded returns the offset at which b's nesting of objects and
// arrays first exceeds max, or -1. Brackets inside strings do not count.
func depthExceeded(b []byte, max int) int {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return i
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}

// invalidUTF8Offset returns the offset of the first byte of b that is not
// part of a valid UTF-8 sequence.
func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// checkJSONContentType requires application/json, in UTF-8: a charset
// parameter other than utf-8 is refused (JSON is UTF-8, RFC 8259), as is a
// request with more than one Content-Type header.
func checkJSONContentType(r *http.Request) error {
	if len(r.Header.Values("Content-Type")) > 1 {
		return db.Errorf(db.EINVALID, "the request has more than one Content-Type header")
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return &db.Error{Code: EUNSUPPORTEDMEDIA, Message: "Content-Type must be application/json"}
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &db.Error{Code: EUNSUPPORTEDMEDIA, Message: fmt.Sprintf("Content-Type must be application/json, not %q", ct)}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return db.Errorf(db.EINVALID, "charset %q is not supported: JSON bodies are UTF-8 (charset=utf-8 or none)", cs)
	}
	return nil
}

// decodeError turns an encoding/json error into a caller-safe *db.Error.
func decodeError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return db.Errorf(db.ETOOLARGE, "request body exceeds %d bytes", mbe.Limit)
	case errors.As(err, &syn):
		return db.Errorf(db.EINVALID, "malformed JSON at byte offset %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return db.Errorf(db.EINVALID, "request body: expected %s, got %s", jsonType(typ.Type.String()), firstWord(typ.Value))
		}
		return &db.Error{
			Code:    db.EINVALID,
			Message: fmt.Sprintf("field %s: expected %s, got %s", typ.Field, jsonType(typ.Type.String()), firstWord(typ.Value)),
			Field:   typ.Field,
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return db.Errorf(db.EINVALID, "malformed JSON: unexpected end of body")
	}
	// DisallowUnknownFields: `json: unknown field "name"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return &db.Error{Code: db.EINVALID, Message: fmt.Sprintf("unknown field %q", name), Field: name}
	}
	return &db.Error{Code: db.EINVALID, Message: "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
}

// jsonType names a Go type the way a JSON caller thinks of it.
func jsonType(goType string) string {
	switch {
	case goType == "string":
		return "string"
	case goType == "bool":
		return "boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"),
		strings.HasPrefix(goType, "float"), goType == "time.Duration":
		return "number"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"), strings.Contains(goType, "."):
		return "object"
	}
	return goType
}

// firstWord keeps "number" of "number -5": the kind, not the caller's value.
func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}
