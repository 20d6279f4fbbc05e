package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// noLimits turns the write rate limit off so load tests measure storage.
var noLimits = []string{"ROOTCAUSE_RATE_LIMIT_WRITE=-1", "ROOTCAUSE_RATE_LIMIT_READ=-1"}

// writers runs n goroutines creating groups through the TCP API until stop
// is closed, recording each name acknowledged with 201.
type writers struct {
	mu    sync.Mutex
	acked []string
	seq   atomic.Int64
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startWriters(t *testing.T, url, admin, prefix string, n int) *writers {
	w := &writers{stop: make(chan struct{})}
	for i := 0; i < n; i++ {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				name := fmt.Sprintf("%s-%d", prefix, w.seq.Add(1))
				r, err := tryCall("POST", url+"/api/v1/admin/nodes", "Bearer "+admin,
					map[string]string{"name": name, "parent": "default", "kind": "group"})
				if err != nil {
					continue // the server died mid-request: not acknowledged
				}
				if r.status == http.StatusCreated {
					w.mu.Lock()
					w.acked = append(w.acked, name)
					w.mu.Unlock()
				} else {
					t.Errorf("POST node %s: %d %s", name, r.status, r.raw)
					return
				}
			}
		}()
	}
	return w
}

func (w *writers) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

func (w *writers) halt() []string {
	close(w.stop)
	w.wg.Wait()
	return w.snapshot()
}

// checkFile verifies the database file (bbolt check, rootcause schema) and
// that every name in acked is in it.
func checkFile(t *testing.T, path string, acked []string) {
	t.Helper()
	if err := db.Verify(path); err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(path, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range acked {
		if _, err := d.FindNode(context.Background(), name); err != nil {
			t.Fatalf("acknowledged write %s missing: %v", name, err)
		}
	}
}

// TestBackupUnderLoad takes an online backup through the CLI while writers
// run; the copy must check clean and hold every write acknowledged before
// the backup began.
func TestBackupUnderLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dir, noLimits...)
	admin := issue(t, dir, "--admin")
	w := startWriters(t, srv.url, admin, "load", 4)
	deadline := time.Now().Add(20 * time.Second)
	for len(w.snapshot()) < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	before := w.snapshot()
	if len(before) == 0 {
		t.Fatal("no write acknowledged")
	}
	file := filepath.Join(t.TempDir(), "live.db")
	mustCLI(t, dir, "backup", file)
	after := w.halt()
	checkFile(t, file, before)
	t.Logf("backup holds all %d writes acknowledged before it (%d by the end)", len(before), len(after))
	srv.stop()
	checkFile(t, filepath.Join(dir, db.FileName), after)
}

// TestCrashSafety kills the server with SIGKILL at random moments during
// concurrent writes and proves after each restart that every acknowledged
// write is present and the file checks clean.
func TestCrashSafety(t *testing.T) {
	kills := 20
	if testing.Short() {
		kills = 5
	}
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dir, noLimits...)
	admin := issue(t, dir, "--admin")
	var all []string
	for i := 0; i < kills; i++ {
		if i > 0 {
			srv = startServer(t, dir, noLimits...)
		}
		w := startWriters(t, srv.url, admin, fmt.Sprintf("k%d", i), 4)
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		srv.kill()
		acked := w.halt()
		all = append(all, acked...)
		// The stale socket is left behind; the file must be whole.
		checkFile(t, filepath.Join(dir, db.FileName), all)
		if t.Failed() {
			t.FailNow()
		}
	}
	// A final restart over the stale socket serves every write.
	srv = startServer(t, dir, noLimits...)
	r := call(t, "GET", srv.url+"/api/v1/admin/nodes", "Bearer "+admin, nil)
	nodes, _ := r.body["nodes"].([]any)
	if r.status != 200 || len(nodes) < len(all)+1 {
		t.Fatalf("after %d kills: %d nodes listed, %d acknowledged", kills, len(nodes), len(all))
	}
	srv.stop()
	t.Logf("%d kills, %d acknowledged writes, all present", kills, len(all))
}
