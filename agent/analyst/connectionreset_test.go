package analyst

import (
	"strings"
	"testing"
)

func TestConnectionReset(t *testing.T) {
	testLines(t, connReset, []lineCase{
		{`read tcp 10.0.3.17:51234->10.0.5.9:6379: read: connection reset by peer`, KindConnReset},
		{`Error: read ECONNRESET at TCP.onStreamRead (node:internal/stream_base_commons:217:20)`, KindConnReset},
		{`write tcp 10.0.3.17:8080->10.0.1.4:40112: write: broken pipe`, KindConnReset},
		{`connection established to 10.0.5.9:6379`, ""},
	})
	h := &Hypothesis{Kind: KindConnReset, Subject: "redis", Primary: []*Finding{{Kind: KindConnReset, Subject: "redis",
		Facts: map[string]string{"caller": "cart", "target": "redis", "line": `read tcp 10.0.3.17:51234->10.0.5.9:6379: read: connection reset by peer`}}}}
	d := describe(h, Scope{})
	if !strings.Contains(d, "connections from cart to redis are reset (connection reset by peer)") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) != 2 || !strings.Contains(recs[0].Action, "Check redis for restarts") {
		t.Errorf("recommendations %v", recs)
	}
	for _, c := range networkChanges {
		if got := connReset.fitsChange(h, &c.c); got != c.fits {
			t.Errorf("fitsChange(%s %q) = %v", c.c.Kind, c.c.Summary, got)
		}
	}
}
