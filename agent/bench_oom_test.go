package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/logwriter"
	"github.com/rootcause/rootcause/server"
)

// BenchmarkOOMThroughServer is an investigation of the public OOM scenario
// (testdata/scenarios/oom-after-deploy, about 40 KB of evidence) through
// the whole product, as a client sees it: a synchronous POST
// /api/v1/agents/run with the scenario's request, over a real TCP
// connection on 127.0.0.1, to the server's handler, the runtime (pending,
// running and final records committed to a bbolt file with fsync on) and
// the offline analyst, with the bundle set as the team's evidence_bundle
// (opened and read from disk on every run, as the server does). The
// request log goes to a file through the asynchronous log writer, as
// serve's does. Target: under 100 ms per investigation. It reports the
// latency of one run (p50 and p99, runs one at a time) and checks every
// answer names the OOM kills. cpu-ms/run is the process's CPU time (user
// and system: client, server, runtime and analyst) per run, which other
// processes' load on a shared machine moves less than the wall clock.
//
//	go test ./agent -run '^$' -bench OOMThroughServer -benchtime 50x -count 3
func BenchmarkOOMThroughServer(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store, err := db.Open(filepath.Join(dir, db.FileName), db.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if _, err := store.EnsureOrg(ctx, "acme"); err != nil {
		b.Fatal(err)
	}
	if _, err := store.CreateNode(ctx, db.Node{Name: "catalog", Parent: "acme", Kind: db.KindTeam}); err != nil {
		b.Fatal(err)
	}
	bundleDir, err := filepath.Abs(filepath.Join("..", "testdata", "scenarios", "oom-after-deploy"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.PatchNodeConfig(ctx, "catalog", map[string]any{"evidence_bundle": bundleDir}, db.Actor{ID: "bench"}, nil); err != nil {
		b.Fatal(err)
	}
	token, _, err := store.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "catalog", Write: true})
	if err != nil {
		b.Fatal(err)
	}
	var scenario struct {
		Request json.RawMessage `json:"request"`
	}
	raw, err := os.ReadFile(filepath.Join(bundleDir, "scenario.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &scenario); err != nil {
		b.Fatal(err)
	}

	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		b.Fatal(err)
	}
	logOut := logwriter.New(logFile)
	b.Cleanup(func() { logOut.Close(); logFile.Close() })
	logger := slog.New(slog.NewTextHandler(logOut, nil))

	envOpts := agent.EnvironmentOptions{Logger: logger}
	rt := agent.NewRuntime(agent.RuntimeConfig{
		Store: store, Engine: analyst.New(analyst.Options{}), Logger: logger, Workers: 4,
		Environment: func(ctx context.Context, team string) (*agent.Environment, error) {
			lin, err := store.ConfigLineage(ctx, team, true)
			if err != nil {
				return nil, err
			}
			docs := make([]map[string]any, len(lin))
			for i, n := range lin {
				docs[i] = n.Own
			}
			return agent.BuildTeamEnvironment(ctx, team, docs, envOpts)
		},
	})
	if err := rt.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// Limits high enough never to refuse a run (the limiter still runs).
	srv := server.New(server.Config{Nodes: store, Tokens: store, Investigations: rt, Logger: logger,
		RateLimits: server.RateLimits{Read: 1 << 30, Write: 1 << 30, Run: 1 << 30}})
	ts := httptest.NewServer(srv.Handler()) // listens on 127.0.0.1
	url := ts.URL + "/api/v1/agents/run"
	b.Cleanup(func() {
		ts.Close()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rt.Stop(sctx)
	})

	client := &http.Client{}
	defer client.CloseIdleConnections()
	run := func() {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(scenario.Request))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var inv struct {
			Status string `json:"status"`
			Result struct {
				RootCause struct {
					Description string `json:"description"`
				} `json:"root_cause"`
			} `json:"result"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(out, &inv) != nil || inv.Status != "completed" {
			b.Fatalf("status %d: %s", res.StatusCode, out)
		}
		if d := strings.ToLower(inv.Result.RootCause.Description); !strings.Contains(d, "oomkilled") {
			b.Fatalf("root cause %q does not name the OOM kills", inv.Result.RootCause.Description)
		}
	}
	run() // the first run opens the connection and warms the caches
	lat := make([]time.Duration, 0, b.N)
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		run()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	cpu = processCPU() - cpu
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms/run")
}

// processCPU returns the CPU time (user and system) this process has used:
// client, server, runtime and analyst alike.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
