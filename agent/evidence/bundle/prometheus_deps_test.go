package bundle_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPromQLEngineDependencies keeps the product binary to the PromQL
// engine: Prometheus's TSDB, configuration, scraping, service discovery and
// remote storage (and the cloud SDKs and gRPC they bring) must not be linked
// (docs/decisions.md). The engine's storage interfaces need three small
// tsdb packages (chunk encodings and file helpers), which are allowed.
func TestPromQLEngineDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the whole product")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "list", "-deps", "github.com/rootcause/rootcause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const prom = "github.com/prometheus/prometheus/"
	allowedTSDB := map[string]bool{prom + "tsdb/chunkenc": true, prom + "tsdb/chunks": true, prom + "tsdb/fileutil": true}
	forbidden := []string{prom + "config", prom + "scrape", prom + "storage/remote", prom + "discovery", prom + "rules", prom + "web", prom + "notifier",
		"google.golang.org/grpc", "cloud.google.com/", "github.com/Azure/", "github.com/aws/aws-sdk-go-v2/service/ec2"}
	sawEngine := false
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == prom+"promql" {
			sawEngine = true
		}
		if (pkg == prom+"tsdb" || strings.HasPrefix(pkg, prom+"tsdb/")) && !allowedTSDB[pkg] {
			t.Errorf("the product links %s", pkg)
		}
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("the product links %s", pkg)
			}
		}
	}
	if !sawEngine {
		t.Errorf("the product does not link %spromql: this test no longer checks anything", prom)
	}
}
