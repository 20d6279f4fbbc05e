package analyst

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The mirroring controllers' annotations, as their users write them, are
// judged for one target namespace the way each controller matches them.
func TestMirrorJudge(t *testing.T) {
	const refl = "reflector.v1.k8s.emberstack.com/"
	const repl = "replicator.v1.mittwald.de/"
	cases := []struct {
		name    string
		ann     map[string]string
		ns      string
		ok      bool
		permits bool
		rule    string
	}{
		{"Reflector, names listed, namespace left out", map[string]string{refl + "reflection-allowed": "true", refl + "reflection-allowed-namespaces": "shop,shop-staging", refl + "reflection-auto-enabled": "true", refl + "reflection-auto-namespaces": "shop,shop-staging"},
			"shop-canary", true, false, "reflection-allowed-namespaces: shop,shop-staging; " + refl + "reflection-auto-namespaces"},
		{"Reflector, a pattern covers it", map[string]string{refl + "reflection-allowed": "true", refl + "reflection-allowed-namespaces": "shop.*,payments-.*", refl + "reflection-auto-enabled": "true"},
			"shop-canary", true, true, ""},
		{"Reflector, allowed but auto list leaves it out", map[string]string{refl + "reflection-allowed": "true", refl + "reflection-auto-enabled": "true", refl + "reflection-auto-namespaces": "prod-.*"},
			"staging-eu", true, false, "reflection-auto-namespaces: prod-.*"},
		{"Reflector, allowed but never copied on its own", map[string]string{refl + "reflection-allowed": "true", refl + "reflection-allowed-namespaces": "apps"},
			"apps", true, false, "reflection-auto-enabled"},
		{"Reflector copy is no source", map[string]string{refl + "reflects": "platform/tls", refl + "reflection-allowed": "true"}, "apps", false, false, ""},
		{"kubernetes-replicator push list", map[string]string{repl + "replicate-to": "team-a,team-b"}, "team-c", true, false, "replicate-to: team-a,team-b"},
		{"kubernetes-replicator push pattern", map[string]string{repl + "replicate-to": "team-[a-z]+"}, "team-c", true, true, ""},
		{"kubernetes-replicator pull allow list", map[string]string{repl + "replication-allowed": "true", repl + "replication-allowed-namespaces": "ci-.*"}, "preview-17", true, false, "replication-allowed-namespaces: ci-.*"},
		{"kubed sync: named, not judged", map[string]string{"kubed.appscode.com/sync": "app=shop"}, "shop-canary", true, true, "kubed.appscode.com/sync: app=shop"},
		{"no mirror annotations", map[string]string{"owner": "payments"}, "shop", false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := mirrorJudge(c.ann, c.ns)
			if ok != c.ok || v.permits != c.permits || !strings.Contains(v.rule, c.rule) {
				t.Errorf("mirrorJudge = %+v, %v; want ok %v permits %v rule holding %q", v, ok, c.ok, c.permits, c.rule)
			}
		})
	}
}

// A config error's missing Secret is followed to the one object of its
// name that a mirroring controller copies, and to why no copy reached the
// pod's namespace.
func TestConfigMirror(t *testing.T) {
	src := func(ns string, ann map[string]string) ConfigSource {
		return ConfigSource{Kind: "Secret", Meta: metav1.ObjectMeta{Namespace: ns, Name: "api-keys", Annotations: ann}}
	}
	allowed := map[string]string{"reflector.v1.k8s.emberstack.com/reflection-allowed": "true", "reflector.v1.k8s.emberstack.com/reflection-allowed-namespaces": "web,web-staging", "reflector.v1.k8s.emberstack.com/reflection-auto-enabled": "true"}
	base := Finding{Kind: KindConfigError, Subject: "web", Namespace: "web-preview", Object: "pod web-preview/web-7d9f-abcde", Weight: 0.95}
	base.setFact("missing", "secret api-keys")
	cases := []struct {
		name    string
		sources []ConfigSource
		want    []string
	}{
		{"source in a platform namespace leaves the namespace out", []ConfigSource{src("platform", allowed), src("web", nil)},
			[]string{"Secret platform/api-keys", "web-preview is not among them", "reflection-allowed-namespaces: web,web-staging"}},
		{"source permits it: the controller made no copy", []ConfigSource{src("platform", map[string]string{"replicator.v1.mittwald.de/replicate-to": "web.*"})},
			[]string{"no copy exists in web-preview", "kubernetes-replicator"}},
		{"only copies without annotations: nothing to follow", []ConfigSource{src("web", nil), src("web-staging", nil)}, nil},
		{"a ConfigMap of the name is another object", []ConfigSource{{Kind: "ConfigMap", Meta: metav1.ObjectMeta{Namespace: "platform", Name: "api-keys", Annotations: allowed}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{ConfigSources: c.sources}}
			out := detectConfigMirror(ev, []Finding{base})
			if c.want == nil {
				if len(out) != 0 {
					t.Fatalf("findings %+v, want none", out)
				}
				return
			}
			if len(out) != 1 {
				t.Fatalf("%d findings, want 1", len(out))
			}
			f := &out[0]
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := describe(h, Scope{Namespace: "web-preview"})
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("description %q lacks %q", d, s)
				}
			}
			if len(recommend(h, Scope{Namespace: "web-preview"})) == 0 {
				t.Error("no recommendation")
			}
		})
	}
}
