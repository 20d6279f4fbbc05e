package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestHeldDeletedFiles reads the space of files deleted while still open
// from lsof's output as it prints it: lsof +L1 (with NLINK 0) and lsof |
// grep deleted (without the column); small deleted files (a library
// replaced by an upgrade) say nothing of a full disk.
func TestHeldDeletedFiles(t *testing.T) {
	for name, c := range map[string]struct {
		lines []string
		want  string
	}{
		"lsof +L1": {[]string{"COMMAND    PID     USER   FD   TYPE DEVICE    SIZE/OFF NLINK   NODE NAME",
			"java      2231 appsync    1w   REG  259,1 33581203456     0 131112 /var/log/app-sync/app-sync.log.1 (deleted)"}, "java (pid 2231, user appsync) keeps writing /var/log/app-sync/app-sync.log.1 (deleted), 31.3 GiB"},
		"lsof | grep deleted": {[]string{"nginx   1187  www-data   5w   REG  253,0 5368709120  393230 /var/log/nginx/access.log.1 (deleted)"}, "nginx (pid 1187, user www-data) keeps writing /var/log/nginx/access.log.1 (deleted), 5.0 GiB"},
		"a small library replaced": {[]string{"sshd  812 root  mem  REG  253,0  1187712  0 2883 /usr/lib/x86_64-linux-gnu/libssl.so.3 (deleted)",
			"python3 4410 app 3r REG 253,0 20480 0 77 /tmp/tmpa1b2 (deleted)"}, ""},
	} {
		held, ev := heldDeletedFiles([]evidence.CommandOutput{{Command: "sudo lsof -nP +L1 /", Run: "sudo lsof -nP +L1 /", Lines: c.lines}})
		if c.want == "" {
			if held != "" {
				t.Errorf("%s: %q", name, held)
			}
			continue
		}
		if !strings.Contains(held, c.want) || !strings.Contains(held, "still held open") || ev == "" {
			t.Errorf("%s: %q / %q", name, held, ev)
		}
	}
}
