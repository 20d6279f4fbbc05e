package analyst

import (
	"strings"
	"testing"
)

func TestConnectionRefused(t *testing.T) {
	testLines(t, connRefused, []lineCase{
		{`dial tcp 10.96.44.7:8080: connect: connection refused`, KindConnRefused},
		{`Error: connect ECONNREFUSED 10.0.5.9:5432 at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)`, KindConnRefused},
		{`upstream connect error or disconnect/reset before headers. reset reason: connection failure, transport failure reason: delayed connect error: 111`, KindConnRefused},
		{`connection pool ready: 10 connections`, ""},
	})
	h := &Hypothesis{Kind: KindConnRefused, Subject: "inventory", Primary: []*Finding{{Kind: KindConnRefused, Subject: "inventory",
		Facts: map[string]string{"caller": "checkout", "target": "inventory", "line": "dial tcp 10.96.44.7:8080: connect: connection refused"}}}}
	if d := describe(h, Scope{}); !strings.Contains(d, "inventory is down or not accepting connections: checkout gets connection refused calling inventory") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "Restore inventory") {
		t.Errorf("recommendations %v", recs)
	}
	for _, c := range networkChanges {
		if got := connRefused.fitsChange(h, &c.c); got != c.fits {
			t.Errorf("fitsChange(%s %q) = %v", c.c.Kind, c.c.Summary, got)
		}
	}
}
