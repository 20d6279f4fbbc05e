package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
	"github.com/rootcause/rootcause/server"
)

// noopEngine returns a fixed, valid result at once, after one progress
// step, so a run measures only the runtime: the HTTP handler, the store
// writes (create, start, events, finish) and the wake-up of the waiting
// request.
type noopEngine struct{}

func (noopEngine) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	run.Step("checking", 0, 1)
	return &finding.Result{
		Summary:         "nothing to see",
		RootCause:       finding.RootCause{Description: "no fault found", Confidence: 10, Evidence: []string{"no-op engine"}},
		Timeline:        []finding.TimelineEvent{{Timestamp: "2026-03-14T10:00:00Z", Event: "run"}},
		Recommendations: []finding.Recommendation{{Priority: "low", Action: "none"}},
		AffectedSystems: []string{},
		Verdict:         finding.VerdictHealthy,
	}, nil
}

// runServer is a real server on 127.0.0.1 over a real runtime and bbolt
// file (fsync on) with engine, a probe tool as the data source, and a
// team token for payments.
type runServer struct {
	store *db.DB
	url   string
	token string
	http  *http.Client
}

func newRunServer(tb testing.TB, engine agent.Engine) *runServer {
	return newRunServerWith(tb, engine, nil)
}

// newRunServerWith is newRunServer with the runtime's store wrapped by wrap
// (nil: the store itself).
func newRunServerWith(tb testing.TB, engine agent.Engine, wrap func(db.InvestigationService) db.InvestigationService) *runServer {
	tb.Helper()
	ctx := context.Background()
	store, err := db.Open(filepath.Join(tb.TempDir(), db.FileName), db.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	if _, err := store.EnsureOrg(ctx, "acme"); err != nil {
		tb.Fatal(err)
	}
	if _, err := store.CreateNode(ctx, db.Node{Name: "payments", Parent: "acme", Kind: db.KindTeam}); err != nil {
		tb.Fatal(err)
	}
	token, _, err := store.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true})
	if err != nil {
		tb.Fatal(err)
	}
	// One read-only tool that needs no integration counts as a data source.
	probe := tools.Tool{Spec: tools.Spec{Name: "probe", Description: "probe", Parameters: json.RawMessage(`{"type":"object"}`),
		ReadOnly: true, Agents: []string{tools.AgentK8s}},
		Run: func(context.Context, *tools.Env, json.RawMessage) (any, error) { return "ok", nil }}
	cat := tools.Builtin().With([]tools.Tool{probe})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var runStore db.InvestigationService = store
	if wrap != nil {
		runStore = wrap(store)
	}
	rt := agent.NewRuntime(agent.RuntimeConfig{
		Store: runStore, Engine: engine, Logger: logger, Workers: 4,
		Environment: func(ctx context.Context, team string) (*agent.Environment, error) {
			return &agent.Environment{Config: map[string]any{}, Catalog: cat, Env: &tools.Env{Sources: &evidence.Sources{}}}, nil
		},
	})
	if err := rt.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	srv := server.New(server.Config{
		Nodes: store, Tokens: store, Investigations: rt, Logger: logger,
		RateLimits: server.RateLimits{Read: 1 << 30, Write: 1 << 30, Run: 1 << 30},
	})
	ts := httptest.NewServer(srv.Handler()) // listens on 127.0.0.1
	tb.Cleanup(func() {
		ts.Close()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rt.Stop(sctx)
	})
	return &runServer{store: store, url: ts.URL, token: token, http: ts.Client()}
}

// do sends an authenticated request and returns the status and body.
func (s *runServer) do(tb testing.TB, method, path string, body []byte) (int, []byte) {
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.http.Do(req)
	if err != nil {
		tb.Error(err)
		return 0, nil
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

// BenchmarkRunOverhead posts synchronous runs (POST /api/v1/agents/run
// without async) through the real server handler on 127.0.0.1, backed by
// a real runtime over a bbolt file with fsync on, with a no-op engine. It
// reports the submit-to-completed latency of one run (p50 and p99, in
// milliseconds; requests are sequential, one at a time) and the write
// transactions committed per run (commits/run: each is one durable
// commit, the fsync points of the write path).
//
//	go test ./agent -run '^$' -bench RunOverhead -benchtime 200x -count 3
func BenchmarkRunOverhead(b *testing.B) {
	s := newRunServer(b, noopEngine{})
	body := []byte(`{"agent_name":"k8s_agent","message":"checkout is slow"}`)
	post := func() {
		code, out := s.do(b, http.MethodPost, "/api/v1/agents/run", body)
		if code != http.StatusOK || !bytes.Contains(out, []byte(`"completed"`)) {
			b.Fatalf("status %d: %s", code, out)
		}
	}
	post() // warm the connection and the caches
	lat := make([]time.Duration, 0, b.N)
	commits := s.store.Commits()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		post()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(float64(s.store.Commits()-commits)/float64(b.N), "commits/run")
}

// BenchmarkRunOverheadParallel is BenchmarkRunOverhead with 8 clients at
// once: writers of different runs meet and share commits.
//
//	go test ./agent -run '^$' -bench RunOverheadParallel -benchtime 400x
func BenchmarkRunOverheadParallel(b *testing.B) {
	s := newRunServer(b, noopEngine{})
	body := []byte(`{"agent_name":"k8s_agent","message":"checkout is slow"}`)
	commits := s.store.Commits()
	b.SetParallelism(4) // 4 × GOMAXPROCS(2) = 8 clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			code, out := s.do(b, http.MethodPost, "/api/v1/agents/run", body)
			if code != http.StatusOK || !bytes.Contains(out, []byte(`"completed"`)) {
				b.Errorf("status %d: %s", code, out)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(s.store.Commits()-commits)/float64(b.N), "commits/run")
}
