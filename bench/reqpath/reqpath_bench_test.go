// Package reqpath measures the request path of the built product from
// outside: `rootcause serve` (the real binary, default settings but for the
// read rate limit) and a bare net/http server (bareserver) answering the
// same bytes, both on 127.0.0.1, driven by one Go client in this process,
// in one run:
//
//	go test ./bench/reqpath -run '^$' -bench . -benchtime 1000x -count 4
//
// Each run starts its two servers afresh and stops them at its end, the
// one started first alternating between the runs of a benchmark (the
// bare-started-first metric says which it was; use an even -count): a
// process keeps what its start gave it (its place in the start order, its
// memory's layout, its threads' placement) for its whole life, and with
// servers started once for all runs, one of two identical bare servers
// used 1 – 20 % more CPU per request than the other in six runs of six,
// in whichever slot it was measured. Each iteration sends a batch of 64
// keep-alive requests from 8 client goroutines to the bare server and one
// to rootcause, the order alternating every iteration. Reported per side:
// wall time and CPU per request (the
// client's, from getrusage, plus the server process's, from /proc), and
// the ratios bare ÷ rootcause of wall time (ratio: the throughput ratio a
// load generator sees), of client and server CPU together (cpu-ratio) and
// of the server processes' CPU alone (server-cpu-ratio). "control_*" runs
// the same measurement against two bare servers: its spread is the noise
// floor of the ratios on the machine at the time. Each result also gives
// the one-minute load average at its end (loadavg).
//
// rootcause is built from this tree (or taken from $ROOTCAUSE_BENCH_BIN, to
// compare builds) and started with this process's environment plus
// ROOTCAUSE_RATE_LIMIT_READ=1000000000 (the default, 100 a minute, would
// answer 429; the X-RateLimit-* headers are still sent), its log on a file;
// other settings can be passed the same way (ROOTCAUSE_GC_HEAP_FLOOR=0).
// The team's effective config is four levels of about 50 KB each (org, two
// groups, the team), set through the admin API. Also reported: the read
// and write system calls per request of each server, and rootcause's peak
// resident memory (route-peak-rss-MB, VmHWM).
package reqpath

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	clients = 8
	batch   = 64 // requests per side per iteration
)

// server is a started process and its base URL.
type server struct {
	cmd *exec.Cmd
	url string
	// admin and team are a rootcause's tokens: an admin's and the team
	// payments's.
	admin, team string
	log         *os.File // a rootcause's log
	stopOnce    sync.Once
}

// cpu returns the CPU time (user and system, all threads) the process has
// used, from /proc/<pid>/stat.
func (s *server) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which is in parentheses): state is
	// field 3, utime 14 and stime 15.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// syscalls returns the number of read and write system calls the process
// has made, from /proc/<pid>/io.
func (s *server) syscalls(b *testing.B) (reads, writes int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// peakRSS returns the process's peak resident set size in bytes (VmHWM).
func (s *server) peakRSS(b *testing.B) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// Linux for every architecture Go supports).
const clockTicks = 100

// fixture is what every benchmark shares: the built binaries and the
// answers the bare servers serve. The servers themselves are started per
// run (startPair).
type fixture struct {
	dir             string
	rcBin, bareBin  string
	cmpBin          string   // ROOTCAUSE_BENCH_COMPARE_BIN, or rcBin
	cmpEnv          []string // ROOTCAUSE_BENCH_COMPARE's assignments; nil: no compare
	meFile, effFile string   // rootcause's answers, for the bare servers
	me, eff         []byte
	sampleAdmin     string // an admin token of the first rootcause
	mu              sync.Mutex
	runs            map[string]int // runs started per benchmark, for the start order
}

var (
	setupOnce sync.Once
	shared    *fixture
	setupErr  error
	cleanups  []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(code)
}

func setup(b *testing.B) *fixture {
	b.Helper()
	setupOnce.Do(func() { shared, setupErr = start() })
	if setupErr != nil {
		b.Fatal(setupErr)
	}
	return shared
}

// start builds both binaries and records rootcause's answers (from a
// rootcause started for that and stopped again) for the bare servers.
func start() (*fixture, error) {
	dir, err := os.MkdirTemp("", "rootcause-reqpath-")
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	f := &fixture{dir: dir, runs: map[string]int{}}
	f.rcBin = os.Getenv("ROOTCAUSE_BENCH_BIN")
	if f.rcBin == "" {
		f.rcBin = filepath.Join(dir, "rootcause")
		if err := goBuild(f.rcBin, "github.com/rootcause/rootcause"); err != nil {
			return nil, err
		}
	}
	f.bareBin = filepath.Join(dir, "bareserver")
	if err := goBuild(f.bareBin, "github.com/rootcause/rootcause/bench/reqpath/bareserver"); err != nil {
		return nil, err
	}
	if env := os.Getenv("ROOTCAUSE_BENCH_COMPARE"); env != "" {
		f.cmpEnv = strings.Fields(env)
		f.cmpBin = f.rcBin
		if b := os.Getenv("ROOTCAUSE_BENCH_COMPARE_BIN"); b != "" {
			f.cmpBin = b
		}
	}

	// The bare servers answer exactly rootcause's bodies.
	rc, err := startRootcause(filepath.Join(dir, "first"), f.rcBin, nil)
	if err != nil {
		return nil, err
	}
	defer rc.stop()
	f.sampleAdmin = rc.admin
	if f.me, f.eff, err = rc.answers(); err != nil {
		return nil, err
	}
	if len(f.eff) < 150_000 {
		return nil, fmt.Errorf("effective config of %d bytes", len(f.eff))
	}
	f.meFile, f.effFile = filepath.Join(dir, "me.json"), filepath.Join(dir, "effective.json")
	for name, body := range map[string][]byte{f.meFile: f.me, f.effFile: f.eff} {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// answers returns rootcause's /auth/me (admin token) and effective config
// (team token) answers.
func (s *server) answers() (me, eff []byte, err error) {
	if me, err = get(s.url+"/api/v1/auth/me", s.admin); err != nil {
		return nil, nil, err
	}
	eff, err = get(s.url+"/api/v1/config/me/effective", s.team)
	return me, eff, err
}

// kind is a server a ratio's side can be: rootcause, the compared
// rootcause (ROOTCAUSE_BENCH_COMPARE), a bare server, a bare server
// writing the contract's headers, or one writing those and the effective
// config's validators (rootcause's whole header section).
type kind int

const (
	kindRootcause kind = iota
	kindCompare
	kindBare
	kindHeaders
	kindAllHeaders
)

// startPair starts fresh servers of kinds a and b for one run of the
// benchmark name, stopped when the run ends. Which of the two is started
// first alternates between the runs of a benchmark (the first run starts
// a's first): a server's process lives only for its run, so whatever a
// process's start brings it (its place in the start order, its memory's
// layout, its threads' placement) is spread over the runs and both sides
// rather than carried by one side through all of them.
func (f *fixture) startPair(tb *testing.B, name string, a, b kind) (sa, sb *server, firstA bool) {
	f.mu.Lock()
	n := f.runs[name]
	f.runs[name]++
	firstA = n%2 == 0
	f.mu.Unlock()
	startOne := func(k kind, tag string) *server {
		s, err := f.startKind(k, filepath.Join(f.dir, fmt.Sprintf("%s-%d-%s", strings.ReplaceAll(name, "/", "_"), n, tag)))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.stop)
		return s
	}
	if firstA {
		sa = startOne(a, "a")
		sb = startOne(b, "b")
	} else {
		sb = startOne(b, "b")
		sa = startOne(a, "a")
	}
	return sa, sb, firstA
}

// startKind starts one server of kind k, a rootcause with its data in dir.
// A rootcause must answer the bytes the bare servers serve.
func (f *fixture) startKind(k kind, dir string) (*server, error) {
	var bin string
	var env []string
	switch k {
	case kindBare, kindHeaders, kindAllHeaders:
		flag := "-contract-headers=" + strconv.FormatBool(k != kindBare)
		return startBare(f.bareBin, flag, "-validators="+strconv.FormatBool(k == kindAllHeaders),
			"/api/v1/auth/me="+f.meFile, "/api/v1/config/me/effective="+f.effFile)
	case kindRootcause:
		bin = f.rcBin
	case kindCompare:
		bin, env = f.cmpBin, f.cmpEnv
	}
	s, err := startRootcause(dir, bin, env)
	if err != nil {
		return nil, err
	}
	me, eff, err := s.answers()
	if err == nil && (len(me) != len(f.me) || len(eff) != len(f.eff)) {
		err = fmt.Errorf("rootcause answered %d and %d bytes, the bare servers serve %d and %d", len(me), len(eff), len(f.me), len(f.eff))
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// stop ends the server's process and waits for it.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
		if s.log != nil {
			s.log.Close()
		}
	})
}

// startRootcause starts `bin serve` with its data and log in dir, env added
// to its environment, sets up the four-level config and returns the server
// with an admin and a team token.
func startRootcause(dir, bin string, env []string) (rc *server, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data)
	cmd.Env = append(append(os.Environ(), "ROOTCAUSE_RATE_LIMIT_READ=1000000000"), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	rc = &server{cmd: cmd, url: "http://" + addr, log: logFile}
	defer func() {
		if err != nil {
			rc.stop()
		}
	}()

	// Configure through the local socket (local trust, as the CLI does).
	sock := filepath.Join(data, "rootcause.sock")
	local := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := local.Get("http://rootcause.local/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("rootcause serve did not become ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	call := func(method, path string, body any, out any) error {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://rootcause.local"+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		resp, err := local.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		ans, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, ans)
		}
		if out != nil {
			return json.Unmarshal(ans, out)
		}
		return nil
	}
	var org struct {
		Nodes []struct{ Name, Parent string } `json:"nodes"`
	}
	if err := call(http.MethodGet, "/api/v1/admin/nodes", nil, &org); err != nil {
		return nil, err
	}
	root := ""
	for _, n := range org.Nodes {
		if n.Parent == "" {
			root = n.Name
		}
	}
	lineage := []string{root, "platform", "core", "payments"}
	for i, kind := range []string{"group", "group", "team"} {
		if err := call(http.MethodPost, "/api/v1/admin/nodes", map[string]string{"name": lineage[i+1], "parent": lineage[i], "kind": kind}, nil); err != nil {
			return nil, err
		}
	}
	for _, node := range lineage {
		// About 50 KB of own config per level: 100 custom agents.
		agents := map[string]any{}
		for i := range 100 {
			agents[fmt.Sprintf("custom_%s_%03d", node, i)] = map[string]any{"prompt": strings.Repeat("investigate carefully ", 22), "timeout": 60 + i}
		}
		if err := call(http.MethodPut, "/api/v1/admin/nodes/"+node+"/config", map[string]any{"agents": agents, "slack_channel": "#" + node}, nil); err != nil {
			return nil, err
		}
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := call(http.MethodPost, "/api/v1/admin/tokens", map[string]any{"kind": "admin", "name": "bench"}, &tok); err != nil {
		return nil, err
	}
	rc.admin = tok.Token
	if err := call(http.MethodPost, "/api/v1/admin/tokens", map[string]any{"kind": "team", "team": "payments", "name": "bench"}, &tok); err != nil {
		return nil, err
	}
	rc.team = tok.Token
	return rc, nil
}

func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startBare(bin string, args ...string) (*server, error) {
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("bareserver: %w", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		s.stop()
		return nil, fmt.Errorf("bareserver said %q", line)
	}
	s.url = "http://" + addr
	return s, nil
}

// get answers GET url with a bearer token: the body of a 200.
func get(url, token string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return body, err
}

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// load sends batch GET requests to url from clients goroutines and returns
// the elapsed time and the CPU time this process used meanwhile.
func load(b *testing.B, client *http.Client, url, token string) (time.Duration, time.Duration) {
	var wg sync.WaitGroup
	cpu := processCPU()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range batch / clients {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("%s: status %d", url, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), processCPU() - cpu
}

// side is one of the two servers a ratio compares.
type side struct {
	srv          *server
	path, token  string
	wall, client time.Duration
}

// ratio alternates batches between bare and product and reports both sides
// per request and their ratios (bare ÷ product).
func ratio(b *testing.B, bare, product *side) {
	// No Accept-Encoding: both sides answer the identity body.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2, DisableCompression: true}}
	defer client.CloseIdleConnections()
	run := func(s *side) {
		w, c := load(b, client, s.srv.url+s.path, s.token)
		s.wall += w
		s.client += c
	}
	for range 20 { // warm connections, caches and both heaps
		run(bare)
		run(product)
	}
	bare.wall, bare.client, product.wall, product.client = 0, 0, 0, 0
	bareCPU, prodCPU := bare.srv.cpu(b), product.srv.cpu(b)
	bareR, bareW := bare.srv.syscalls(b)
	prodR, prodW := product.srv.syscalls(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// The side measured second pays for what the first left behind
		// (garbage, cache misses), so the order alternates.
		if i%2 == 0 {
			run(bare)
			run(product)
		} else {
			run(product)
			run(bare)
		}
	}
	b.StopTimer()
	bareCPU, prodCPU = bare.srv.cpu(b)-bareCPU, product.srv.cpu(b)-prodCPU
	r, w := bare.srv.syscalls(b)
	bareR, bareW = r-bareR, w-bareW
	r, w = product.srv.syscalls(b)
	prodR, prodW = r-prodR, w-prodW
	n := float64(b.N * batch)
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / n }
	b.ReportMetric(per(bare.wall), "bare-ns/req")
	b.ReportMetric(per(product.wall), "route-ns/req")
	b.ReportMetric(float64(bare.wall)/float64(product.wall), "ratio")
	b.ReportMetric(per(bare.client+bareCPU), "bare-cpu-ns/req")
	b.ReportMetric(per(product.client+prodCPU), "route-cpu-ns/req")
	b.ReportMetric(float64(bare.client+bareCPU)/float64(product.client+prodCPU), "cpu-ratio")
	b.ReportMetric(per(bareCPU), "bare-server-cpu-ns/req")
	b.ReportMetric(per(prodCPU), "route-server-cpu-ns/req")
	b.ReportMetric(float64(bareCPU)/float64(prodCPU), "server-cpu-ratio")
	// Read and write system calls of each server per request: the log
	// must not add one per request.
	b.ReportMetric(float64(bareR)/n, "bare-reads/req")
	b.ReportMetric(float64(bareW)/n, "bare-writes/req")
	b.ReportMetric(float64(prodR)/n, "route-reads/req")
	b.ReportMetric(float64(prodW)/n, "route-writes/req")
	b.ReportMetric(float64(product.srv.peakRSS(b))/(1<<20), "route-peak-rss-MB")
	// Other processes' load moves the wall-time ratio most: the figure
	// goes with the one-minute load average at the end of the run.
	b.ReportMetric(loadAverage(b), "loadavg")
}

// loadAverage returns the one-minute load average, from /proc/loadavg.
func loadAverage(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkRequestPath: authenticated GET /api/v1/auth/me (an admin
// token; target ratio ≥ 0.75) and GET /api/v1/config/me/effective (a team
// token, 4 levels × 50 KB; target ≥ 0.9) of `rootcause serve` against the
// bare server answering the same bytes, and the control (bare against
// bare) for each body. With ROOTCAUSE_BENCH_COMPARE set to environment
// assignments (ROOTCAUSE_GC_HEAP_FLOOR=0), a second rootcause is started
// with them (and ROOTCAUSE_BENCH_COMPARE_BIN, if set, as its binary), and
// compare_auth_me and compare_effective measure the first against it in
// the same way, to compare settings or builds in one run. auth_me_headers and auth_me_vs_headers split the
// first ratio in two at a bare server that writes the contract's headers
// and is sent the same token: what the headers cost (bare against it) and
// what the rest of the product's path costs (it against rootcause).
// effective_headers and effective_vs_headers do the same for the
// effective config, at a bare server that writes rootcause's whole header
// section (the contract's six headers and the answer's ETag, Vary and
// Cache-Control).
func BenchmarkRequestPath(b *testing.B) {
	f := setup(b)
	const me, eff = "/api/v1/auth/me", "/api/v1/config/me/effective"
	type slot struct {
		kind  kind
		path  string
		token func(*server) string // nil: no token
	}
	admin := func(s *server) string { return s.admin }
	team := func(s *server) string { return s.team }
	// The bare server writing the contract's headers is sent an admin
	// token of rootcause's (it reads none: what it costs is the request's
	// size).
	sample := func(*server) string { return f.sampleAdmin }
	for _, c := range []struct {
		name          string
		bare, product slot
	}{
		{"auth_me", slot{kindBare, me, nil}, slot{kindRootcause, me, admin}},
		{"effective", slot{kindBare, eff, nil}, slot{kindRootcause, eff, team}},
		{"control_auth_me", slot{kindBare, me, nil}, slot{kindBare, me, nil}},
		{"auth_me_headers", slot{kindBare, me, nil}, slot{kindHeaders, me, sample}},
		{"auth_me_vs_headers", slot{kindHeaders, me, sample}, slot{kindRootcause, me, admin}},
		{"control_effective", slot{kindBare, eff, nil}, slot{kindBare, eff, nil}},
		{"effective_headers", slot{kindBare, eff, nil}, slot{kindAllHeaders, eff, sample}},
		{"effective_vs_headers", slot{kindAllHeaders, eff, sample}, slot{kindRootcause, eff, team}},
		// rootcause against the second one of ROOTCAUSE_BENCH_COMPARE: as
		// everywhere, ratio is the first's time ÷ the second's (above 1,
		// the second is faster).
		{"compare_auth_me", slot{kindRootcause, me, admin}, slot{kindCompare, me, admin}},
		{"compare_effective", slot{kindRootcause, eff, team}, slot{kindCompare, eff, team}},
	} {
		if c.product.kind == kindCompare && f.cmpEnv == nil {
			continue // no second rootcause
		}
		b.Run(c.name, func(b *testing.B) {
			sa, sb, firstA := f.startPair(b, b.Name(), c.bare.kind, c.product.kind)
			bare := side{srv: sa, path: c.bare.path}
			product := side{srv: sb, path: c.product.path}
			if c.bare.token != nil {
				bare.token = c.bare.token(sa)
			}
			if c.product.token != nil {
				product.token = c.product.token(sb)
			}
			ratio(b, &bare, &product)
			started := 0.0
			if firstA {
				started = 1
			}
			b.ReportMetric(started, "bare-started-first")
		})
	}
}
