package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// benchStore is a real bbolt database in the benchmark's temporary
// directory with an organization and an admin token.
func benchStore(b *testing.B) (*db.DB, string) {
	b.Helper()
	store, err := db.Open(filepath.Join(b.TempDir(), db.FileName), db.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if _, err := store.EnsureOrg(context.Background(), "acme"); err != nil {
		b.Fatal(err)
	}
	tok, _, err := store.IssueToken(context.Background(), db.IssueTokenRequest{Kind: db.TokenAdmin})
	if err != nil {
		b.Fatal(err)
	}
	return store, tok
}

// benchServer is a Server over a real bbolt database with an admin token,
// logging discarded and limits high enough never to trigger (the limiter
// still runs).
func benchServer(b *testing.B) (http.Handler, string) {
	b.Helper()
	store, tok := benchStore(b)
	s := New(Config{
		Nodes: store, Tokens: store,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		RateLimits: RateLimits{Read: 1 << 30},
	})
	return s.Handler(), tok
}

// benchParallel serves req in parallel through h and reports the p99
// latency of one request.
func benchParallel(b *testing.B, h http.Handler, path, token string, want int) {
	var (
		mu  sync.Mutex
		all []time.Duration
	)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = "192.0.2.1:1234"
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			w := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(w, r)
			lat = append(lat, time.Since(start))
			if w.Code != want {
				b.Errorf("%s: status %d: %s", path, w.Code, w.Body)
				return
			}
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	b.StopTimer()
	if len(all) > 0 {
		slices.Sort(all)
		b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
	}
}

// BenchmarkAuthMe is an authenticated GET /api/v1/auth/me through the full
// handler: request id, bearer parsing, token lookup (a bbolt read
// transaction and an HMAC), rate limiter, org lookup and JSON answer.
func BenchmarkAuthMe(b *testing.B) {
	h, tok := benchServer(b)
	benchParallel(b, h, "/api/v1/auth/me", tok, http.StatusOK)
}

// BenchmarkStaticUnauthenticated is GET /healthz through the same handler:
// the baseline without authentication.
func BenchmarkStaticUnauthenticated(b *testing.B) {
	h, _ := benchServer(b)
	benchParallel(b, h, "/healthz", "", http.StatusOK)
}
