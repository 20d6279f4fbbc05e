// Package llm is the LLM engine: small clients for the OpenAI-compatible
// chat-completions protocol (OpenAI, Ollama, vLLM, llama.cpp, LM Studio) and
// the Anthropic Messages protocol, written over net/http, and the
// tool-calling loop that investigates with them (see engine.go and
// docs/llm.md).
//
// The clients are non-streaming: each model turn is one HTTP request and one
// JSON response. Investigations run as background work, progress is
// reported per step through agent.Run, and streaming would only add
// partial-frame handling without making a step finish sooner.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Provider names (the llm.provider setting).
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Defaults of Config.
const (
	DefaultMaxTokens        = 4096
	DefaultTimeout          = 180 * time.Second
	DefaultMaxSteps         = 20
	DefaultMaxRetries       = 2 // three attempts in all
	DefaultToolResultBudget = 16 << 10
)

// Config holds the LLM settings of the server (llm.* keys, see docs/llm.md).
// APIKey is the resolved value of the llm.api_key reference: the integrator
// resolves it at start-up with a secretref.Resolver and never stores it.
type Config struct {
	Provider    string   // "openai" (any OpenAI-compatible server) or "anthropic"
	BaseURL     string   // e.g. http://127.0.0.1:11434/v1 (Ollama), https://api.anthropic.com
	Model       string   // default model; agents.<name>.model overrides it per agent
	APIKey      string   // resolved secret; empty for keyless local servers
	MaxTokens   int      // sent on every request; default 4096
	Temperature *float64 // nil: the server's default; agents.<name>.temperature overrides it
	// Timeout bounds one HTTP attempt (the whole response of one model
	// turn); default 180s. Local models on CPUs may need more.
	Timeout time.Duration
	// MaxSteps caps the model turns of one agent's loop; default 20.
	MaxSteps int
	// MaxRetries is how many times a 429, a 5xx or a connection failure is
	// retried after the first attempt; 0 means the default (2), negative
	// means never retry.
	MaxRetries int
	// ToolResultBudget caps the bytes of one tool result sent to the model;
	// default 16 KiB.
	ToolResultBudget int
	// Required makes a provider failure fail the investigation with
	// llm_unavailable instead of falling back to the offline analyst.
	Required bool
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Provider == "" {
		c.Provider = ProviderOpenAI
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries // negative stays: no retries (idempotent)
	}
	if c.ToolResultBudget <= 0 {
		c.ToolResultBudget = DefaultToolResultBudget
	}
	if c.BaseURL == "" {
		switch c.Provider {
		case ProviderAnthropic:
			c.BaseURL = "https://api.anthropic.com"
		case ProviderOpenAI:
			c.BaseURL = "https://api.openai.com/v1"
		}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch c.Provider {
	case ProviderOpenAI, ProviderAnthropic:
	default:
		return fmt.Errorf("llm.provider: must be %q or %q, not %q", ProviderOpenAI, ProviderAnthropic, c.Provider)
	}
	if c.Model == "" {
		return fmt.Errorf("llm.model: must not be empty")
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return fmt.Errorf("llm.base_url: must be an http:// or https:// URL")
	}
	if c.Provider == ProviderAnthropic && c.APIKey == "" {
		return fmt.Errorf("llm.api_key: the anthropic provider needs an API key reference")
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2) {
		return fmt.Errorf("llm.temperature: must be between 0 and 2")
	}
	return nil
}

// NewProvider returns the client that cfg.Provider names.
func NewProvider(cfg Config) (Provider, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Provider {
	case ProviderAnthropic:
		return NewAnthropic(cfg), nil
	default:
		return NewOpenAI(cfg), nil
	}
}

// Provider is one chat model API.
type Provider interface {
	Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error)
}

// Tool choices of a ChatRequest; any other value names the one tool the
// model must call.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
)

// ChatRequest is one model turn, independent of the wire protocol.
type ChatRequest struct {
	Model       string
	System      string
	Messages    []Message
	Tools       []ToolDef
	ToolChoice  string // "" or auto, required, or a tool name
	MaxTokens   int
	Temperature *float64
}

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one conversation turn. An assistant message may carry tool
// calls; a tool message answers one of them by ToolCallID.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall // assistant
	ToolCallID string     // tool
	ToolName   string     // tool: the name of the tool that answered
	IsError    bool       // tool: the result is an error
}

// ToolDef offers a tool to the model. Parameters is a JSON Schema object.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is a call the model asked for. Arguments holds the bytes the
// model produced, which may not be valid JSON: callers must check.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ChatResponse is the model's answer to one turn.
type ChatResponse struct {
	Content    string
	ToolCalls  []ToolCall
	StopReason string // as the server said it: stop, tool_calls, length, end_turn, tool_use, max_tokens
	Usage      Usage
}

// Truncated reports whether the model stopped at max_tokens.
func (r *ChatResponse) Truncated() bool {
	return r.StopReason == "length" || r.StopReason == "max_tokens"
}

// Usage counts tokens of one or more model calls.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Codes of a ProviderError.
const (
	CodeRateLimited = "rate_limited" // 429 after the retries
	CodeServerError = "server_error" // 5xx after the retries
	CodeUnreachable = "unreachable"  // connection failure or no response within the timeout
	CodeBadRequest  = "bad_request"  // other 4xx: the request was refused
	CodeAuth        = "auth"         // 401, 403
	CodeBadResponse = "bad_response" // a 2xx body that is not the protocol's JSON
)

// ProviderError is a failed model call. Its message never holds the API key.
type ProviderError struct {
	Provider string
	Status   int // HTTP status, 0 when there was no response
	Code     string
	Message  string
	timedOut bool // no response within the per-attempt timeout
}

func (e *ProviderError) Error() string {
	s := e.Provider + ": " + e.Code
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// CodeLLMUnavailable is the error code of an investigation that needed the
// LLM and could not get it; the runtime maps it to the API's error.code.
const CodeLLMUnavailable = "llm_unavailable"

// UnavailableError ends an investigation whose team requires the LLM when
// the provider cannot be used. Code is always CodeLLMUnavailable.
type UnavailableError struct {
	Code string
	Err  error
}

func (e *UnavailableError) Error() string {
	return "LLM provider unavailable: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrorCode is the investigation's error.code (agent.CodedError):
// llm_unavailable.
func (e *UnavailableError) ErrorCode() string {
	if e.Code == "" {
		return CodeLLMUnavailable
	}
	return e.Code
}

// IsUnavailable reports whether err is (or wraps) an UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
