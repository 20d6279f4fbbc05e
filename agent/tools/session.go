package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// DefaultCallTimeout bounds one tool call when the session sets none.
const DefaultCallTimeout = 60 * time.Second

// Session is the standard Caller: it runs catalog tools for one agent run
// within that agent's toolkit, and records which tools were used.
// It is safe for concurrent use.
type Session struct {
	Catalog *Catalog
	Env     *Env
	Toolkit []string      // the agent's resolved toolkit
	Timeout time.Duration // per call; 0 means DefaultCallTimeout
	// OnCall, if set, is told of every call as it ends (for progress,
	// events and metrics). err is nil on success.
	OnCall func(name string, d time.Duration, err error)
	// Used, if set, records the tools called; sessions of one investigation
	// (an agent and the specialists it delegates to) share one.
	Used *UsedTools

	own UsedTools
}

// UsedTools is a set of tool names in first-use order, safe for concurrent use.
type UsedTools struct {
	mu    sync.Mutex
	names []string
}

// Add records name.
func (u *UsedTools) Add(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.names, name) {
		u.names = append(u.names, name)
	}
}

// Names returns the recorded names in first-use order.
func (u *UsedTools) Names() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.names)
}

var _ Caller = (*Session)(nil)

// Has reports whether name is in the toolkit and allowed for this session.
func (s *Session) Has(name string) bool {
	if !slices.Contains(s.Toolkit, name) {
		return false
	}
	t, ok := s.Catalog.Get(name)
	if !ok {
		return false
	}
	return t.ReadOnly || (s.Env != nil && s.Env.WriteActions)
}

// Call runs the tool name with args.
func (s *Session) Call(ctx context.Context, name string, args any) (any, error) {
	t, ok := s.Catalog.Get(name)
	if !ok {
		return nil, &evidence.Error{Source: name, Code: evidence.CodeInvalid, Err: fmt.Errorf("unknown tool %q", name)}
	}
	if !slices.Contains(s.Toolkit, name) {
		return nil, &evidence.Error{Source: name, Code: evidence.CodeNotConfigured, Err: fmt.Errorf("tool %q is not in this agent's toolkit", name)}
	}
	if !t.ReadOnly && (s.Env == nil || !s.Env.WriteActions) {
		return nil, &evidence.Error{Source: name, Code: evidence.CodeNotConfigured,
			Err: fmt.Errorf("tool %q changes things and is refused: the team's feature_flags.enable_write_actions is not true", name)}
	}
	raw, err := toRaw(args)
	if err != nil {
		return nil, &evidence.Error{Source: name, Code: evidence.CodeInvalid, Err: err}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.record(name)
	start := time.Now()
	env := s.Env
	if env == nil {
		env = &Env{Sources: &evidence.Sources{}}
	}
	out, err := t.Run(cctx, env, raw)
	err = scrubSecrets(err, env.Secrets)
	if err != nil && cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		err = &evidence.Error{Source: name, Code: evidence.CodeUnavailable, Err: fmt.Errorf("tool %q timed out after %s", name, timeout)}
	}
	if s.OnCall != nil {
		s.OnCall(name, time.Since(start), err)
	}
	return out, err
}

// ToolsUsed returns the names of the tools called, in first-use order.
func (s *Session) ToolsUsed() []string { return s.recorder().Names() }

func (s *Session) record(name string) { s.recorder().Add(name) }

func (s *Session) recorder() *UsedTools {
	if s.Used != nil {
		return s.Used
	}
	return &s.own
}

func toRaw(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		if len(a) == 0 {
			return json.RawMessage(`{}`), nil
		}
		return a, nil
	case []byte:
		return json.RawMessage(a), nil
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("encoding arguments: %w", err)
		}
		return b, nil
	}
}

// minSecretLen is the shortest value scrubbed: shorter ones would match
// ordinary text and cannot be real credentials.
const minSecretLen = 6

// scrubSecrets returns err with every secret value replaced by
// "[redacted]", keeping its evidence code and source.
func scrubSecrets(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			clean = strings.ReplaceAll(clean, s, "[redacted]")
		}
	}
	if clean == msg {
		return err
	}
	src, code := evidence.SourceOf(err), evidence.CodeOf(err)
	if code == "" {
		return errors.New(clean)
	}
	if src != "" {
		clean = strings.TrimPrefix(clean, src+": ")
	}
	return &evidence.Error{Source: src, Code: code, Err: errors.New(clean)}
}
