package analyst

import (
	"testing"
)

func TestDatabaseErrors(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{`psycopg2.OperationalError: connection to server at "orders-db" (10.0.4.12), port 5432 failed: FATAL:  sorry, too many clients already`, []string{"database errors in checkout", "too many clients already"}},
		{`org.springframework.dao.DeadlockLoserDataAccessException: ERROR: deadlock detected Detail: Process 4242 waits for ShareLock on transaction 918273`, []string{"database errors in checkout", "deadlock detected"}},
	} {
		if k, _ := ClassifyLine(c.line); k != KindDatabase {
			t.Errorf("ClassifyLine(%q) = %s", c.line, k)
		}
		h := &Hypothesis{Kind: KindDatabase, Subject: "orders-db", Primary: []*Finding{{Kind: KindDatabase, Subject: "orders-db",
			Facts: map[string]string{"caller": "checkout", "line": c.line}}}}
		wantDescribed(t, h, Scope{}, c.want...)
		if len(recommend(h, Scope{})) == 0 {
			t.Errorf("no recommendations")
		}
	}
}
