// Package packaging holds the release artefacts that are not Go code (the
// systemd unit and the example config) and the tests that keep them
// working: `make release` builds what goreleaser.yaml describes, and the
// unit passes systemd-analyze where it is installed.
package packaging

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRelease builds the linux/amd64 archive with `make release` and
// checks its checksum, contents and version stamp.
func TestMakeRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "release", "PLATFORMS=linux/amd64", "VERSION=9.9.9-test", "COMMIT=abc123", "DATE=2026-03-14T10:00:00Z", "DIST="+dist)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	name := "rootcause_9.9.9-test_linux_amd64.tar.gz"
	archive, err := os.ReadFile(filepath.Join(dist, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS = %q, want %q", sums, want)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]bool{}
	bin := filepath.Join(t.TempDir(), "rootcause")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = true
		if strings.HasSuffix(h.Name, "/rootcause") {
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	dir := "rootcause_9.9.9-test_linux_amd64/"
	for _, f := range []string{"rootcause", "LICENSE", "README.md", "docs/install.md", "packaging/rootcause.service", "packaging/rootcause.example.yaml"} {
		if !files[dir+f] {
			t.Errorf("archive lacks %s (has %v)", f, files)
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("rootcause version: %v\n%s", err, out)
	}
	for _, want := range []string{"9.9.9-test", "abc123", "2026-03-14T10:00:00Z"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version output %q lacks %s", out, want)
		}
	}
	// Static: no ELF interpreter (dynamic loader).
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw[:min(len(raw), 4096)]), "ld-linux") {
		t.Error("the release binary is dynamically linked")
	}
}

// TestSystemdUnit checks the unit's required hardening and, where
// systemd-analyze exists, that it verifies.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("rootcause.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, want := range []string{
		"DynamicUser=yes", "StateDirectory=rootcause", "ProtectSystem=strict", "ProtectHome=yes",
		"NoNewPrivileges=yes", "PrivateTmp=yes", "PrivateDevices=yes",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "SystemCallFilter=@system-service",
		"CapabilityBoundingSet=\n", "LockPersonality=yes", "MemoryDenyWriteExecute=yes",
		"KillSignal=SIGTERM", "TimeoutStopSec=", "Restart=on-failure",
		"ExecStart=/usr/local/bin/rootcause serve --data-dir /var/lib/rootcause --config /etc/rootcause/rootcause.yaml",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed; the unit was checked textually only")
	}
	// verify needs the ExecStart binary to exist: point a copy of the unit
	// at a stand-in executable.
	dir := t.TempDir()
	stand := filepath.Join(dir, "rootcause")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyUnit := filepath.Join(dir, "rootcause.service")
	if err := os.WriteFile(copyUnit, []byte(strings.ReplaceAll(unit, "/usr/local/bin/rootcause", stand)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyUnit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "rootcause.service:") {
		t.Errorf("systemd-analyze verify warned:\n%s", out)
	}
}
