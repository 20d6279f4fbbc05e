package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// OpenAI speaks the OpenAI chat-completions protocol (POST
// {base_url}/chat/completions), which OpenAI, Ollama, vLLM, llama.cpp's
// server and LM Studio all serve. The Authorization header is sent only when
// an API key is configured, so keyless local servers work.
type OpenAI struct {
	cfg Config
	t   *transport
	// completionTokens is set once the server refused max_tokens and asked
	// for max_completion_tokens (OpenAI's reasoning models).
	completionTokens atomic.Bool
}

// NewOpenAI returns an OpenAI-compatible client for cfg (defaults applied).
func NewOpenAI(cfg Config) *OpenAI {
	cfg = cfg.withDefaults()
	return &OpenAI{cfg: cfg, t: newTransport(ProviderOpenAI, cfg)}
}

type oaRequest struct {
	Model               string      `json:"model"`
	Messages            []oaMessage `json:"messages"`
	Tools               []oaTool    `json:"tools,omitempty"`
	ToolChoice          any         `json:"tool_choice,omitempty"`
	MaxTokens           int         `json:"max_tokens,omitempty"`
	MaxCompletionTokens int         `json:"max_completion_tokens,omitempty"`
	Temperature         *float64    `json:"temperature,omitempty"`
	Stream              bool        `json:"stream"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Name       string       `json:"name,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaResponse struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name string `json:"name"`
					// A JSON string per the protocol; some servers send
					// the object itself.
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Chat sends one turn.
func (c *OpenAI) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	body := c.encode(req)
	resp, err := c.post(ctx, body)
	if perr, ok := err.(*ProviderError); ok && perr.Code == CodeBadRequest && !c.completionTokens.Load() &&
		strings.Contains(perr.Message, "max_completion_tokens") {
		// OpenAI's reasoning models refuse max_tokens; the limit is still
		// sent, under the name they accept.
		c.completionTokens.Store(true)
		resp, err = c.post(ctx, c.encode(req))
	}
	if err != nil {
		return nil, err
	}
	return c.decode(resp)
}

func (c *OpenAI) post(ctx context.Context, body oaRequest) ([]byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, &ProviderError{Provider: ProviderOpenAI, Code: CodeBadRequest, Message: "encoding the request: " + err.Error()}
	}
	h := http.Header{}
	if c.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	return c.t.post(ctx, c.cfg.BaseURL+"/chat/completions", h, data)
}

func (c *OpenAI) encode(req ChatRequest) oaRequest {
	out := oaRequest{Model: req.Model, Temperature: req.Temperature}
	if out.Model == "" {
		out.Model = c.cfg.Model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.cfg.MaxTokens
	}
	if c.completionTokens.Load() {
		out.MaxCompletionTokens = maxTokens
	} else {
		out.MaxTokens = maxTokens
	}
	if req.System != "" {
		out.Messages = append(out.Messages, oaMessage{Role: "system", Content: strPtr(req.System)})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleAssistant:
			om := oaMessage{Role: "assistant", Content: strPtr(m.Content)}
			if m.Content == "" && len(m.ToolCalls) > 0 {
				om.Content = nil // content null beside tool_calls, as the protocol shows
			}
			for _, tc := range m.ToolCalls {
				var otc oaToolCall
				otc.ID, otc.Type = tc.ID, "function"
				otc.Function.Name = tc.Name
				otc.Function.Arguments = string(tc.Arguments)
				if otc.Function.Arguments == "" {
					otc.Function.Arguments = "{}"
				}
				om.ToolCalls = append(om.ToolCalls, otc)
			}
			out.Messages = append(out.Messages, om)
		case RoleTool:
			out.Messages = append(out.Messages, oaMessage{Role: "tool", Content: strPtr(m.Content), ToolCallID: m.ToolCallID, Name: m.ToolName})
		default:
			out.Messages = append(out.Messages, oaMessage{Role: "user", Content: strPtr(m.Content)})
		}
	}
	for _, t := range req.Tools {
		var ot oaTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, t.Parameters
		out.Tools = append(out.Tools, ot)
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "", ToolChoiceAuto:
			out.ToolChoice = "auto"
		case ToolChoiceRequired:
			out.ToolChoice = "required"
		default:
			out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice}}
		}
	}
	return out
}

func (c *OpenAI) decode(data []byte) (*ChatResponse, error) {
	var r oaResponse
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, badResponse(ProviderOpenAI, "the chat-completions response is not valid JSON: %v", err)
	}
	if len(r.Choices) == 0 {
		return nil, badResponse(ProviderOpenAI, "the chat-completions response has no choices")
	}
	ch := r.Choices[0]
	out := &ChatResponse{StopReason: ch.FinishReason}
	if ch.Message.Content != nil {
		out.Content = *ch.Message.Content
	}
	for i, tc := range ch.Message.ToolCalls {
		call := ToolCall{ID: tc.ID, Name: tc.Function.Name}
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", i)
		}
		args := bytes.TrimSpace(tc.Function.Arguments)
		if len(args) > 0 && args[0] == '"' {
			var s string
			if err := json.Unmarshal(args, &s); err != nil {
				return nil, badResponse(ProviderOpenAI, "tool call %q: arguments: %v", tc.Function.Name, err)
			}
			call.Arguments = json.RawMessage(s)
		} else if len(args) > 0 && string(args) != "null" {
			call.Arguments = json.RawMessage(args)
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	if r.Usage != nil {
		out.Usage = Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}
	}
	return out, nil
}

func strPtr(s string) *string { return &s }
