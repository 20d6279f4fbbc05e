package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Helm's refusal to import an existing object, as helm 3 prints it for an
// upgrade and an install: owned by another release (the owner named), or
// made outside Helm (the keys missing; the release read from the message
// or the command). Other Helm failures are not this cause.
func TestHelmOwnership(t *testing.T) {
	now := time.Date(2026, 3, 18, 12, 0, 0, 0, time.UTC)
	change := evidence.Change{Timestamp: now.Add(-40 * time.Minute), Service: "web", Kind: "config", Description: "web values: add ServiceAccount web-reader for the new sidecar"}
	for _, c := range []struct {
		name, cmd, line string
		says            []string
	}{
		{"upgrade, owned by another release", "helm upgrade web ./charts/web -n shop",
			`Error: UPGRADE FAILED: Unable to continue with update: ServiceAccount "web-reader" in namespace "shop" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key "meta.helm.sh/release-name" must equal "web": current value is "reader-rbac"`,
			[]string{"release web failed before applying anything", "belongs to another release, reader-rbac", "ServiceAccount web-reader in namespace shop", "add ServiceAccount web-reader"}},
		{"install, made outside Helm", "helm install web ./charts/web --namespace shop --create-namespace",
			`Error: INSTALL FAILED: rendered manifests contain a resource that already exists. Unable to continue with install: ServiceAccount "web-reader" in namespace "shop" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"; annotation validation error: missing key "meta.helm.sh/release-name": must be set to "web"; annotation validation error: missing key "meta.helm.sh/release-namespace": must be set to "shop"`,
			[]string{"without Helm's ownership metadata", "release web"}},
		{"helmfile's wrapped output", "helmfile -e prod apply",
			`  Error: UPGRADE FAILED: Unable to continue with update: ConfigMap "web-dashboards" in namespace "monitoring" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key "meta.helm.sh/release-name" must equal "web": current value is "dashboards"`,
			[]string{"belongs to another release, dashboards"}},
		{"another failure", "helm upgrade web ./charts/web -n shop",
			`Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: []evidence.CommandOutput{{Command: c.cmd, Lines: []string{c.line}}}, Changes: []evidence.Change{change},
				Window: Window{BaselineStart: now.Add(-4 * time.Hour), Start: now.Add(-2 * time.Hour), End: now}, Scope: Scope{Namespace: "shop"}}
			wantWritten(t, KindHelmOwnership, detectHelmOwnership(ev, nil), c.says)
		})
	}
}
