package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bundlePath returns the absolute path of a public scenario's bundle.
func bundlePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "testdata", "scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// addTeam creates a team under the org root, applies cfg to its own config
// with the admin token, and returns a team token (with write permission
// when write is true).
func addTeam(t *testing.T, s *server, admin, team string, cfg map[string]any, write bool) string {
	t.Helper()
	mustCLI(t, s.dataDir, "node", "add", team, "--parent", "default", "--kind", "team")
	if cfg != nil {
		r := call(t, http.MethodPut, s.url+"/api/v1/admin/nodes/"+team+"/config", "Bearer "+admin, cfg)
		if r.status != http.StatusOK {
			t.Fatalf("configuring %s: %d %s", team, r.status, r.raw)
		}
	}
	args := []string{"--team", team}
	if write {
		args = append(args, "--write")
	}
	return "Bearer " + issue(t, s.dataDir, args...)
}

// pollFinal polls the status of id until it is final.
func pollFinal(t *testing.T, s *server, auth, id string) *response {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r := call(t, http.MethodGet, s.url+"/api/v1/agents/status/"+id, auth, nil)
		if r.status != http.StatusOK {
			t.Fatalf("status of %s: %d %s", id, r.status, r.raw)
		}
		switch r.body["status"] {
		case "completed", "failed", "cancelled":
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("investigation %s not final after 60s", id)
	return nil
}

func TestInvestigationAPI(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	admin := issue(t, dir, "--admin")
	payments := addTeam(t, s, admin, "payments", map[string]any{"evidence_bundle": bundlePath(t, "oom-after-deploy")}, false)
	search := addTeam(t, s, admin, "search", map[string]any{"evidence_bundle": bundlePath(t, "healthy-control")}, false)
	empty := addTeam(t, s, admin, "nodata", nil, false)
	run := s.url + "/api/v1/agents/run"

	// Async: 202 with poll_url, then completed with every field of spec 4.2.
	r := call(t, http.MethodPost, run, payments, map[string]any{"agent_name": "planner", "message": "why is search-api failing?", "async": true,
		"context": map[string]string{"service": "search-api"}})
	if r.status != http.StatusAccepted {
		t.Fatalf("async run: %d %s", r.status, r.raw)
	}
	id, _ := r.body["investigation_id"].(string)
	if st := r.body["status"]; st != "pending" && st != "running" {
		t.Errorf("async status = %v", st)
	}
	if r.body["poll_url"] != "/api/v1/agents/status/"+id || r.body["created_at"] == nil {
		t.Errorf("async answer = %s", r.raw)
	}
	done := pollFinal(t, s, payments, id)
	for _, f := range []string{"investigation_id", "status", "agent", "message", "result", "tools_used", "started_at", "completed_at", "duration_seconds"} {
		if _, ok := done.body[f]; !ok {
			t.Errorf("completed status lacks %s: %s", f, done.raw)
		}
	}
	res, _ := done.body["result"].(map[string]any)
	rc, _ := res["root_cause"].(map[string]any)
	if desc, _ := rc["description"].(string); !strings.Contains(strings.ToLower(desc), "oomkilled") {
		t.Errorf("root cause = %q", desc)
	}

	// Sync: 200 with the result.
	r = call(t, http.MethodPost, run, search, map[string]any{"agent_name": "investigation_agent", "message": "is catalog healthy?"})
	if r.status != http.StatusOK || r.body["status"] != "completed" || r.body["result"] == nil || r.body["tools_used"] == nil {
		t.Fatalf("sync run: %d %s", r.status, r.raw)
	}

	// Another team's id and a missing id give the same 404.
	other := call(t, http.MethodGet, s.url+"/api/v1/agents/status/"+id, search, nil)
	missing := call(t, http.MethodGet, s.url+"/api/v1/agents/status/inv_000000000000000000000000", search, nil)
	if other.status != http.StatusNotFound || missing.status != http.StatusNotFound || other.errorCode() != "not_found" || missing.errorCode() != "not_found" {
		t.Errorf("other team: %d %s; missing: %d %s", other.status, other.raw, missing.status, missing.raw)
	}
	if r := call(t, http.MethodPost, s.url+"/api/v1/agents/status/"+id+"/cancel", search, nil); r.status != http.StatusNotFound {
		t.Errorf("cancel of another team's investigation: %d %s", r.status, r.raw)
	}
	// Cancelling a final investigation is 409.
	if r := call(t, http.MethodPost, s.url+"/api/v1/agents/status/"+id+"/cancel", payments, nil); r.status != http.StatusConflict || r.errorCode() != "invalid_state" {
		t.Errorf("cancel of a completed investigation: %d %s", r.status, r.raw)
	}
	// An admin names the team; one that does not exist is 404.
	if r := call(t, http.MethodGet, s.url+"/api/v1/agents/investigations?team=nope", "Bearer "+admin, nil); r.status != http.StatusNotFound {
		t.Errorf("admin list of a missing team: %d %s", r.status, r.raw)
	}
	if r := call(t, http.MethodGet, s.url+"/api/v1/agents/investigations?team=payments", "Bearer "+admin, nil); r.status != http.StatusOK {
		t.Errorf("admin list of payments: %d %s", r.status, r.raw)
	}
	// Lists show only the caller's team.
	l := call(t, http.MethodGet, s.url+"/api/v1/agents/investigations", search, nil)
	if items, _ := l.body["investigations"].([]any); len(items) != 1 {
		t.Errorf("search's list = %s", l.raw)
	}

	bad := []struct {
		name   string
		auth   string
		body   any
		status int
		code   string
		inMsg  string
	}{
		{"MissingAgent", payments, map[string]any{"message": "m"}, 400, "invalid_request", "agent_name"},
		{"MissingMessage", payments, map[string]any{"agent_name": "planner"}, 400, "invalid_request", "message"},
		{"WrongType", payments, map[string]any{"agent_name": 7, "message": "m"}, 400, "invalid_request", "agent_name"},
		{"UnknownAgent", payments, map[string]any{"agent_name": "oracle", "message": "m"}, 400, "invalid_request", "oracle"},
		{"UnknownContextKey", payments, map[string]any{"agent_name": "planner", "message": "m", "context": map[string]string{"colour": "red"}}, 400, "invalid_request", "colour"},
		{"OversizedMessage", payments, map[string]any{"agent_name": "planner", "message": strings.Repeat("x", 17<<10)}, 413, "payload_too_large", "message"},
		{"NoDataSource", empty, map[string]any{"agent_name": "k8s_agent", "message": "m"}, 400, "invalid_request", "tools.kubernetes"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, http.MethodPost, run, tt.auth, tt.body)
			if r.status != tt.status || r.errorCode() != tt.code || !strings.Contains(string(r.raw), tt.inMsg) {
				t.Errorf("got %d %s; want %d %s mentioning %q", r.status, r.raw, tt.status, tt.code, tt.inMsg)
			}
		})
	}
	// A disabled agent is refused, naming it.
	call(t, http.MethodPut, s.url+"/api/v1/admin/nodes/payments/config", "Bearer "+admin, map[string]any{"agents": map[string]any{"aws_agent": map[string]any{"enabled": false}}})
	if r := call(t, http.MethodPost, run, payments, map[string]any{"agent_name": "aws_agent", "message": "m"}); r.status != 400 || !strings.Contains(string(r.raw), "disabled") {
		t.Errorf("disabled agent: %d %s", r.status, r.raw)
	}

	// The run limit: a fresh token gets 10 runs a minute, the 11th is 429.
	fresh := "Bearer " + issue(t, dir, "--team", "search")
	var last *response
	for i := 0; i < 11; i++ {
		last = call(t, http.MethodPost, run, fresh, map[string]any{"agent_name": "k8s_agent", "message": "m", "async": true})
	}
	if last.status != http.StatusTooManyRequests || last.errorCode() != "rate_limited" || last.header.Get("Retry-After") == "" {
		t.Errorf("11th run: %d %s", last.status, last.raw)
	}
}

// hangingServer accepts requests and never answers until the client goes
// away; it counts requests in flight.
type hangingServer struct {
	*httptest.Server
	inFlight atomic.Int64
	started  atomic.Int64
}

func newHangingServer(t *testing.T) *hangingServer {
	h := &hangingServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.started.Add(1)
		h.inFlight.Add(1)
		defer h.inFlight.Add(-1)
		// Read the body first: net/http notices a client that went away
		// (and cancels r.Context) only once the request body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(h.Close)
	return h
}

func TestInvestigationCancelAndCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "ROOTCAUSE_WORKERS=1", "ROOTCAUSE_OUTBOUND_ALLOW=127.0.0.1")
	admin := issue(t, dir, "--admin")
	prom := newHangingServer(t)
	team := addTeam(t, s, admin, "metrics", map[string]any{"tools": map[string]any{"prometheus": map[string]any{"url": prom.URL}}}, false)
	run := s.url + "/api/v1/agents/run"

	r := call(t, http.MethodPost, run, team, map[string]any{"agent_name": "metrics_agent", "message": "latency?", "async": true})
	id, _ := r.body["investigation_id"].(string)
	waitFor(t, "the metrics query to reach prometheus", func() bool { return prom.inFlight.Load() > 0 })
	st := call(t, http.MethodGet, s.url+"/api/v1/agents/status/"+id, team, nil)
	if st.body["status"] != "running" || st.body["progress"] == nil || st.body["elapsed_seconds"] == nil {
		t.Errorf("running status = %s", st.raw)
	}
	c := call(t, http.MethodPost, s.url+"/api/v1/agents/status/"+id+"/cancel", team, nil)
	if c.status != http.StatusOK || c.body["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", c.status, c.raw)
	}
	waitFor(t, "the in-flight prometheus query to stop", func() bool { return prom.inFlight.Load() == 0 })
	if r := call(t, http.MethodPost, s.url+"/api/v1/agents/status/"+id+"/cancel", team, nil); r.status != http.StatusConflict {
		t.Errorf("second cancel: %d %s", r.status, r.raw)
	}

	// One run hangs (running) with one worker; two more wait (pending).
	var ids []string
	for i := 0; i < 3; i++ {
		r := call(t, http.MethodPost, run, team, map[string]any{"agent_name": "metrics_agent", "message": fmt.Sprintf("run %d", i), "async": true})
		ids = append(ids, r.body["investigation_id"].(string))
	}
	waitFor(t, "the first run to query prometheus", func() bool { return prom.inFlight.Load() > 0 })
	s.kill()

	// After the restart the running one is interrupted, the pending ones
	// run (against the same hanging server, so cancel them to finish).
	s = startServer(t, dir, "ROOTCAUSE_WORKERS=1", "ROOTCAUSE_OUTBOUND_ALLOW=127.0.0.1")
	first := pollFinal(t, s, team, ids[0])
	if first.body["status"] != "failed" {
		t.Fatalf("running investigation after restart: %s", first.raw)
	}
	if e, _ := first.body["error"].(map[string]any); e["code"] != "interrupted" {
		t.Errorf("error = %v, want interrupted", e)
	}
	for _, id := range ids[1:] {
		r := call(t, http.MethodGet, s.url+"/api/v1/agents/status/"+id, team, nil)
		if st := r.body["status"]; st != "pending" && st != "running" {
			t.Errorf("queued investigation %s after restart: %v", id, st)
		}
		call(t, http.MethodPost, s.url+"/api/v1/agents/status/"+id+"/cancel", team, nil)
	}
	s.stop()
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	waitForWithin(t, 20*time.Second, what, ok)
}

func waitForWithin(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestInvestigationsAtScale submits 1,000 async runs from 10 teams (100 in
// short mode) and checks each team lists exactly its own with exact totals,
// and that the server's peak memory stays bounded.
func TestInvestigationsAtScale(t *testing.T) {
	perTeam := 100
	if testing.Short() {
		perTeam = 10
	}
	dir := t.TempDir()
	s := startServer(t, dir, "ROOTCAUSE_RATE_LIMIT_RUN=100000", "ROOTCAUSE_RATE_LIMIT_READ=100000", "ROOTCAUSE_QUEUE_SIZE=2000")
	admin := issue(t, dir, "--admin")
	bundle := bundlePath(t, "healthy-control")
	teams := map[string]string{}
	for i := 0; i < 10; i++ {
		name := "team" + strconv.Itoa(i)
		teams[name] = addTeam(t, s, admin, name, map[string]any{"evidence_bundle": bundle}, false)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	submitted := map[string][]string{}
	for name, auth := range teams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perTeam; i++ {
				r, err := tryCall(http.MethodPost, s.url+"/api/v1/agents/run", auth, map[string]any{"agent_name": "k8s_agent", "message": name + " run " + strconv.Itoa(i), "async": true})
				if err != nil || r.status != http.StatusAccepted {
					t.Errorf("%s run %d: %v %v", name, i, err, r)
					return
				}
				mu.Lock()
				submitted[name] = append(submitted[name], r.body["investigation_id"].(string))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for name, auth := range teams {
		seen := map[string]bool{}
		for offset := 0; ; offset += 100 {
			r := call(t, http.MethodGet, fmt.Sprintf("%s/api/v1/agents/investigations?limit=100&offset=%d", s.url, offset), auth, nil)
			p, _ := r.body["pagination"].(map[string]any)
			if total, _ := p["total"].(float64); int(total) != perTeam {
				t.Fatalf("%s: pagination.total = %v, want %d", name, p["total"], perTeam)
			}
			items, _ := r.body["investigations"].([]any)
			for _, it := range items {
				m := it.(map[string]any)
				if !strings.HasPrefix(m["message"].(string), name+" ") {
					t.Fatalf("%s lists another team's investigation: %v", name, m)
				}
				seen[m["investigation_id"].(string)] = true
			}
			if len(items) < 100 {
				break
			}
		}
		if len(seen) != perTeam {
			t.Errorf("%s: listed %d distinct, want %d", name, len(seen), perTeam)
		}
	}
	// Let the queue drain, then check the peak resident memory.
	start := time.Now()
	waitForWithin(t, 5*time.Minute, "every run to finish", func() bool {
		for _, auth := range teams {
			r := call(t, http.MethodGet, s.url+"/api/v1/agents/investigations?status=pending&limit=1", auth, nil)
			p, _ := r.body["pagination"].(map[string]any)
			if p["total"].(float64) > 0 {
				return false
			}
		}
		return true
	})
	t.Logf("%d investigations finished %s after the last submission", perTeam*10, time.Since(start).Round(time.Second))
	if hwm := peakRSS(t, s.cmd.Process.Pid); hwm > 400<<20 {
		t.Errorf("server peak RSS %d MiB, want under 400 MiB", hwm>>20)
	} else {
		t.Logf("server peak RSS %d MiB after %d investigations", hwm>>20, perTeam*10)
	}
	s.stop()
}

// peakRSS reads VmHWM of pid from /proc (0 where /proc is absent).
func peakRSS(t *testing.T, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
