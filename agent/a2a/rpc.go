package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/a2a"
)

// rpcClient is a minimal A2A JSON-RPC 2.0 client (message/send, tasks/get,
// tasks/cancel) over the a2a package's types. (The SDK's a2aclient package
// links gRPC, which this module does not carry.)
type rpcClient struct {
	url     string
	http    *http.Client
	headers map[string]string
	seq     atomic.Int64
}

const maxRPCBytes = 4 << 20

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

func (c *rpcClient) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRPCBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %s: %s", method, resp.Status, cutStr(string(b), 300))
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: the answer is not JSON-RPC: %s", method, cutStr(string(b), 200))
	}
	if r.Error != nil {
		return r.Error
	}
	if len(r.Result) == 0 {
		return fmt.Errorf("%s: the answer has no result", method)
	}
	return out.(interface{ decode(json.RawMessage) error }).decode(r.Result)
}

type sendResult struct{ v a2a.SendMessageResult }

func (s *sendResult) decode(raw json.RawMessage) error {
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &kind); err != nil {
		return err
	}
	switch kind.Kind {
	case "message":
		var m a2a.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		s.v = &m
	case "task", "":
		var t a2a.Task
		if err := json.Unmarshal(raw, &t); err != nil {
			return err
		}
		s.v = &t
	default:
		return fmt.Errorf("unexpected result kind %q", kind.Kind)
	}
	return nil
}

type taskResult struct{ v *a2a.Task }

func (t *taskResult) decode(raw json.RawMessage) error {
	t.v = &a2a.Task{}
	return json.Unmarshal(raw, t.v)
}

// SendMessage calls message/send, blocking until the task is final or the
// peer answers early.
func (c *rpcClient) SendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	blocking := true
	if p.Config == nil {
		p.Config = &a2a.MessageSendConfig{Blocking: &blocking}
	}
	var r sendResult
	if err := c.call(ctx, "message/send", p, &r); err != nil {
		return nil, err
	}
	return r.v, nil
}

// GetTask calls tasks/get.
func (c *rpcClient) GetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	var r taskResult
	if err := c.call(ctx, "tasks/get", q, &r); err != nil {
		return nil, err
	}
	return r.v, nil
}

// CancelTask calls tasks/cancel.
func (c *rpcClient) CancelTask(ctx context.Context, q *a2a.TaskIDParams) (*a2a.Task, error) {
	var r taskResult
	if err := c.call(ctx, "tasks/cancel", q, &r); err != nil {
		return nil, err
	}
	return r.v, nil
}
