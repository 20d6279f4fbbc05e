package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/finding"
)

// digestItemBytes and digestBytes bound the evidence digest given to the
// skeptic.
const (
	digestItemBytes = 2 << 10
	digestBytes     = 32 << 10
)

// loop is one agent's conversation with the model.
type loop struct {
	e         *Engine
	req       *agent.Request
	run       agent.Run
	depth     int
	maxSteps  int
	acct      *accounting
	base      *finding.Result
	ts        *toolset
	red       *redactor
	system    string
	model     string
	temp      *float64
	maxTokens int
	submit    string // the alias of submit_findings

	msgs    []Message
	callIDs map[string]bool

	mu       sync.Mutex
	seen     map[string]int // tool name + canonical args -> step
	evidence []evidenceItem
	done     int // steps and tool calls completed, for progress
}

type evidenceItem struct {
	call   string // name(args)
	result string
}

// outcome says why a loop ended without a result.
type outcome struct {
	providerErr error  // the provider failed after its retries
	failure     string // the model misbehaved: the note for the fallback
}

func (e *Engine) newLoop(req *agent.Request, run agent.Run, depth, maxSteps int, acct *accounting, base *finding.Result) *loop {
	l := &loop{
		e: e, req: req, run: run, depth: depth, maxSteps: maxSteps, acct: acct, base: base,
		red:       newRedactor(e.secrets...),
		model:     e.modelFor(req.Agent),
		temp:      e.temperatureFor(req.Agent),
		maxTokens: e.maxTokens(run),
		callIDs:   map[string]bool{},
		seen:      map[string]int{},
	}
	l.ts = e.buildToolset(req, run, depth)
	l.submit = l.ts.order[0]
	hasDelegates := false
	for _, o := range l.ts.byAlias {
		if o.delegate != nil {
			hasDelegates = true
		}
	}
	l.system = agentSystem(req.Agent, hasDelegates)
	now := ""
	if env := run.Env(); env != nil && env.Sources != nil {
		now = env.Sources.Clock().Format(time.RFC3339)
	}
	l.msgs = []Message{{Role: RoleUser, Content: l.red.redact(userMessage(req, now, base))}}
	return l
}

func (l *loop) progress(current string) {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	total := max(l.maxSteps, done+1)
	l.run.Step(l.req.Agent.Name+": "+current, done, total)
}

func (l *loop) stepDone() {
	l.mu.Lock()
	l.done++
	l.mu.Unlock()
}

// converse goes on until the model submits valid findings or the loop ends.
func (l *loop) converse(ctx context.Context) (*finding.Result, outcome) {
	nudged, repairing, repaired, forceSubmit := false, false, false, false
	for step := 1; step <= l.maxSteps || repairing; step++ {
		last := step >= l.maxSteps || forceSubmit || repairing
		l.progress(fmt.Sprintf("model turn %d", step))
		defs, choice := l.ts.defs(""), ToolChoiceAuto
		if last {
			defs, choice = l.ts.defs(l.submit), l.submit
		}
		resp, err := l.chat(ctx, l.system, l.msgs, defs, choice)
		l.stepDone()
		if err != nil {
			return nil, outcome{providerErr: err}
		}
		l.acct.add(resp.Usage, 1, 0)
		calls := resp.ToolCalls
		content := resp.Content
		if len(calls) == 0 {
			if salvaged := salvageToolCalls(content, l.ts); len(salvaged) > 0 {
				calls, content = salvaged, ""
			}
		}
		calls = l.uniqueIDs(step, calls)

		if len(calls) == 0 {
			l.msgs = append(l.msgs, Message{Role: RoleAssistant, Content: content})
			if last {
				return nil, outcome{failure: fmt.Sprintf("the model did not submit findings within %d steps (it answered in prose when asked to call submit_findings)", step)}
			}
			switch {
			case resp.Truncated():
				l.msgs = append(l.msgs, Message{Role: RoleUser, Content: nudgeTruncated})
			case !nudged:
				nudged = true
				l.msgs = append(l.msgs, Message{Role: RoleUser, Content: nudgeProse})
			default:
				forceSubmit = true
				l.msgs = append(l.msgs, Message{Role: RoleUser, Content: nudgeSubmit})
			}
			continue
		}

		l.msgs = append(l.msgs, Message{Role: RoleAssistant, Content: content, ToolCalls: calls})
		results := make([]Message, len(calls))
		var submitted *finding.Result
		var submitErr error
		// Submissions first: valid findings end the loop without running
		// the turn's other calls.
		for i, c := range calls {
			if c.Name != l.submit && c.Name != toolSubmit {
				continue
			}
			res, err := l.checkSubmission(c.Arguments)
			switch {
			case err == nil && submitted == nil:
				submitted = res
				results[i] = toolResult(c, `{"status": "accepted"}`, false)
			case err == nil:
				results[i] = toolResult(c, `{"status": "ignored: findings were already submitted in this turn"}`, false)
			default:
				submitErr = err
				results[i] = toolResult(c, "submit_findings was rejected: "+err.Error()+
					". Fix these fields and call submit_findings again with the complete corrected result.", true)
			}
		}
		if submitted != nil {
			l.skeptic(ctx, submitted)
			if err := ctx.Err(); err != nil {
				return nil, outcome{failure: "cancelled"}
			}
			return submitted, outcome{}
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, l.e.parallel)
		for i, c := range calls {
			if c.Name == l.submit || c.Name == toolSubmit {
				continue
			}
			if last {
				// Only submit_findings was offered; a model that calls
				// something else anyway is told so.
				results[i] = toolResult(c, "Only submit_findings may be called now: the step limit is reached. Call submit_findings with your result.", true)
				continue
			}
			wg.Add(1)
			go func(i int, c ToolCall) {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					results[i] = toolResult(c, "cancelled", true)
					return
				}
				defer func() { <-sem }()
				results[i] = l.execute(ctx, step, c)
			}(i, c)
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, outcome{failure: "cancelled"}
		}
		l.msgs = append(l.msgs, results...)
		if submitErr != nil {
			if repaired {
				return nil, outcome{failure: "the model's findings were still invalid after a repair turn (" + submitErr.Error() + ")"}
			}
			repaired, repairing = true, true
			continue
		}
		if repairing {
			return nil, outcome{failure: "the model did not resubmit its findings after they were rejected"}
		}
		if last {
			return nil, outcome{failure: fmt.Sprintf("the model did not submit findings within %d steps", step)}
		}
	}
	return nil, outcome{failure: fmt.Sprintf("the model did not submit findings within %d steps", l.maxSteps)}
}

// chat calls the provider. A server that refuses a forced tool choice (some
// OpenAI-compatible servers accept only "auto" and "required") is asked
// again with "required", then "auto".
func (l *loop) chat(ctx context.Context, system string, msgs []Message, defs []ToolDef, choice string) (*ChatResponse, error) {
	req := ChatRequest{Model: l.model, System: system, Messages: msgs, Tools: defs, ToolChoice: choice,
		MaxTokens: l.maxTokens, Temperature: l.temp}
	resp, err := l.e.provider.Chat(ctx, req)
	for _, next := range []string{ToolChoiceRequired, ToolChoiceAuto} {
		var perr *ProviderError
		if err == nil || !errors.As(err, &perr) || perr.Code != CodeBadRequest || req.ToolChoice == ToolChoiceAuto || req.ToolChoice == next {
			break
		}
		req.ToolChoice = next
		resp, err = l.e.provider.Chat(ctx, req)
	}
	return resp, err
}

// uniqueIDs gives every tool call an id unique in the conversation (local
// servers may repeat or omit them).
func (l *loop) uniqueIDs(step int, calls []ToolCall) []ToolCall {
	for i := range calls {
		if calls[i].ID == "" || l.callIDs[calls[i].ID] {
			calls[i].ID = fmt.Sprintf("call_%d_%d", step, i)
		}
		l.callIDs[calls[i].ID] = true
	}
	return calls
}

func toolResult(c ToolCall, content string, isErr bool) Message {
	return Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: content, IsError: isErr}
}

// checkSubmission validates submit_findings arguments against the schema
// and finding.Result.Validate.
func (l *loop) checkSubmission(args json.RawMessage) (*finding.Result, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := l.ts.byAlias[l.submit].schema.validate(args); err != nil {
		return nil, err
	}
	var r finding.Result
	if err := json.Unmarshal(args, &r); err != nil {
		return nil, fmt.Errorf("arguments do not decode as findings: %v", err)
	}
	r.Notes = nil
	r.Normalize()
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// execute runs one tool call of the model and returns the tool message.
func (l *loop) execute(ctx context.Context, step int, c ToolCall) Message {
	o, ok := l.ts.byAlias[c.Name]
	if !ok {
		// A model may use the catalog name ("server:tool") it saw elsewhere.
		for _, cand := range l.ts.byAlias {
			if cand.name == c.Name {
				o, ok = cand, true
				break
			}
		}
	}
	if !ok {
		return toolResult(c, fmt.Sprintf("Unknown tool %q: there is no such tool. Call one of the offered tools (%s) with arguments that match its schema, or submit_findings.",
			cut(c.Name, 100), l.ts.names()), true)
	}
	args := json.RawMessage(bytes.TrimSpace(c.Arguments))
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if err := o.schema.validate(args); err != nil {
		return toolResult(c, fmt.Sprintf("Invalid arguments for %s: %v. Call it again with a JSON object that matches its parameters schema: %s",
			o.alias, err, compactJSON(o.def.Parameters)), true)
	}
	key := o.name + " " + canonicalArgs(args)
	l.mu.Lock()
	prev, dup := l.seen[key]
	if !dup {
		l.seen[key] = step
	}
	l.mu.Unlock()
	if dup {
		return toolResult(c, fmt.Sprintf("Refused: you already called %s with these exact arguments at step %d, and its result is earlier in this conversation. "+
			"Use that result, change the arguments, call another tool, or submit_findings.", o.alias, prev), true)
	}

	l.progress("tool " + o.name)
	var out any
	var err error
	if o.delegate != nil {
		out, err = l.delegate(ctx, o, args)
	} else {
		out, err = l.run.Call(ctx, o.name, args)
	}
	l.stepDone()
	l.acct.add(Usage{}, 0, 1)
	call := o.name + "(" + cut(canonicalArgs(args), 300) + ")"
	if err != nil {
		msg := l.red.redact(cut(err.Error(), 2000))
		l.addEvidence(call, "error: "+msg)
		b, _ := json.Marshal(map[string]string{"error": msg})
		return toolResult(c, string(b), true)
	}
	text := l.render(out)
	l.addEvidence(call, text)
	return toolResult(c, text, false)
}

// delegate runs a specialist's sub-investigation with this engine.
func (l *loop) delegate(ctx context.Context, o *offered, args json.RawMessage) (any, error) {
	var a struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	sub := *l.req
	sub.Agent = *o.delegate
	sub.Message = a.Task + "\n\nThe incident as reported: " + l.req.Message
	steps := max(3, l.maxSteps/2)
	res, err := l.e.investigate(ctx, &sub, l.run.Sub(*o.delegate), l.depth+1, steps, l.acct)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (l *loop) addEvidence(call, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evidence = append(l.evidence, evidenceItem{call: call, result: cut(text, digestItemBytes)})
}

// render serialises a tool result to JSON within the budget, without
// secrets.
func (l *loop) render(out any) string {
	b, err := json.Marshal(out)
	if err != nil {
		b = []byte(fmt.Sprintf("%q", fmt.Sprint(out)))
	}
	return l.red.redact(truncateJSON(b, l.e.cfg.ToolResultBudget))
}

// truncateJSON cuts a serialised result to budget bytes. An array keeps as
// many whole items as fit; anything else is cut on a rune boundary. Either
// way the model is told what was left out and to narrow its query.
func truncateJSON(b []byte, budget int) string {
	if len(b) <= budget {
		return string(b)
	}
	note := func(shown string) string {
		return fmt.Sprintf("[truncated: the result was %d bytes and only %s is shown. Narrow your query to see the rest: a namespace, a label selector, a name, a pattern, a shorter time window or a smaller limit.]", len(b), shown)
	}
	var items []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) && json.Unmarshal(b, &items) == nil {
		room := budget - 300
		var kept []json.RawMessage
		size := 2
		for _, it := range items {
			if size+len(it)+1 > room {
				break
			}
			kept = append(kept, it)
			size += len(it) + 1
		}
		if len(kept) > 0 {
			head, _ := json.Marshal(kept)
			return string(head) + "\n" + note(fmt.Sprintf("the first %d of %d items", len(kept), len(items)))
		}
	}
	return cut(string(b), max(budget-300, 64)) + "\n" + note(fmt.Sprintf("the first %d bytes", max(budget-300, 64)))
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return cut(buf.String(), 3000)
}

var (
	toolCallTag = regexp.MustCompile(`(?s)<tool_call>\s*(\{.*?\})\s*</tool_call>`)
	fencedJSON  = regexp.MustCompile("(?s)```(?:json)?\\s*(\\{.*?\\})\\s*```")
)

// salvageToolCalls recovers tool calls that a local model wrote into its
// text instead of the protocol's tool_calls: Hermes-style
// <tool_call>{...}</tool_call> tags, a fenced JSON block, or a reply that is
// one JSON object, each {"name": ..., "arguments"|"parameters": {...}} with
// a name that is offered.
func salvageToolCalls(content string, ts *toolset) []ToolCall {
	content = strings.TrimSpace(content)
	if content == "" {
		return nil
	}
	var cands []string
	for _, m := range toolCallTag.FindAllStringSubmatch(content, -1) {
		cands = append(cands, m[1])
	}
	if len(cands) == 0 {
		for _, m := range fencedJSON.FindAllStringSubmatch(content, -1) {
			cands = append(cands, m[1])
		}
	}
	if len(cands) == 0 && strings.HasPrefix(content, "{") {
		cands = append(cands, content)
	}
	var out []ToolCall
	for i, c := range cands {
		var v struct {
			Name       string          `json:"name"`
			Arguments  json.RawMessage `json:"arguments"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal([]byte(c), &v) != nil || v.Name == "" {
			continue
		}
		if _, ok := ts.byAlias[v.Name]; !ok {
			continue
		}
		args := v.Arguments
		if len(args) == 0 {
			args = v.Parameters
		}
		// Arguments given as a JSON string holding the object.
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = json.RawMessage(s)
		}
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		out = append(out, ToolCall{ID: fmt.Sprintf("salvaged_%d", i), Name: v.Name, Arguments: args})
	}
	return out
}
