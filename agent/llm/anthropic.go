package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// AnthropicVersion is the anthropic-version header sent on every request.
const AnthropicVersion = "2023-06-01"

// Anthropic speaks the Anthropic Messages protocol (POST
// {base_url}/v1/messages).
type Anthropic struct {
	cfg Config
	t   *transport
}

// NewAnthropic returns an Anthropic Messages client for cfg (defaults
// applied).
func NewAnthropic(cfg Config) *Anthropic {
	cfg = cfg.withDefaults()
	return &Anthropic{cfg: cfg, t: newTransport(ProviderAnthropic, cfg)}
}

type anRequest struct {
	Model       string      `json:"model"`
	System      string      `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	ToolChoice  *anChoice   `json:"tool_choice,omitempty"`
	MaxTokens   int         `json:"max_tokens"`
	Temperature *float64    `json:"temperature,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type anResponse struct {
	Type       string    `json:"type"`
	Content    []anBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// Chat sends one turn.
func (c *Anthropic) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	data, err := json.Marshal(c.encode(req))
	if err != nil {
		return nil, &ProviderError{Provider: ProviderAnthropic, Code: CodeBadRequest, Message: "encoding the request: " + err.Error()}
	}
	h := http.Header{}
	h.Set("anthropic-version", AnthropicVersion)
	if c.cfg.APIKey != "" {
		h.Set("x-api-key", c.cfg.APIKey)
	}
	body, err := c.t.post(ctx, c.cfg.BaseURL+"/v1/messages", h, data)
	if err != nil {
		return nil, err
	}
	return decodeAnthropic(body)
}

func (c *Anthropic) encode(req ChatRequest) anRequest {
	out := anRequest{Model: req.Model, System: req.System, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if out.Model == "" {
		out.Model = c.cfg.Model
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = c.cfg.MaxTokens
	}
	// The protocol alternates user and assistant turns; tool results are
	// user turns. Consecutive turns of one role are merged into one.
	add := func(role string, blocks ...anBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, anMessage{Role: role, Content: blocks})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleAssistant:
			var blocks []anBlock
			if m.Content != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				input := tc.Arguments
				if !isJSONObject(input) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
			add("assistant", blocks...)
		case RoleTool:
			content := m.Content
			if content == "" {
				content = "(empty result)"
			}
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: content, IsError: m.IsError})
		default:
			if m.Content != "" {
				add("user", anBlock{Type: "text", Text: m.Content})
			}
		}
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "", ToolChoiceAuto:
			out.ToolChoice = &anChoice{Type: "auto"}
		case ToolChoiceRequired:
			out.ToolChoice = &anChoice{Type: "any"}
		default:
			out.ToolChoice = &anChoice{Type: "tool", Name: req.ToolChoice}
		}
	}
	return out
}

func decodeAnthropic(data []byte) (*ChatResponse, error) {
	var r anResponse
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&r); err != nil {
		return nil, badResponse(ProviderAnthropic, "the messages response is not valid JSON: %v", err)
	}
	if r.Type != "" && r.Type != "message" {
		return nil, badResponse(ProviderAnthropic, "unexpected response type %q", r.Type)
	}
	out := &ChatResponse{StopReason: r.StopReason, Usage: Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			if out.Content != "" {
				out.Content += "\n"
			}
			out.Content += b.Text
		case "tool_use":
			id := b.ID
			if id == "" {
				id = fmt.Sprintf("toolu_%d", i)
			}
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: b.Name, Arguments: args})
		}
	}
	return out, nil
}

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}
