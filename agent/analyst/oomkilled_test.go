package analyst

import (
	"strings"
	"testing"
)

func TestOOMKilled(t *testing.T) {
	cases := []struct {
		name  string
		facts map[string]string
		want  []string
		rec   string
	}{
		{"at the limit", map[string]string{"memory_limit": "512Mi", "container": "api", "exit_code": "137"},
			[]string{"api containers are OOMKilled: the process runs out of memory (exit code 137) and is killed when it exceeds its memory limit of 512Mi"},
			"Raise the memory limit of api (currently 512Mi)"},
		{"host process", map[string]string{"host": "cache-1", "process": "redis-server"},
			[]string{"the redis-server process on host cache-1 is killed by the kernel OOM killer (out of memory)"},
			"Restart redis-server on cache-1"},
		{"no limit", map[string]string{"container": "api"},
			[]string{"api containers are OOMKilled", "no memory limit is set"}, "Set a memory request and limit on api"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &Hypothesis{Kind: KindOOMKilled, Subject: "api", Primary: []*Finding{{Kind: KindOOMKilled, Subject: "api", Source: SrcKubernetes, Facts: c.facts}}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) != 3 || !strings.Contains(recs[0].Action, c.rec) {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
	h := &Hypothesis{Kind: KindOOMKilled, Subject: "api"}
	for _, c := range []struct {
		c    Finding
		fits bool
	}{
		{Finding{Kind: KindConfigChange, Facts: map[string]string{"description": "JAVA_OPTS: -Xmx1g → -Xmx3g"}}, true},
		{Finding{Kind: KindResourceChange, Facts: map[string]string{"memory_limit_change": "1Gi → 512Mi"}}, true},
		{Finding{Kind: KindDeploy, Summary: "deployment api image api:1.8.2"}, false},
	} {
		if got := oomKilled.fitsChange(h, &c.c); got != c.fits {
			t.Errorf("fitsChange(%v) = %v", c.c, got)
		}
	}
}
