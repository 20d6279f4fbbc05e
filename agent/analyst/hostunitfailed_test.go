package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestHostUnitFailed reads a host's failed systemd unit as the host prints
// it: systemctl status with its journal tail and a server systemd gave up
// restarting, journalctl -u, apt's history.log naming the upgrade, another
// host's systemctl is-active; systemd's own lines in a host's syslog; and
// a timer's job (systemctl --failed, list-timers) that failed while the
// service asked after runs.
func TestHostUnitFailed(t *testing.T) {
	cmd := func(host, run string, lines string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Host: host, Lines: strings.Split(lines, "\n")}
	}
	status := cmd("lb-01.example.internal", "systemctl status haproxy --no-pager", `× haproxy.service - HAProxy Load Balancer
     Loaded: loaded (/lib/systemd/system/haproxy.service; enabled; preset: enabled)
     Active: failed (Result: start-limit-hit) since Sat 2026-03-14 10:21:54 UTC; 48min ago
   Duration: 6d 19h 7min 12.031s
Mar 14 10:21:52 lb-01 haproxy[5131]: [ALERT]    (5131) : config : parsing [/etc/haproxy/haproxy.cfg:41] : unknown keyword 'http-reuse-mode' in 'backend' section
Mar 14 10:21:52 lb-01 haproxy[5131]: [ALERT]    (5131) : config : Fatal errors found in configuration.
Mar 14 10:21:54 lb-01 systemd[1]: haproxy.service: Start request repeated too quickly.
Mar 14 10:21:54 lb-01 systemd[1]: haproxy.service: Failed with result 'start-limit-hit'.`)
	history := cmd("lb-01.example.internal", "grep -A4 'Start-Date: 2026-03-14' /var/log/apt/history.log", `Start-Date: 2026-03-14  10:21:33
Commandline: /usr/bin/unattended-upgrade
Upgrade: haproxy:amd64 (2.8.5-1, 2.9.1-1)
End-Date: 2026-03-14  10:21:43`)
	other := cmd("lb-02.example.internal", "systemctl is-active haproxy", "failed")
	journal := cmd("web-07", "journalctl -u nginx --since today --no-pager", `Mar 14 10:21:42 web-07 nginx[51188]: nginx: [emerg] bind() to 0.0.0.0:443 failed (98: Address already in use)
Mar 14 10:21:42 web-07 systemd[1]: nginx.service: Control process exited, code=exited, status=1/FAILURE
Mar 14 10:21:42 web-07 systemd[1]: nginx.service: Failed with result 'exit-code'.
Mar 14 10:21:42 web-07 systemd[1]: Failed to start nginx.service - A high performance web server.`)
	failedList := cmd("files-02.example.internal", "systemctl --failed", `  UNIT              LOAD   ACTIVE SUB    DESCRIPTION
● backup-db.service loaded failed failed Nightly database dump`)
	timers := cmd("files-02.example.internal", "systemctl list-timers backup-db.timer", `NEXT                        LEFT    LAST                        PASSED UNIT             ACTIVATES
Sun 2026-03-15 02:00:00 UTC 14h left Sat 2026-03-14 02:00:00 UTC 8h ago backup-db.timer backup-db.service`)
	apiStatus := cmd("files-02.example.internal", "systemctl status files-api --no-pager | head -3", `● files-api.service - files-api
     Loaded: loaded (/etc/systemd/system/files-api.service; enabled; preset: enabled)
     Active: active (running) since Fri 2026-03-13 15:31:12 UTC; 19h ago`)
	backupLog := `2026-03-14T02:00:41.467217+00:00 files-02 backup-db[51902]: pg_dump: error: connection to server at "db-01" (10.0.0.5), port 5432 failed: FATAL:  password authentication failed for user "backup"`
	backupFail := `2026-03-14T02:00:41.871139+00:00 files-02 systemd[1]: backup-db.service: Failed with result 'exit-code'.`
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		logs    []LogSet
		scope   Scope
		subject string
		want    []string
	}{
		{"a server systemd gave up on after a package upgrade, on two hosts", []evidence.CommandOutput{status, history, other}, nil, Scope{Service: "shop"}, "haproxy",
			[]string{"haproxy is down on lb-01, lb-02", "start-limit-hit", "unknown keyword 'http-reuse-mode'", "haproxy:amd64 (2.8.5-1, 2.9.1-1) by unattended-upgrade", "what haproxy serves (shop)"}},
		{"journalctl -u of a server that does not start", []evidence.CommandOutput{journal}, nil, Scope{}, "nginx",
			[]string{"nginx is down on web-07", "Address already in use"}},
		{"a timer's job failed while the service asked after runs", []evidence.CommandOutput{failedList, timers, apiStatus}, []LogSet{logSet("files-02-syslog", true, backupLog, backupFail)}, Scope{Service: "files-api"}, "backup-db",
			[]string{"the job backup-db.service failed on files-02", "password authentication failed", "files-api is not affected", "active (running)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Logs: c.logs, Window: win, Scope: c.scope}
			f := onlyFinding(t, detectHostUnitFailed(ev, nil), c.subject)
			if f == nil {
				return
			}
			if len(f.Evidence) < 2 {
				t.Errorf("evidence %q", f.Evidence)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, c.scope, c.want...)
			if recs := recommend(h, c.scope); len(recs) < 2 {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
	// A unit running, or a status without a failure, is nothing.
	if fs := detectHostUnitFailed(&Gathered{Commands: []evidence.CommandOutput{apiStatus}, Window: win}, nil); len(fs) != 0 {
		t.Errorf("a running unit: %+v", fs)
	}
}
