// Package a2a connects rootcause to peer agents over the Agent2Agent
// protocol (JSON-RPC over HTTP, github.com/a2aproject/a2a-go), both ways:
//
//   - Peers turns the org's a2a_peers.<name> definitions that a team lists
//     in a2a_agents into planner tools "a2a:<name>": the sub-question is
//     sent as message/send, the task is awaited (polling tasks/get) within
//     the peer's timeout, cancelled with tasks/cancel when the caller gives
//     up, and the peer's answer (text and data parts) is returned.
//   - NewHandler and Card serve rootcause itself as an A2A agent: a message
//     becomes an investigation (the planner) and the result is the task's
//     artifact.
package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/secretref"
)

// ToolPrefix prefixes the tools of peers: "a2a:<name>".
const ToolPrefix = "a2a:"

// Defaults of a peer.
const (
	DefaultTimeout = 120 * time.Second
	cardTTL        = 5 * time.Minute
	maxCardBytes   = 1 << 20
	maxAnswerBytes = 64 << 10
	pollEvery      = 500 * time.Millisecond
)

// Parameters is the JSON Schema of an a2a:<name> tool.
var Parameters = json.RawMessage(`{"type":"object","properties":{` +
	`"message":{"type":"string","description":"The sub-question for the peer agent, self-contained."},` +
	`"context":{"type":"object","additionalProperties":{"type":"string"},"description":"Optional context (service, environment, namespace, time_window ...)."}},` +
	`"required":["message"]}`)

// PeerDef is one a2a_peers.<name> object.
type PeerDef struct {
	Name    string
	URL     string // the agent card URL, or the agent's base URL
	Headers map[string]string
	Timeout time.Duration
	Enabled bool
}

// PeerDefs reads a2a_peers from an effective config.
func PeerDefs(cfg map[string]any) map[string]PeerDef {
	out := map[string]PeerDef{}
	peers, _ := cfg["a2a_peers"].(map[string]any)
	for name, v := range peers {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		d := PeerDef{Name: name, Enabled: m["enabled"] != false, Timeout: DefaultTimeout}
		d.URL, _ = m["url"].(string)
		if hs, ok := m["headers"].(map[string]any); ok {
			d.Headers = map[string]string{}
			for k, v := range hs {
				if s, ok := v.(string); ok {
					d.Headers[k] = s
				}
			}
		}
		if t, ok := m["timeout"].(float64); ok && t > 0 && t < math.MaxInt32 {
			d.Timeout = time.Duration(t * float64(time.Second))
		}
		out[name] = d
	}
	return out
}

// Options configure Peers.
type Options struct {
	Resolver   secretref.Resolver // header references; nil: no headers allowed
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Peers builds the a2a:<name> tools. It caches agent cards.
type Peers struct {
	opts  Options
	mu    sync.Mutex
	cards map[string]cachedCard
}

type cachedCard struct {
	card *a2a.AgentCard
	at   time.Time
}

// NewPeers returns a Peers.
func NewPeers(opts Options) *Peers {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Peers{opts: opts, cards: map[string]cachedCard{}}
}

// Tools returns a tool per enabled peer the team lists in a2a_agents. The
// tools are in the planner's default toolkit (Spec.Agents), so listing a
// peer in a2a_agents is enough for the planner to delegate to it; other
// agents get it through enable_extra_tools "a2a:<name>". The description
// comes from the peer's agent card when it can be read now (else a
// generic one; the card is read again at the call).
func (p *Peers) Tools(ctx context.Context, teamConfig map[string]any) ([]tools.Tool, error) {
	defs := PeerDefs(teamConfig)
	var out []tools.Tool
	listed, _ := teamConfig["a2a_agents"].([]any)
	for _, it := range listed {
		name, _ := it.(string)
		def, ok := defs[name]
		if !ok || !def.Enabled {
			continue
		}
		desc := fmt.Sprintf("Ask the peer agent %q (over A2A) a self-contained sub-question and get its answer.", name)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		card, err := p.card(cctx, def)
		cancel()
		if err == nil {
			desc = fmt.Sprintf("Ask the peer agent %q (%s) a self-contained sub-question over A2A and get its answer. %s", name, card.Name, cutStr(card.Description, 1000))
		} else {
			p.opts.Logger.Warn("reading a peer's agent card", "peer", name, "error", err)
		}
		out = append(out, tools.Tool{
			Spec: tools.Spec{
				Name:        ToolPrefix + name,
				Description: strings.TrimSpace(desc),
				Parameters:  Parameters,
				Integration: "a2a:" + name,
				ReadOnly:    true,
				Agents:      []string{tools.AgentPlanner},
			},
			Run: func(ctx context.Context, _ *tools.Env, args json.RawMessage) (any, error) {
				return p.Ask(ctx, def, args)
			},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *Peers) headers(ctx context.Context, def PeerDef) (map[string]string, error) {
	if len(def.Headers) == 0 {
		return nil, nil
	}
	if p.opts.Resolver == nil {
		return nil, errors.New("peer headers use secret references but no resolver is configured")
	}
	out := map[string]string{}
	for k, ref := range def.Headers {
		v, err := p.opts.Resolver.Resolve(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("resolving header %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// cardURL is the agent card URL of def: its url when it names a .json
// document, else url + /.well-known/agent-card.json.
func cardURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("the peer url must be an http or https URL")
	}
	if strings.HasSuffix(u.Path, ".json") {
		return raw, nil
	}
	return strings.TrimRight(raw, "/") + "/.well-known/agent-card.json", nil
}

func (p *Peers) card(ctx context.Context, def PeerDef) (*a2a.AgentCard, error) {
	cu, err := cardURL(def.URL)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	c, ok := p.cards[cu]
	p.mu.Unlock()
	if ok && time.Since(c.at) < cardTTL {
		return c.card, nil
	}
	hs, err := p.headers(ctx, def)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cu, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range hs {
		req.Header.Set(k, v)
	}
	resp, err := p.opts.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("reading the agent card: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the agent card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the agent card answered %s", resp.Status)
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil || card.URL == "" {
		return nil, fmt.Errorf("the agent card at %s is not an A2A agent card (no url)", cu)
	}
	p.mu.Lock()
	p.cards[cu] = cachedCard{card: &card, at: time.Now()}
	p.mu.Unlock()
	return &card, nil
}

// Answer is what an a2a:<name> tool returns.
type Answer struct {
	Peer   string           `json:"peer"`
	TaskID string           `json:"task_id,omitempty"`
	State  string           `json:"state"`
	Text   string           `json:"text"`
	Data   []map[string]any `json:"data,omitempty"`
}

type askArgs struct {
	Message string            `json:"message"`
	Context map[string]string `json:"context"`
}

// Ask sends the sub-question in args to the peer and waits for its answer.
func (p *Peers) Ask(ctx context.Context, def PeerDef, args json.RawMessage) (*Answer, error) {
	src := ToolPrefix + def.Name
	var a askArgs
	if err := json.Unmarshal(args, &a); err != nil || strings.TrimSpace(a.Message) == "" {
		return nil, &evidence.Error{Source: src, Code: evidence.CodeInvalid, Err: errors.New(`want {"message": "<sub-question>", "context": {...}}`)}
	}
	ctx, cancel := context.WithTimeout(ctx, def.Timeout)
	defer cancel()
	unavailable := func(format string, args ...any) error {
		return &evidence.Error{Source: src, Code: evidence.CodeUnavailable, Err: fmt.Errorf(format, args...)}
	}
	card, err := p.card(ctx, def)
	if err != nil {
		return nil, unavailable("peer %q: %v", def.Name, err)
	}
	hs, err := p.headers(ctx, def)
	if err != nil {
		return nil, unavailable("peer %q: %v", def.Name, err)
	}
	if card.PreferredTransport != "" && card.PreferredTransport != a2a.TransportProtocolJSONRPC {
		return nil, unavailable("peer %q prefers transport %s; rootcause speaks JSONRPC", def.Name, card.PreferredTransport)
	}
	client := &rpcClient{url: card.URL, http: p.opts.HTTPClient, headers: hs}

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: a.Message})
	if len(a.Context) > 0 {
		data := map[string]any{}
		for k, v := range a.Context {
			data[k] = v
		}
		msg.Parts = append(msg.Parts, a2a.DataPart{Data: map[string]any{"context": data}})
	}
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if err != nil {
		if ctx.Err() != nil {
			return nil, unavailable("peer %q did not answer within %s", def.Name, def.Timeout)
		}
		return nil, unavailable("peer %q: message/send: %v", def.Name, err)
	}
	var task *a2a.Task
	switch r := res.(type) {
	case *a2a.Message:
		text, data := partsOf(r.Parts)
		return &Answer{Peer: def.Name, State: string(a2a.TaskStateCompleted), Text: text, Data: data}, nil
	case *a2a.Task:
		task = r
	default:
		return nil, unavailable("peer %q answered message/send with %T", def.Name, res)
	}
	for !task.Status.State.Terminal() && task.Status.State != a2a.TaskStateInputRequired && task.Status.State != a2a.TaskStateAuthRequired {
		select {
		case <-ctx.Done():
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, cerr := client.CancelTask(cctx, &a2a.TaskIDParams{ID: task.ID})
			ccancel()
			if cerr != nil {
				p.opts.Logger.Warn("cancelling a peer task", "peer", def.Name, "task", task.ID, "error", cerr)
			}
			return nil, unavailable("peer %q did not finish task %s within %s (cancelled)", def.Name, task.ID, def.Timeout)
		case <-time.After(pollEvery):
		}
		t, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return nil, unavailable("peer %q: tasks/get %s: %v", def.Name, task.ID, err)
		}
		task = t
	}
	ans := &Answer{Peer: def.Name, TaskID: string(task.ID), State: string(task.Status.State)}
	var texts []string
	for _, art := range task.Artifacts {
		if art == nil {
			continue
		}
		t, d := partsOf(art.Parts)
		if t != "" {
			texts = append(texts, t)
		}
		ans.Data = append(ans.Data, d...)
	}
	if task.Status.Message != nil {
		if t, _ := partsOf(task.Status.Message.Parts); t != "" && !slices.Contains(texts, t) {
			texts = append(texts, t)
		}
	}
	ans.Text = cutStr(strings.Join(texts, "\n"), maxAnswerBytes)
	if task.Status.State != a2a.TaskStateCompleted {
		return nil, &evidence.Error{Source: src, Code: evidence.CodeUnavailable,
			Err: fmt.Errorf("peer %q ended task %s as %s: %s", def.Name, task.ID, task.Status.State, cutStr(ans.Text, 2000))}
	}
	return ans, nil
}

func partsOf(parts a2a.ContentParts) (string, []map[string]any) {
	var texts []string
	var data []map[string]any
	for _, p := range parts {
		switch v := p.(type) {
		case a2a.TextPart:
			texts = append(texts, v.Text)
		case *a2a.TextPart:
			texts = append(texts, v.Text)
		case a2a.DataPart:
			data = append(data, v.Data)
		case *a2a.DataPart:
			data = append(data, v.Data)
		}
	}
	return strings.Join(texts, "\n"), data
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func cutStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
