package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/rootcause/rootcause/agent/a2a"
	"github.com/rootcause/rootcause/db"
)

// A2ATaskStore keeps A2A tasks per team; *db.DB implements it. A task of
// another team is ENOTFOUND, for reads and writes alike.
type A2ATaskStore interface {
	SaveA2ATask(ctx context.Context, team, id string, task json.RawMessage) error
	A2ATask(ctx context.Context, team, id string) (json.RawMessage, error)
}

// a2aTasks is the task store of the A2A handler: Config.A2ATasks, or the
// node store when it is one, or (tests with fake stores) memory.
func (s *Server) a2aTasks() A2ATaskStore {
	if s.cfg.A2ATasks != nil {
		return s.cfg.A2ATasks
	}
	if st, ok := s.cfg.Nodes.(A2ATaskStore); ok {
		return st
	}
	return &memA2ATasks{m: map[string]memA2ATask{}}
}

// teamTasks scopes an A2ATaskStore to the team of the request's context.
type teamTasks struct{ store A2ATaskStore }

func (t teamTasks) SaveTask(ctx context.Context, id string, task []byte) error {
	team, _ := ctx.Value(a2aTeamKey{}).(string)
	if team == "" {
		return a2a.ErrNoTeam
	}
	err := t.store.SaveA2ATask(ctx, team, id, task)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return a2a.ErrTaskNotFound
	}
	return err
}

func (t teamTasks) GetTask(ctx context.Context, id string) ([]byte, error) {
	team, _ := ctx.Value(a2aTeamKey{}).(string)
	if team == "" {
		return nil, a2a.ErrTaskNotFound
	}
	b, err := t.store.A2ATask(ctx, team, id)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil, a2a.ErrTaskNotFound
	}
	return b, err
}

type memA2ATask struct {
	team string
	task json.RawMessage
}

type memA2ATasks struct {
	mu sync.Mutex
	m  map[string]memA2ATask
}

func (m *memA2ATasks) SaveA2ATask(_ context.Context, team, id string, task json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.m[id]; ok && old.team != team {
		return db.Errorf(db.ENOTFOUND, "task %s not found", id)
	}
	m.m[id] = memA2ATask{team: team, task: append(json.RawMessage(nil), task...)}
	return nil
}

func (m *memA2ATasks) A2ATask(_ context.Context, team, id string) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.m[id]
	if !ok || t.team != team {
		return nil, db.Errorf(db.ENOTFOUND, "task %s not found", id)
	}
	return append(json.RawMessage(nil), t.task...), nil
}

// Protocol endpoints (A2A, MCP) answer in two forms. Errors of the HTTP
// transport (authentication, rate limits, a Content-Type that is not
// application/json, a body too large) are the API's error body with
// error.request_id. Errors inside a JSON-RPC request (malformed or
// ambiguous JSON, unknown methods, unknown tasks) are JSON-RPC error
// objects, with the request id in error.data.request_id; a body that is
// not acceptable JSON also answers 400.

// jsonRPCError is a JSON-RPC 2.0 error answer.
type jsonRPCError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonRPCErrorObj `json:"error"`
}

type jsonRPCErrorObj struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// readJSONRPCBody checks and reads a JSON-RPC request body: Content-Type
// application/json in UTF-8 (a transport error otherwise, returned as
// err), then the JSON rules of every body (checkJSONBody). A body that
// breaks those is answered here with a JSON-RPC parse error and 400, and
// ok is false.
func readJSONRPCBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool, err error) {
	if err := checkJSONContentType(r); err != nil {
		return nil, false, err
	}
	body, err = io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, false, db.Errorf(db.ETOOLARGE, "request body exceeds %d bytes", mbe.Limit)
		}
		return nil, false, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		writeJSONRPCError(w, r, http.StatusBadRequest, rpcInvalidRequest, "request body is empty; expected a JSON-RPC request")
		return nil, false, nil
	}
	if err := checkJSONBody(body); err != nil {
		writeJSONRPCError(w, r, http.StatusBadRequest, rpcParseError, db.ErrorMessage(err))
		return nil, false, nil
	}
	return body, true, nil
}

func writeJSONRPCError(w http.ResponseWriter, r *http.Request, status, code int, msg string) {
	data := map[string]any{}
	if id := RequestID(r.Context()); id != "" {
		data["request_id"] = id
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(jsonRPCError{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: jsonRPCErrorObj{Code: code, Message: msg, Data: data}})
}

// jsonContentType labels an answer written without a Content-Type as
// application/json (the A2A library leaves it to sniffing, which says
// text/plain); streaming answers set their own.
type jsonContentType struct{ http.ResponseWriter }

func (j jsonContentType) WriteHeader(code int) {
	if j.Header().Get("Content-Type") == "" {
		j.Header().Set("Content-Type", "application/json")
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j jsonContentType) Write(b []byte) (int, error) {
	if j.Header().Get("Content-Type") == "" {
		j.Header().Set("Content-Type", "application/json")
	}
	return j.ResponseWriter.Write(b)
}

func (j jsonContentType) Flush() {
	if f, ok := j.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (j jsonContentType) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// plainErrors turns the plain-text error answers a protocol library writes
// for transport problems (a missing Accept, a wrong method) into the API's
// error body with error.request_id. Anything else passes through.
type plainErrors struct {
	w       http.ResponseWriter
	r       *http.Request
	status  int
	capture bool
	buf     bytes.Buffer
}

func (p *plainErrors) Header() http.Header { return p.w.Header() }

func (p *plainErrors) WriteHeader(code int) {
	if p.status != 0 {
		return
	}
	p.status = code
	ct := p.w.Header().Get("Content-Type")
	if code >= 400 && !strings.HasPrefix(ct, "application/json") {
		p.capture = true
		return
	}
	p.w.WriteHeader(code)
}

func (p *plainErrors) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.capture {
		return p.buf.Write(b)
	}
	return p.w.Write(b)
}

func (p *plainErrors) Flush() {
	if p.capture {
		return
	}
	if f, ok := p.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes a captured error as the API's error body.
func (p *plainErrors) finish() {
	if !p.capture {
		return
	}
	p.w.Header().Del("Content-Length")
	p.w.Header().Del("X-Content-Type-Options")
	msg := strings.TrimSpace(p.buf.String())
	if msg == "" {
		msg = http.StatusText(p.status)
	}
	code := db.EINVALID
	switch p.status {
	case http.StatusMethodNotAllowed:
		code = EMETHODNOTALLOWED
	case http.StatusUnsupportedMediaType:
		code = EUNSUPPORTEDMEDIA
	case http.StatusNotFound:
		code = db.ENOTFOUND
	case http.StatusRequestEntityTooLarge:
		code = db.ETOOLARGE
	}
	if p.status >= 500 {
		code = db.EINTERNAL
	}
	Error(p.w, p.r, &db.Error{Code: code, Message: msg})
}
