package analyst

import (
	"strings"
	"testing"
)

func TestAppCrash(t *testing.T) {
	testLines(t, appCrash, []lineCase{
		{`panic: runtime error: invalid memory address or nil pointer dereference`, KindAppCrash},
		{`Exception in thread "main" java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null`, KindAppCrash},
		{`Traceback (most recent call last):`, KindAppCrash},
		{`GET /panic-button 200 3ms`, ""},
	})
	h := &Hypothesis{Kind: KindAppCrash, Subject: "worker", Primary: []*Finding{{Kind: KindAppCrash, Subject: "worker", Summary: "worker crashes",
		Facts: map[string]string{"line": "panic: runtime error: invalid memory address or nil pointer dereference"}}}}
	if d := describe(h, Scope{}); !strings.Contains(d, "worker crashes with an application error") || !strings.Contains(d, "nil pointer dereference") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) != 3 || recs[1].Action != "Fix the crash of worker from its last log lines and exit code" {
		t.Errorf("recommendations %v", recs)
	}
}
