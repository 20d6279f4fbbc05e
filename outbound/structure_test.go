package outbound

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// integrationDirs hold the code that connects to addresses a team can set.
// Everything under them must reach the network through a Guard: building a
// transport, a dialer or a client of its own, or using the process-wide
// defaults, would open a connection the guard never sees.
var integrationDirs = []string{"agent/evidence/live", "agent/knowledge", "notify"}

// fixedDestinations are the files allowed to build their own client because
// their destination is not chosen by a team: the Slack Web API's fixed
// address, and CloudWatch, whose endpoint is admin-only (contract section
// 3) and whose credential chain must reach the instance metadata address.
var fixedDestinations = map[string]bool{
	"notify/worker.go": true,
	"agent/evidence/live/cloudwatch/cloudwatch.go": true,
}

var ownTransport = regexp.MustCompile(`http\.Transport\{|&http\.Client\{|http\.Client\{|http\.DefaultTransport|http\.DefaultClient|net\.Dialer\{|net\.Dial\(|net\.DialTimeout|api\.DefaultRoundTripper|NewBuildableClient\(\)|http\.(Get|Post|Head)\(`)

func TestIntegrationsConnectOnlyThroughTheGuard(t *testing.T) {
	root := filepath.Join("..")
	checked := 0
	for _, dir := range integrationDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if fixedDestinations[rel] {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			for i, line := range strings.Split(string(b), "\n") {
				code, _, _ := strings.Cut(line, "//")
				if ownTransport.MatchString(code) {
					t.Errorf("%s:%d builds its own connection (%s); take the client of outbound.Guard.Client instead", rel, i+1, strings.TrimSpace(code))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d files checked: the integration directories moved?", checked)
	}
}
