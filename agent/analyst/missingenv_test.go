package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestMissingEnvLines(t *testing.T) {
	testLines(t, missingEnv, []lineCase{
		{`{"level":"error","service":"orders-api","msg":"config: missing required env DATABASE_URL"}`, KindMissingEnv},
		{" Missing environment variables:", KindMissingEnv},
		{"Error: required environment variable \"STRIPE_KEY\" is not set", KindMissingEnv},
		{"DEPLOY_ENV is undefined", KindMissingEnv},
		{"/entrypoint.sh: line 4: DEPLOY_ENV: unbound variable", KindMissingEnv},
		{"sh: DEPLOY_ENV: parameter not set", KindMissingEnv},
		{"panic: required key DATABASE_URL missing value", KindMissingEnv},
		{"KeyError: 'REDIS_URL'", KindMissingEnv},
		{"java.lang.IllegalArgumentException: Could not resolve placeholder 'db.password' in value \"${db.password}\"", KindMissingEnv},
		{"INFO loaded 14 environment variables from /etc/env", ""},
		{"KeyError: 'customer_id'", ""},
		{"the cache is undefined until warm-up completes", ""},
	})
}

// TestMissingEnvFromCrashLog checks the chain from a crash loop to the
// variable its log names, for a tool that lists the variables below a
// heading (envalid) and for a one-line message.
func TestMissingEnvFromCrashLog(t *testing.T) {
	t0 := time.Date(2026, 4, 8, 14, 39, 0, 0, time.UTC)
	crash := Finding{Kind: KindCrashLoop, Subject: "storefront-sync", Object: "pod catalog/storefront-sync-8695f7c4d9-kq7wb", Namespace: "catalog",
		Time: t0, Summary: "pod catalog/storefront-sync-8695f7c4d9-kq7wb container sync in CrashLoopBackOff (exit code 1)",
		Facts: map[string]string{"container": "sync", "exit_code": "1"}}
	cases := []struct {
		lines []string
		want  string
	}{
		{[]string{"> node dist/server.js", "[2026-04-08T14:39:51.874Z] info: storefront-sync 2.0.0 starting", "================================",
			" Missing environment variables:", "    SHOPIFY_ADMIN_TOKEN: Shopify Admin API access token (required)", " Exiting with error code 1"}, "SHOPIFY_ADMIN_TOKEN"},
		{[]string{"starting", `{"level":"error","msg":"config: missing required env DATABASE_URL"}`, `{"level":"error","msg":"fatal: invalid configuration, exiting with code 1"}`}, "DATABASE_URL"},
		{[]string{"starting", "connected to postgres", "exiting"}, ""},
	}
	for _, c := range cases {
		var ll []evidence.LogLine
		for _, l := range c.lines {
			ll = append(ll, evidence.LogLine{Text: l})
		}
		ev := &Gathered{K8s: K8sEvidence{PreviousLogs: map[string][]evidence.LogLine{"catalog/storefront-sync-8695f7c4d9-kq7wb/sync": ll}}}
		fs := missingEnv.detect(ev, []Finding{crash})
		if c.want == "" {
			if len(fs) != 0 {
				t.Errorf("%q: found %+v, want nothing", c.lines, fs)
			}
			continue
		}
		if len(fs) != 1 || fs[0].fact("variable") != c.want || fs[0].Subject != "storefront-sync" {
			t.Fatalf("%q: findings %+v, want one naming %s", c.lines, fs, c.want)
		}
		// It outranks the crash loop it explains.
		a := Reason(append(fs, crash), Scope{Service: "storefront-sync"})
		if a.Hypotheses[0].Kind != KindMissingEnv {
			t.Errorf("winner %s, want missing_env", a.Hypotheses[0].Kind)
		}
	}
}
