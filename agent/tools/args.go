package tools

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Argument parsing shared by the Kubernetes and Prometheus tools: strict
// decoding, time values, windows, steps and limits. Every failure is an
// *evidence.Error with CodeInvalid whose message names the argument.

// DefaultWindow is the window of a tool whose since/start is omitted.
const DefaultWindow = time.Hour

// decodeArgs decodes a tool's argument object strictly: unknown fields and
// wrong types are invalid-argument errors naming the field.
func decodeArgs(tool string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return invalidArg(tool, te.Field, "want a %s, got a JSON %s", te.Type.String(), te.Value)
		}
		return evidence.Errorf(tool, evidence.CodeInvalid, "bad arguments: %v", err)
	}
	return nil
}

// invalidArg is the error of a bad argument.
func invalidArg(tool, arg, format string, args ...any) error {
	return &evidence.Error{Source: tool, Code: evidence.CodeInvalid, Err: fmt.Errorf("argument %q: %s", arg, fmt.Sprintf(format, args...))}
}

// requireArg fails when a required string argument is empty.
func requireArg(tool, arg, v string) error {
	if strings.TrimSpace(v) == "" {
		return invalidArg(tool, arg, "is required")
	}
	return nil
}

// notConfigured is the data-gap error of a tool whose integration the team
// has not configured.
func notConfigured(integration string) error {
	return &evidence.Error{Source: integration, Code: evidence.CodeNotConfigured,
		Err: fmt.Errorf("%s is not configured for this team (set tools.%s)", integration, integration)}
}

// objectSchema builds a JSON Schema object from the properties' JSON text,
// with required names and additionalProperties false.
func objectSchema(props string, required ...string) json.RawMessage {
	var p map[string]any
	if err := json.Unmarshal([]byte(props), &p); err != nil {
		panic("tools: bad schema properties: " + err.Error())
	}
	s := map[string]any{"type": "object", "properties": p, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// ParseRelative parses a duration as written in tool arguments: Go
// durations ("90s", "1h30m") plus days and weeks ("2d", "1w").
func ParseRelative(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if strings.HasSuffix(s, u.suffix) {
			n, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suffix), 64)
			if err != nil || n < 0 || n > 3650 {
				return 0, fmt.Errorf("bad duration %q", s)
			}
			return time.Duration(n * float64(u.unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
}

// ParseTime parses a time argument: an RFC 3339 time, "now", or a duration
// back from the investigation's clock ("1h" is one hour before
// env.Sources.Clock(); a leading "-" is allowed). Empty returns def.
func ParseTime(env *Env, tool, arg, s string, def time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	now := clock(env)
	if s == "now" {
		return now, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := ParseRelative(strings.TrimPrefix(s, "-"))
	if err != nil {
		return time.Time{}, invalidArg(tool, arg, "%q is neither an RFC 3339 time (2026-03-14T10:00:00Z) nor a duration back from now (30m, 1h, 2d)", s)
	}
	return now.Add(-d), nil
}

// ParseWindow parses a since/until (or start/end) pair: until defaults to
// now, since to DefaultWindow before until.
func ParseWindow(env *Env, tool, sinceArg, since, untilArg, until string) (time.Time, time.Time, error) {
	u, err := ParseTime(env, tool, untilArg, until, clock(env))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	s, err := ParseTime(env, tool, sinceArg, since, u.Add(-DefaultWindow))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if s.After(u) {
		return time.Time{}, time.Time{}, invalidArg(tool, sinceArg, "%s is after %s %s", s.Format(time.RFC3339), untilArg, u.Format(time.RFC3339))
	}
	return s, u, nil
}

// ParseStep parses a range query step: a duration ("30s", "5m") or a
// number of seconds. Empty picks a step giving about TargetPoints points.
func ParseStep(tool, arg, s string, start, end time.Time) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return AutoStep(start, end), nil
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		d = time.Duration(n * float64(time.Second))
	} else if d, err = ParseRelative(s); err != nil {
		return 0, invalidArg(tool, arg, "%q is not a duration such as 30s or 5m", s)
	}
	if d < time.Second {
		return 0, invalidArg(tool, arg, "must be at least 1s")
	}
	if n := int(end.Sub(start)/d) + 1; n > MaxRangePoints {
		return 0, invalidArg(tool, arg, "%s over %s gives %d points per series, more than %d: use a larger step", s, end.Sub(start), n, MaxRangePoints)
	}
	return d, nil
}

// AutoStep returns a round step giving at most about TargetPoints points.
func AutoStep(start, end time.Time) time.Duration {
	raw := end.Sub(start) / TargetPoints
	for _, d := range []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
		10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		if d >= raw {
			return d
		}
	}
	return raw.Round(time.Hour)
}

// limitArg bounds a limit argument to [1, maxN], defaulting to def.
func limitArg(tool, arg string, n, def, maxN int) (int, error) {
	switch {
	case n < 0:
		return 0, invalidArg(tool, arg, "must not be negative")
	case n == 0:
		return def, nil
	case n > maxN:
		return maxN, nil
	}
	return n, nil
}

// namespaceArg returns the namespace to use: the argument, else the team's
// tools.kubernetes.default_namespace, else "" (all namespaces). "*" and
// "all" ask for all namespaces explicitly.
func namespaceArg(env *Env, ns string) string {
	ns = strings.TrimSpace(ns)
	switch ns {
	case "*", "all":
		return ""
	case "":
		if env != nil && env.Settings != nil {
			if d, ok := env.Settings[IntegrationKubernetes]["default_namespace"].(string); ok {
				return d
			}
		}
	}
	return ns
}

// objectArgs decodes the arguments of a tool about one named object into a
// (strictly, as decodeArgs), requires the object's name (the argument arg,
// read through name once decoded) and resolves the namespace as
// namespaceRequired does.
func objectArgs(env *Env, tool string, raw json.RawMessage, a any, arg string, name, namespace *string) (string, error) {
	if err := decodeArgs(tool, raw, a); err != nil {
		return "", err
	}
	if err := requireArg(tool, arg, *name); err != nil {
		return "", err
	}
	return namespaceRequired(env, tool, *namespace)
}

// namespaceRequired is namespaceArg for tools about one object.
func namespaceRequired(env *Env, tool, ns string) (string, error) {
	n := namespaceArg(env, ns)
	if n == "" {
		return "", invalidArg(tool, "namespace", "is required (no tools.kubernetes.default_namespace is set)")
	}
	return n, nil
}

func clock(env *Env) time.Time {
	if env == nil {
		return (*evidence.Sources)(nil).Clock()
	}
	return env.Sources.Clock()
}
