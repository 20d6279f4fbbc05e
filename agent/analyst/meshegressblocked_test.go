package analyst

import (
	"slices"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A caller's sidecar dropping calls to a host outside its registry, as
// Istio's access log prints it for TCP/TLS (BlackHoleCluster with the
// requested server name) and for HTTP (502 direct_response from the
// block_all route), with the mesh config, the ServiceEntries and the
// change read; a call passed through to an unknown host is not one.
func TestDetectMeshEgressBlocked(t *testing.T) {
	tcp := `[2026-03-14T09:09:15.097Z] "- - -" 0 UH - - "-" 0 0 0 - "-" "-" "-" "-" "-" BlackHoleCluster - 104.18.22.140:443 10.60.2.45:51337 api.maps.example -`
	http := `[2026-03-14T10:04:32.160Z] "POST /v1/assess HTTP/1.1" 502 - direct_response - "-" 0 0 0 - "-" "python-httpx/0.27.2" "833cc77e-3cd9-4c8b-aa67-cc01e0c87044" "fraud.risk.svc.cluster.local:8080" "-" - - 10.96.140.77:8080 10.52.1.33:36824 - block_all`
	passthrough := `[2026-03-14T09:09:15.097Z] "- - -" 0 - - - "-" 1024 4096 120 - "-" "-" "-" "-" "104.18.22.140:443" PassthroughCluster 10.60.2.45:51337 104.18.22.140:443 10.60.2.45:51337 api.maps.example -`
	mesh := evidence.CommandOutput{Command: "kubectl get configmap istio -n istio-system -o jsonpath='{.data.mesh}'", Lines: []string{"outboundTrafficPolicy:", "  mode: REGISTRY_ONLY"}}
	entries := evidence.CommandOutput{Command: "kubectl get serviceentry -A", Lines: []string{
		"NAMESPACE      NAME          HOSTS                      LOCATION        RESOLUTION   AGE",
		`istio-system   egress-old    ["api.oldmaps.example"]    MESH_EXTERNAL   DNS          70m`,
	}}
	sidecarChange := evidence.Change{Timestamp: win.Start.Add(-time.Hour), Service: "orders", Kind: "config", Description: "mesh: namespace-scoped Sidecar for orders generated from the catalog"}
	cases := []struct {
		name              string
		line              string
		cmds              []evidence.CommandOutput
		dest, related     string
		registryOnly, ext bool
		wantText          string
	}{
		{"TLS to an external host without a ServiceEntry", tcp, []evidence.CommandOutput{mesh, entries}, "api.maps.example", "", true, true, "api.oldmaps.example"},
		{"HTTP to another namespace outside the Sidecar's egress", http, []evidence.CommandOutput{mesh}, "fraud", "fraud", true, false, "block_all"},
		{"passed through", passthrough, []evidence.CommandOutput{mesh}, "", "", false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("caller", false, 0, c.line, c.line)}, Commands: c.cmds, Changes: []evidence.Change{sidecarChange}, Window: win}
			want := ""
			if c.dest != "" {
				want = "caller"
			}
			f := onlyFinding(t, detectMeshEgressBlocked(ev, nil), want)
			if f == nil {
				return
			}
			if f.fact("destination") != c.dest || (f.fact("registry_only") != "") != c.registryOnly || (f.fact("external") != "") != c.ext || c.related != "" && !slices.Contains(f.Related, c.related) {
				t.Errorf("dest %q registry_only %q external %q related %v", f.fact("destination"), f.fact("registry_only"), f.fact("external"), f.Related)
			}
			h := &Hypothesis{Kind: KindMeshEgressBlocked, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "sidecar of caller", "REGISTRY_ONLY", c.wantText)
		})
	}
}
