package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestConfigSourceMissing reads a process that started without its
// configuration and runs on defaults, in the wordings of several
// products: a Go service's slog line (its config volume mounted elsewhere
// than the path it is given), Spring Cloud Config's optional import
// without its label (the branch renamed by a change), a deploy job that
// found no values file under the name it looks for, node-config's empty
// configuration directory and viper's file not found. A configuration
// loaded, or one not found that stops the start, is not it.
func TestConfigSourceMissing(t *testing.T) {
	goSlog := []string{`{"time":"2026-03-14T09:40:08.588Z","level":"WARN","msg":"config file not found, using built-in defaults","path":"/config/app.yaml","err":"open /config/app.yaml: no such file or directory"}`,
		`{"time":"2026-03-14T09:40:08.985Z","level":"INFO","msg":"features","express":false,"carriers":["parcel"]}`}
	describe := evidence.CommandOutput{Command: "kubectl -n comms describe pod quote-svc-5d7b8c9f64-9xk2r", Lines: []string{
		"Containers:", "  quote-svc:", "    Args:", "      --config=/config/app.yaml", "      --listen=:8080",
		"    Mounts:", "      /etc/quote-svc from config (ro)", "      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-5ltbq (ro)"}}
	listing := evidence.CommandOutput{Command: "kubectl -n comms exec quote-svc-5d7b8c9f64-9xk2r -- ls -la /etc/quote-svc/", Run: "ls -la /etc/quote-svc/", Pod: "quote-svc-5d7b8c9f64-9xk2r", Exec: true,
		Lines: []string{"lrwxrwxrwx 1 root root 20 Mar 14 09:40 app.yaml -> ..data/app.yaml"}}
	spring := []string{`2026-03-14T09:40:13.141Z  WARN 1 --- [partner-api] [           main] o.s.c.c.c.ConfigServerConfigDataLoader   : Could not locate PropertySource ([ConfigServerConfigDataResource@5a2f016d uris = array<String>['http://config-server:8888'], optional = true, profiles = 'prod']): None of labels [master] found`,
		`2026-03-14T09:40:18.210Z  INFO 1 --- [partner-api] [           main] a.p.discount.RateCardLoader : partner discounts disabled (partner.discounts.enabled=false), 0 rate cards loaded`}
	branch := evidence.Change{Timestamp: win.Start.Add(-48 * time.Hour), Service: "config-server", Kind: "config", Description: "config-repo default branch renamed master -> main"}
	deployJob := []string{`2026-03-14T09:40:49.2672408Z ##[notice]no deploy/values-prod.yaml, using chart defaults for prod`}
	lsDeploy := evidence.CommandOutput{Command: "ls deploy/", Lines: []string{"Dockerfile.dev  prod.values.yaml  staging.values.yaml  values.yaml.example"}}
	release := evidence.Change{Timestamp: win.Start.Add(2 * time.Minute), Service: "billing-api", Kind: "deploy", Description: "billing-api 6.12.0"}
	nodeConfig := []string{`WARNING: No configurations found in configuration directory:/app/config`}
	viper := []string{`time="2026-03-14T09:40:08Z" level=warning msg="Config File \"worker\" Not Found in \"[/etc/worker]\", using defaults"`}
	cases := []struct {
		name    string
		set     LogSet
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string // "" for no finding
		says    []string
		rec     string
	}{
		{"a Go service given a path its config volume is not mounted at", minedSet("quote-svc", false, -time.Minute, goSlog...), []evidence.CommandOutput{describe, listing}, nil,
			"quote-svc", []string{"config file not found, using built-in defaults", "looks for /config/app.yaml", "(started with --config=/config/app.yaml)", "mounted at /etc/quote-svc", "the file is at /etc/quote-svc/app.yaml", "express=false"}, "Make the path"},
		{"Spring Cloud Config's optional import without its label, the branch renamed", minedSet("partner-api", false, -time.Minute, spring...), nil, []evidence.Change{branch},
			"partner-api", []string{"label master", "renamed master -> main", "partner discounts disabled"}, "Point partner-api at a label"},
		{"a deploy job's values file under another name", minedSetSource("gha-deploy-prod-billing-api", "gha-deploy-prod-billing-api", deployJob), []evidence.CommandOutput{lsDeploy}, []evidence.Change{release},
			"billing-api", []string{"gha-deploy-prod-billing-api, which deploys it", "deploy/values-prod.yaml", "holds prod.values.yaml, staging.values.yaml"}, "Give the deploy"},
		{"node-config's empty configuration directory", minedSet("notify-worker", false, -time.Minute, nodeConfig...), nil, nil,
			"notify-worker", []string{"No configurations found in configuration directory"}, "Give notify-worker"},
		{"viper's file not found, defaults used", minedSet("worker", false, -time.Minute, viper...), nil, nil,
			"worker", []string{`Not Found`, "using defaults"}, "Give worker"},
		{"a configuration loaded", minedSet("quote-svc", false, 0, `{"level":"INFO","msg":"config file loaded","path":"/config/app.yaml"}`), nil, nil, "", nil, ""},
		{"a configuration not found that stops the start", minedSet("quote-svc", false, 0, `FATAL config file not found: open /config/app.yaml: no such file or directory`), nil, nil, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := c.set
			if c.subject != "" && set.Subject != c.subject {
				set.Host = true // a deploy job's log, not the service's own
			}
			ev := Gathered{Window: win, Logs: []LogSet{set}, Commands: c.cmds, Changes: c.changes}
			f, ok := oneFinding(t, detectConfigSourceMissing(&ev), c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject {
				t.Errorf("subject %q, want %q", f.Subject, c.subject)
			}
			checkWritten(t, configSourceMissing, &f, c.rec, append([]string{"never reached the process"}, c.says...)...)
		})
	}
}
