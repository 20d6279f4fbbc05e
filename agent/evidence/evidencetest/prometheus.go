package evidencetest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// StartPrometheus backfills an OpenMetrics file into a TSDB with promtool
// and starts the real prometheus binary on a loopback port until the test
// ends; it returns the base URL. Without prometheus and promtool the test
// is skipped, or fails when CI is set.
func StartPrometheus(t testing.TB, om string) string {
	t.Helper()
	bin, err1 := exec.LookPath("prometheus")
	tool, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("prometheus/promtool not installed (CI=%s): .ci/run must apt-get install -y --no-install-recommends prometheus", os.Getenv("CI"))
		}
		t.Skip("prometheus and promtool are not installed (apt-get install -y --no-install-recommends prometheus); set CI to make this a failure")
	}
	dir := t.TempDir()
	tsdb := filepath.Join(dir, "tsdb")
	if out, err := exec.Command(tool, "tsdb", "create-blocks-from", "openmetrics", om, tsdb).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\nscrape_configs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+tsdb, "--storage.tsdb.retention.time=100y",
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus not ready on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
