package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestParseCRDRefusal reads the refusal of a kind in the forms of
// kubectl, Helm, Flux and Argo CD.
func TestParseCRDRefusal(t *testing.T) {
	for _, c := range []struct {
		line                       string
		kind, group, version, name string
	}{
		{`error: resource mapping not found for name: "docs-site" namespace: "docs" from "k8s/ingressroute.yaml": no matches for kind "IngressRoute" in version "traefik.containo.us/v1alpha1"`, "IngressRoute", "traefik.containo.us", "v1alpha1", "docs-site"},
		{`Error: UPGRADE FAILED: unable to build kubernetes objects from release manifest: resource mapping not found for name: "api-tls" namespace: "" from "": no matches for kind "Certificate" in version "cert-manager.io/v1alpha2"`, "Certificate", "cert-manager.io", "v1alpha2", "api-tls"},
		{`{"level":"error","ts":"2026-06-15T08:01:02Z","msg":"Reconciliation failed","error":"ServiceMonitor/shop/checkout dry-run failed: no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\""}`, "ServiceMonitor", "monitoring.coreos.com", "v1", "checkout"},
		{`ComparisonError: The Kubernetes API could not find networking.istio.io/VirtualService for requested resource shop/reviews. Make sure the "VirtualService" CRD is installed on the destination cluster.`, "VirtualService", "networking.istio.io", "", "reviews"},
		{`error: the server doesn't have a resource type "pods"`, "", "", "", ""},
	} {
		r, ok := parseCRDRefusal(c.line)
		if ok != (c.kind != "") || r.kind != c.kind || r.group != c.group || r.version != c.version || r.name != c.name {
			t.Errorf("%q: %+v", c.line, r)
		}
	}
}

// TestDetectCRDMissing follows a refused kind to the CRDs listed and the
// operator's upgrade; a deploy of the application is not why.
func TestDetectCRDMissing(t *testing.T) {
	apply := evidence.CommandOutput{Command: "kubectl apply -n docs -f k8s/", Lines: []string{
		"deployment.apps/docs-site unchanged",
		`error: resource mapping not found for name: "docs-site" namespace: "docs" from "k8s/ingressroute.yaml": no matches for kind "IngressRoute" in version "traefik.containo.us/v1alpha1"`,
		"ensure CRDs are installed first"}}
	crds := evidence.CommandOutput{Command: "kubectl get crd", Lines: []string{
		"ingressroutes.traefik.io                         2026-06-13T21:04:31Z",
		"middlewares.traefik.io                           2024-02-02T10:15:48Z"}}
	noCRDs := evidence.CommandOutput{Command: "kubectl get crd", Lines: []string{"certificates.cert-manager.io   2024-02-02T10:15:48Z"}}
	upgrade := evidence.Change{Timestamp: win.Start.Add(-30 * time.Hour), Service: "traefik", Kind: "infra", Description: "helm upgrade traefik traefik/traefik 27.0.2 -> 30.1.0 (Traefik v2.11 -> v3.1)"}
	content := evidence.Change{Timestamp: win.Start.Add(10 * time.Minute), Service: "docs-site", Kind: "deploy", Description: "docs-site build 2026.06.15-1 (content only)"}
	fluxLog := minedSet("kustomize-controller", false, 0, `{"level":"error","msg":"Reconciliation failed","error":"ServiceMonitor/shop/checkout dry-run failed: no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\""}`)
	for _, c := range []struct {
		name             string
		g                Gathered
		subject, newIn   string
		removedBy, state bool
	}{
		{"apply, CRDs and the upgrade", Gathered{Commands: []evidence.CommandOutput{apply, crds}, Earlier: []evidence.Change{upgrade}, Changes: []evidence.Change{content}, Scope: Scope{Service: "docs-site"}, Window: win}, "docs-site", "traefik.io", true, false},
		{"apply and no CRD of the group left", Gathered{Commands: []evidence.CommandOutput{apply, noCRDs}, Scope: Scope{Service: "docs-site"}, Window: win}, "docs-site", "", false, false},
		{"the apply alone, the content deploy", Gathered{Commands: []evidence.CommandOutput{apply}, Changes: []evidence.Change{content}, Window: win}, "docs-site", "", false, true},
		{"Flux's dry run", Gathered{Logs: []LogSet{fluxLog}, Window: win}, "checkout", "", false, true},
		{"nothing refused", Gathered{Commands: []evidence.CommandOutput{crds}, Window: win}, "", "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectCRDMissing(&c.g, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("new_group") != c.newIn || (f.fact("removed_by") != "") != c.removedBy || (f.fact("state_only") != "") != c.state {
				t.Errorf("facts %v", f.Facts)
			}
			h := &Hypothesis{Kind: KindCRDMissing, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "no longer serves kind", "CRD")
			if c.removedBy {
				wantDescribed(t, h, Scope{}, "traefik.io", "upgrade")
				if !crdMissing.fitsChange(h, &Finding{Kind: KindInfraChange, Facts: map[string]string{"description": upgrade.Description}}) {
					t.Error("the operator's upgrade fits")
				}
			}
			if crdMissing.fitsChange(h, &Finding{Kind: KindDeploy, Subject: "docs-site", Facts: map[string]string{"description": content.Description}}) {
				t.Error("a content deploy does not fit")
			}
		})
	}
}
