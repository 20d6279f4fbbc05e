package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// KubeItem is one object found in a file of kubectl output.
type KubeItem struct {
	Kind       string
	APIVersion string
	Namespace  string
	Name       string
	Line       int        // line of the object (of its YAML document for YAML)
	Object     KubeObject // nil when the item is skipped
	Skip       string     // why the item is not read (a kind rootcause does not read)
	// Generic is an object of a kind not read into a typed object, read
	// generically (ReadGenericObject); nil otherwise.
	Generic *GenericObject
}

// DecodeKubeFile reads every object of one file of `kubectl get -o
// json|yaml` output (or an API server's list answer): one object, a typed
// List (PodList...), a `kind: List` of mixed kinds, several JSON objects one
// after another, or multi-document YAML. Items that carry no kind take the
// list's kind (PodList → Pod) or else hintKind (the kind a cluster-info dump
// file name gives). fn receives each item, the skipped ones too (kinds not
// read, documents that are not Kubernetes objects). Bad data is a malformed
// *Error naming file and line; fn has then received the items before it.
func DecodeKubeFile(file string, data []byte, hintKind string, fn func(KubeItem)) error {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(t) == 0 {
		return nil
	}
	if t[0] == '{' || t[0] == '[' {
		return decodeJSONStream(file, data, hintKind, 0, fn)
	}
	return decodeYAML(file, data, hintKind, fn)
}

func malformed(file string, line int, err error) *Error {
	return &Error{Source: "kubernetes", Code: CodeMalformed, File: file, Line: line, Err: err}
}

// LineAt is the 1-based line of byte offset off in data.
func LineAt(data []byte, off int64) int {
	off = max(0, min(off, int64(len(data))))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// decodeJSONStream reads one or more top-level JSON values. lineBase, when
// not 0, is the line every item is reported at (a YAML document's).
func decodeJSONStream(file string, data []byte, hintKind string, lineBase int, fn func(KubeItem)) error {
	line := lineCounter(data, lineBase)
	if validJSONFast {
		if err, ok := decodeJSONValid(file, data, hintKind, line, fn); ok {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		var whole any
		var se *json.SyntaxError
		// the streaming decoder's offsets are not always absolute
		if errors.As(json.Unmarshal(data, &whole), &se) {
			return malformed(file, line(se.Offset), se)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return malformed(file, line(int64(len(data))), fmt.Errorf("unexpected end of JSON"))
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return malformed(file, line(te.Offset), err)
		}
		return malformed(file, line(dec.InputOffset()), err)
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return syntax(err)
		}
		start += int64(len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n,\ufeff")))
		d, ok := tok.(json.Delim)
		if !ok || d != '{' {
			return malformed(file, line(start), fmt.Errorf("want a Kubernetes object or List, found %v", tok))
		}
		if err := decodeJSONObject(file, data, dec, start, hintKind, line, syntax, fn); err != nil {
			return err
		}
	}
}

type rawItem struct {
	raw json.RawMessage
	off int64
}

// decodeJSONObject reads one object whose '{' the decoder just consumed.
func decodeJSONObject(file string, data []byte, dec *json.Decoder, start int64, hintKind string,
	line func(int64) int, syntax func(error) error, fn func(KubeItem)) error {
	var kind, apiVersion string
	var items []rawItem
	isList := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		key, _ := tok.(string)
		switch key {
		case "kind", "apiVersion":
			var s string
			if err := dec.Decode(&s); err != nil {
				return syntax(err)
			}
			if key == "kind" {
				kind = s
			} else {
				apiVersion = s
			}
		case "items":
			tok, err := dec.Token()
			if err != nil {
				return syntax(err)
			}
			isList = true
			if tok == nil {
				continue
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return malformed(file, line(dec.InputOffset()), fmt.Errorf("items: want an array"))
			}
			for dec.More() {
				off := dec.InputOffset()
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return syntax(err)
				}
				off += int64(len(data[off:]) - len(bytes.TrimLeft(data[off:], " \t\r\n,")))
				items = append(items, rawItem{raw: raw, off: off})
			}
			if _, err := dec.Token(); err != nil {
				return syntax(err)
			}
		default:
			var skip skipValue
			if err := dec.Decode(&skip); err != nil {
				return syntax(err)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntax(err)
	}
	return emitObject(file, data, start, dec.InputOffset(), kind, apiVersion, isList, items, hintKind, line, fn)
}

// emitObject hands fn the items of one top-level object read from
// data[start:end]: the object itself, or a list's items.
func emitObject(file string, data []byte, start, end int64, kind, apiVersion string, isList bool, items []rawItem,
	hintKind string, line func(int64) int, fn func(KubeItem)) error {
	if !isList {
		// a single object: decode it from its bytes
		raw := data[start:end]
		if kind == "" && hintKind == "" {
			fn(KubeItem{Line: line(start), Skip: "not a Kubernetes object (no kind)"})
			return nil
		}
		if kind == "" {
			// A cluster-info dump file must hold a List.
			return malformed(file, line(start), fmt.Errorf("want a Kubernetes List of %s, found an object without kind", hintKind))
		}
		return decodeItem(file, json.RawMessage(raw), kind, apiVersion, "", start, line, fn)
	}
	itemKind := ""
	if strings.HasSuffix(kind, "List") && kind != "List" {
		itemKind = strings.TrimSuffix(kind, "List")
	}
	if itemKind == "" {
		itemKind = hintKind
	}
	for _, it := range items {
		if err := decodeItem(file, it.raw, "", "", itemKind, it.off, line, fn); err != nil {
			return err
		}
	}
	return nil
}

type itemHead struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func decodeItem(file string, raw json.RawMessage, kind, apiVersion, defKind string, off int64, line func(int64) int, fn func(KubeItem)) error {
	h, ok := readItemHead(raw)
	if !ok {
		h = itemHead{}
		if err := json.Unmarshal(raw, &h); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return malformed(file, line(off+te.Offset), err)
			}
			return malformed(file, line(off), err)
		}
	}
	if h.Kind != "" {
		kind = h.Kind
	}
	if h.APIVersion != "" {
		apiVersion = h.APIVersion
	}
	if kind == "" {
		kind = defKind
	}
	it := KubeItem{Kind: kind, APIVersion: apiVersion, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, Line: line(off)}
	if kind == "" {
		it.Skip = "not a Kubernetes object (no kind)"
		fn(it)
		return nil
	}
	ki, ok := LookupKind(kind)
	if !ok || !strings.EqualFold(ki.Kind, kind) {
		it.Skip = fmt.Sprintf("kind %s is not read", kind)
		if h.Metadata.Name != "" {
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil {
				if _, has := m["kind"]; !has {
					m["kind"], m["apiVersion"] = kind, apiVersion
				}
				if g, ok := GenericFromMap(m); ok {
					it.Generic = &g
				}
			}
		}
		fn(it)
		return nil
	}
	it.Kind = ki.Kind
	if h.Metadata.Name == "" {
		return malformed(file, line(off), fmt.Errorf("%s without metadata.name", ki.Kind))
	}
	obj, err := DecodeKubeObject(ki.Kind, apiVersion, raw)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return malformed(file, line(off+te.Offset), err)
		}
		return malformed(file, line(off), err)
	}
	it.Object = obj
	fn(it)
	return nil
}

var yamlErrLine = regexp.MustCompile(`line (\d+)`)

// decodeYAML splits YAML documents on "---" lines and reads each as JSON.
func decodeYAML(file string, data []byte, hintKind string, fn func(KubeItem)) error {
	docStart := 1
	lineNo := 0
	var doc []byte
	flush := func() error {
		defer func() { doc = doc[:0] }()
		if len(bytes.TrimSpace(stripYAMLComments(doc))) == 0 {
			return nil
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			l := docStart
			if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				l = docStart + n - 1
			}
			return malformed(file, l, err)
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || js[0] != '{' {
			if string(js) == "null" {
				return nil
			}
			fn(KubeItem{Line: docStart, Skip: "not a Kubernetes object"})
			return nil
		}
		return decodeJSONStream(file, js, hintKind, docStart, fn)
	}
	rest := data
	for len(rest) > 0 {
		var ln []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			ln, rest = rest[:i+1], rest[i+1:]
		} else {
			ln, rest = rest, nil
		}
		lineNo++
		trim := bytes.TrimRight(ln, " \t\r\n")
		if bytes.Equal(trim, []byte("---")) || bytes.HasPrefix(trim, []byte("--- ")) || bytes.HasPrefix(trim, []byte("---\t")) {
			if err := flush(); err != nil {
				return err
			}
			docStart = lineNo + 1
			continue
		}
		if bytes.Equal(trim, []byte("...")) {
			continue
		}
		doc = append(doc, ln...)
	}
	return flush()
}

func stripYAMLComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, t...)
		}
	}
	return out
}
