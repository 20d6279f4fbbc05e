package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Names of the tools the loop itself offers.
const (
	toolSubmit = "submit_findings"
	toolReview = "review_findings"
)

// resultSchema is the JSON Schema of finding.Result as a model submits it
// (notes are ours, not the model's, and are not offered).
const resultSchema = `{
  "type": "object",
  "properties": {
    "summary": {"type": "string", "minLength": 1, "description": "Two or three sentences: what happened, the cause, the impact."},
    "root_cause": {
      "type": "object",
      "properties": {
        "description": {"type": "string", "minLength": 1, "description": "The most likely root cause, naming the component and the mechanism."},
        "confidence": {"type": "number", "minimum": 0, "maximum": 100, "description": "0-100. Below 50 unless concrete evidence from tool results supports the cause."},
        "evidence": {"type": "array", "items": {"type": "string"}, "description": "Concrete observations from tool results (object names, log lines, metric values, timestamps) that support the cause."}
      },
      "required": ["description", "confidence", "evidence"]
    },
    "timeline": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "timestamp": {"type": "string", "description": "RFC 3339, e.g. 2026-03-14T10:02:00Z"},
          "event": {"type": "string", "minLength": 1}
        },
        "required": ["timestamp", "event"]
      }
    },
    "affected_systems": {"type": "array", "items": {"type": "string"}},
    "recommendations": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "priority": {"type": "string", "enum": ["high", "medium", "low"]},
          "action": {"type": "string", "minLength": 1}
        },
        "required": ["priority", "action"]
      }
    },
    "ruled_out": {
      "type": "array",
      "description": "Hypotheses you checked and rejected, with the evidence that rejects them.",
      "items": {
        "type": "object",
        "properties": {"hypothesis": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["hypothesis", "reason"]
      }
    },
    "data_gaps": {"type": "array", "items": {"type": "string"}, "description": "Evidence you could not consult (tool failed, integration not configured)."},
    "verdict": {"type": "string", "enum": ["identified", "inconclusive", "healthy"]}
  },
  "required": ["summary", "root_cause", "timeline", "affected_systems", "recommendations"]
}`

// reviewSchema is the argument schema of the skeptic's review_findings.
const reviewSchema = `{
  "type": "object",
  "properties": {
    "verdicts": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "claim": {"type": "integer", "minimum": 0, "description": "The claim's number as listed."},
          "verdict": {"type": "string", "enum": ["supported", "correlation_only", "unsupported"]},
          "reason": {"type": "string"}
        },
        "required": ["claim", "verdict", "reason"]
      }
    }
  },
  "required": ["verdicts"]
}`

// delegateSchema is the argument schema of a delegate_<agent> tool.
const delegateSchema = `{
  "type": "object",
  "properties": {
    "task": {"type": "string", "minLength": 1, "description": "What the specialist should find out, with the names, namespaces and time window you know."}
  },
  "required": ["task"]
}`

const emptyObjectSchema = `{"type": "object", "properties": {}}`

var schemaSeq atomic.Int64

var printer = message.NewPrinter(language.English)

// compiledSchema is a compiled JSON Schema for argument validation.
type compiledSchema struct{ s *jsonschema.Schema }

var schemaCache sync.Map // schema text -> *compiledSchema (nil when it does not compile)

// compileSchema compiles raw; it returns nil when raw is not a usable schema
// (the tool is then offered without validation).
func compileSchema(raw json.RawMessage) *compiledSchema {
	key := string(raw)
	if v, ok := schemaCache.Load(key); ok {
		return v.(*compiledSchema)
	}
	var out *compiledSchema
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err == nil {
		c := jsonschema.NewCompiler()
		url := fmt.Sprintf("mem:///schema-%d.json", schemaSeq.Add(1))
		if err = c.AddResource(url, doc); err == nil {
			if s, err := c.Compile(url); err == nil {
				out = &compiledSchema{s: s}
			}
		}
	}
	schemaCache.Store(key, out)
	return out
}

// validate checks args (JSON) against s, returning a short message that a
// model can act on.
func (s *compiledSchema) validate(args json.RawMessage) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if s == nil {
		if _, ok := v.(map[string]any); !ok {
			return fmt.Errorf("arguments must be a JSON object")
		}
		return nil
	}
	if err := s.s.Validate(v); err != nil {
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			return fmt.Errorf("%s", validationText(ve))
		}
		return err
	}
	return nil
}

// validationText flattens a validation error to its leaf causes, one per
// line, each with the JSON pointer of the offending value.
func validationText(ve *jsonschema.ValidationError) string {
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			lines = append(lines, "at "+loc+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(lines)
	lines = dedupe(lines)
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("(%d more)", len(lines)-10))
	}
	return strings.Join(lines, "; ")
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
