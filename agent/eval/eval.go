// Package eval runs scenarios (contract section 5): an incident bundle plus
// scenario.json with the request to investigate and, optionally, what a good
// result must contain. It loads them strictly, runs an engine on them
// offline with the bundle as the only evidence, and scores the result.
package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// Scenario is a loaded scenario.
type Scenario struct {
	// Name is the scenario's directory name (the "scenario" of a JSON line).
	Name string `json:"-"`
	// Dir is the directory the scenario was loaded from.
	Dir string `json:"-"`
	// Bundle is the opened incident bundle.
	Bundle *bundle.Bundle `json:"-"`

	Title   string    `json:"title"`
	Now     time.Time `json:"-"`
	Request Request   `json:"request"`
	Expect  *Expect   `json:"expect,omitempty"`
}

// Request is the investigation a scenario asks for.
type Request struct {
	AgentName string            `json:"agent_name"`
	Message   string            `json:"message"`
	Context   map[string]string `json:"context,omitempty"`
}

// Expect is what a passing result must contain. Every rule is optional.
type Expect struct {
	// RootCauseAny is a list of groups of phrases; each group is satisfied
	// when any of its phrases appears, case-insensitively, in
	// result.root_cause.description. All groups must be satisfied.
	RootCauseAny [][]string `json:"root_cause_any,omitempty"`
	// AffectedSystemsAll names systems that must each equal (ignoring case
	// and surrounding spaces) an element of result.affected_systems.
	AffectedSystemsAll []string `json:"affected_systems_all,omitempty"`
	// MinEvidence is the least number of root_cause.evidence entries.
	MinEvidence int `json:"min_evidence,omitempty"`
	// MinTimeline is the least number of timeline entries.
	MinTimeline int `json:"min_timeline,omitempty"`
	// ToolsUsedAny: at least one of these tools must have been used.
	ToolsUsedAny []string `json:"tools_used_any,omitempty"`
}

// scenarioFile is scenario.json as written.
type scenarioFile struct {
	Title   string          `json:"title"`
	Now     string          `json:"now"`
	Request json.RawMessage `json:"request"`
	Expect  json.RawMessage `json:"expect"`
}

// LoadScenario reads the scenario in dir: scenario.json (strictly: unknown
// fields are errors) and the bundle around it. Errors name the file and the
// field.
func LoadScenario(dir string) (*Scenario, error) {
	file := filepath.Join(dir, "scenario.json")
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: not a scenario: scenario.json is missing", dir)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var sf scenarioFile
	if err := strictDecode(data, &sf); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := &Scenario{Name: filepath.Base(filepath.Clean(dir)), Dir: dir, Title: sf.Title}
	if sf.Now == "" {
		return nil, fmt.Errorf("%s: now: required (an RFC 3339 time, the investigation's clock)", file)
	}
	if s.Now, err = time.Parse(time.RFC3339, sf.Now); err != nil {
		return nil, fmt.Errorf("%s: now: %q is not an RFC 3339 time", file, sf.Now)
	}
	s.Now = s.Now.UTC()
	if len(sf.Request) == 0 || string(sf.Request) == "null" {
		return nil, fmt.Errorf("%s: request: required", file)
	}
	if err := strictDecode(sf.Request, &s.Request); err != nil {
		return nil, fmt.Errorf("%s: request: %w", file, err)
	}
	if strings.TrimSpace(s.Request.AgentName) == "" {
		return nil, fmt.Errorf("%s: request.agent_name: required", file)
	}
	if strings.TrimSpace(s.Request.Message) == "" {
		return nil, fmt.Errorf("%s: request.message: required", file)
	}
	if len(sf.Expect) > 0 && string(sf.Expect) != "null" {
		s.Expect = &Expect{}
		if err := strictDecode(sf.Expect, s.Expect); err != nil {
			return nil, fmt.Errorf("%s: expect: %w", file, err)
		}
		if err := s.Expect.validate(); err != nil {
			return nil, fmt.Errorf("%s: expect.%w", file, err)
		}
	}
	if s.Bundle, err = bundle.OpenDir(dir); err != nil {
		return nil, err
	}
	return s, nil
}

func (e *Expect) validate() error {
	for i, g := range e.RootCauseAny {
		if len(g) == 0 {
			return fmt.Errorf("root_cause_any[%d]: an empty group can never be satisfied", i)
		}
		for j, p := range g {
			if strings.TrimSpace(p) == "" {
				return fmt.Errorf("root_cause_any[%d][%d]: empty phrase", i, j)
			}
		}
	}
	for i, a := range e.AffectedSystemsAll {
		if strings.TrimSpace(a) == "" {
			return fmt.Errorf("affected_systems_all[%d]: empty name", i)
		}
	}
	if e.MinEvidence < 0 {
		return fmt.Errorf("min_evidence: must not be negative")
	}
	if e.MinTimeline < 0 {
		return fmt.Errorf("min_timeline: must not be negative")
	}
	return nil
}

// strictDecode decodes one JSON value into v, rejecting unknown fields and
// trailing data, with the offending field named in the error.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: want %s, found JSON %s", te.Field, te.Type, te.Value)
		}
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// Score checks res against the scenario's expect (contract section 5). A
// scenario without expect always passes with no failures. Each failure is a
// sentence naming the rule.
func Score(s *Scenario, res *finding.Result, toolsUsed []string) (passed bool, failures []string) {
	failures = []string{}
	if s == nil || s.Expect == nil {
		return true, failures
	}
	e := s.Expect
	if res == nil {
		res = &finding.Result{}
	}
	desc := strings.ToLower(res.RootCause.Description)
	for _, group := range e.RootCauseAny {
		ok := false
		for _, p := range group {
			if strings.Contains(desc, strings.ToLower(strings.TrimSpace(p))) {
				ok = true
				break
			}
		}
		if !ok {
			failures = append(failures, fmt.Sprintf("root_cause_any: root_cause.description mentions none of %q", group))
		}
	}
	for _, want := range e.AffectedSystemsAll {
		w := strings.ToLower(strings.TrimSpace(want))
		if !slices.ContainsFunc(res.AffectedSystems, func(got string) bool { return strings.ToLower(strings.TrimSpace(got)) == w }) {
			failures = append(failures, fmt.Sprintf("affected_systems_all: %q is not in affected_systems %q", want, res.AffectedSystems))
		}
	}
	if n := len(res.RootCause.Evidence); n < e.MinEvidence {
		failures = append(failures, fmt.Sprintf("min_evidence: root_cause.evidence has %d entries, want at least %d", n, e.MinEvidence))
	}
	if n := len(res.Timeline); n < e.MinTimeline {
		failures = append(failures, fmt.Sprintf("min_timeline: timeline has %d entries, want at least %d", n, e.MinTimeline))
	}
	if len(e.ToolsUsedAny) > 0 && !slices.ContainsFunc(e.ToolsUsedAny, func(t string) bool { return slices.Contains(toolsUsed, t) }) {
		failures = append(failures, fmt.Sprintf("tools_used_any: none of %q was used (used %q)", e.ToolsUsedAny, toolsUsed))
	}
	return len(failures) == 0, failures
}

// Statuses of an outcome.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Outcome is the result of running one scenario.
type Outcome struct {
	Scenario        string
	Status          string // completed or failed
	Result          *finding.Result
	ToolsUsed       []string
	DurationSeconds float64
	// Scored is true when the scenario has expect; Passed and Failures are
	// meaningful only then.
	Scored   bool
	Passed   bool
	Failures []string
	// Error says why the investigation failed (status failed).
	Error string
}

// MarshalJSON writes the JSON line of contract section 5: scenario, status,
// result, tools_used, duration_seconds, and passed and failures only when
// the scenario has expect; error is added when the run failed.
func (o *Outcome) MarshalJSON() ([]byte, error) {
	type line struct {
		Scenario        string          `json:"scenario"`
		Status          string          `json:"status"`
		Result          *finding.Result `json:"result"`
		ToolsUsed       []string        `json:"tools_used"`
		DurationSeconds float64         `json:"duration_seconds"`
		Passed          *bool           `json:"passed,omitempty"`
		Failures        *[]string       `json:"failures,omitempty"`
		Error           string          `json:"error,omitempty"`
	}
	l := line{Scenario: o.Scenario, Status: o.Status, Result: o.Result, ToolsUsed: o.ToolsUsed,
		DurationSeconds: float64(int64(o.DurationSeconds*1000)) / 1000, Error: o.Error}
	if l.ToolsUsed == nil {
		l.ToolsUsed = []string{}
	}
	if o.Scored {
		f := o.Failures
		if f == nil {
			f = []string{}
		}
		l.Passed, l.Failures = &o.Passed, &f
	}
	return json.Marshal(l)
}

// Options tune Run.
type Options struct {
	// Catalog is the tool catalog; nil means tools.Builtin().
	Catalog *tools.Catalog
	// Agents are the team's resolved agents; nil means the built-ins with
	// their default toolkits (agent.Resolve of an empty config).
	Agents map[string]agent.Agent
	// Timeout bounds one investigation; 0 means 2 minutes.
	Timeout time.Duration
	// OnStep, if set, is told of progress steps.
	OnStep func(current string, completed, total int)
}

// Run investigates the scenario with engine, against the scenario's bundle
// as the only evidence and with the scenario's now as the clock, and scores
// the result. The returned error is for scenarios that cannot run at all
// (an unknown agent); an engine failure is an Outcome with status failed.
func Run(ctx context.Context, s *Scenario, engine agent.Engine, opts Options) (*Outcome, error) {
	cat := opts.Catalog
	if cat == nil {
		cat = tools.Builtin()
	}
	agents := opts.Agents
	if agents == nil {
		agents = agent.Resolve(nil, cat)
	}
	a, ok := agents[s.Request.AgentName]
	if !ok {
		return nil, fmt.Errorf("%s: scenario.json: request.agent_name: unknown agent %q", s.Dir, s.Request.AgentName)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	env := &tools.Env{Sources: s.Bundle.Sources(s.Now)}
	used := &tools.UsedTools{}
	r := &run{catalog: cat, env: env, used: used, onStep: opts.OnStep}
	r.session = r.sessionFor(a)
	req := &agent.Request{ID: "eval-" + s.Name, Team: "eval", Agent: a, Message: s.Request.Message, Context: s.Request.Context, Agents: agents}

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := engine.Investigate(cctx, req, r)
	out := &Outcome{Scenario: s.Name, DurationSeconds: time.Since(start).Seconds(), ToolsUsed: used.Names()}
	if out.ToolsUsed == nil {
		out.ToolsUsed = []string{}
	}
	switch {
	case err != nil:
		out.Status, out.Error = StatusFailed, err.Error()
	case res == nil:
		out.Status, out.Error = StatusFailed, "the engine returned no result"
	default:
		res.Normalize()
		out.Status, out.Result = StatusCompleted, res
	}
	if s.Expect != nil {
		out.Scored = true
		out.Passed, out.Failures = Score(s, out.Result, out.ToolsUsed)
		if out.Status == StatusFailed {
			out.Passed = false
			out.Failures = append([]string{"investigation failed: " + out.Error}, out.Failures...)
		}
	}
	return out, nil
}

// run is the minimal agent.Run of an evaluation: a tools.Session over the
// bundle for the agent's toolkit, with every call (of the agent and of the
// specialists it delegates to) recorded in one tools_used.
type run struct {
	catalog *tools.Catalog
	env     *tools.Env
	used    *tools.UsedTools
	session *tools.Session
	onStep  func(string, int, int)
}

var _ agent.Run = (*run)(nil)

func (r *run) sessionFor(a agent.Agent) *tools.Session {
	return &tools.Session{Catalog: r.catalog, Env: r.env, Toolkit: a.Tools, Used: r.used}
}

func (r *run) Call(ctx context.Context, name string, args any) (any, error) {
	return r.session.Call(ctx, name, args)
}

func (r *run) Has(name string) bool { return r.session.Has(name) }

func (r *run) Step(current string, completed, total int) {
	if r.onStep != nil {
		r.onStep(current, completed, total)
	}
}

func (r *run) Sub(a agent.Agent) agent.Run {
	sub := &run{catalog: r.catalog, env: r.env, used: r.used, onStep: r.onStep}
	sub.session = sub.sessionFor(a)
	return sub
}

func (r *run) Env() *tools.Env { return r.env }
