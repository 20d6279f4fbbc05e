package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestFailoverLoop: writes refused read-only on and off while the primary
// fails over again and again — Redis Sentinel's switches with its epochs,
// MongoDB's elections, Patroni's promotions — with the change that
// lowered the failure detection and the primary's fork stall; one
// failover alone is no loop.
func TestFailoverLoop(t *testing.T) {
	redisClient := `2026-03-14T09:01:08.467Z error: cart update failed op=HSET err="ReplyError: READONLY You can't write against a read only replica."`
	mongoClient := `{"t":"2026-03-14T09:01:08Z","level":"error","msg":"write failed","err":"NotWritablePrimary: not primary"}`
	pgClient := `2026-03-14 09:01:08,101 ERROR psycopg.errors.ReadOnlySqlTransaction: cannot execute UPDATE in a read-only transaction`
	repeat := func(n int, f func(i int) string) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, f(i))
		}
		return out
	}
	sentinel := repeat(4, func(i int) string {
		return fmt.Sprintf("1:X 14 Mar 2026 09:0%d:12.090 # +new-epoch %d\n1:X 14 Mar 2026 09:0%d:12.700 # +switch-master mymaster 10.50.1.17 6379 10.50.2.9 6379", i, 13+i, i)
	})
	sentinel = strings.Split(strings.Join(sentinel, "\n"), "\n")
	mongo := repeat(4, func(i int) string {
		return fmt.Sprintf(`{"t":{"$date":"2026-03-14T09:0%d:10.000+00:00"},"s":"I","c":"ELECTION","id":21450,"ctx":"ReplCoord-%d","msg":"Election succeeded, assuming primary role","attr":{"term":%d}}`, i, i, 40+i)
	})
	patroni := repeat(3, func(i int) string {
		return fmt.Sprintf(`2026-03-14 09:0%d:10,000 INFO: promoted self to leader by acquiring session lock`, i)
	})
	helm := evidence.Change{Timestamp: win.Start.Add(-3 * time.Minute), Service: "cart-redis", Kind: "config",
		Description: "helm upgrade cart-redis: sentinel.downAfterMilliseconds 5000 -> 1000 'faster failover'"}
	mongoCfg := evidence.Change{Timestamp: win.Start.Add(-3 * time.Minute), Service: "profiles-mongo", Kind: "config",
		Description: "rs.reconfig: settings.electionTimeoutMillis 10000 -> 500"}
	info := evidence.CommandOutput{Command: "kubectl exec cart-redis-node-1 -c redis -- redis-cli info persistence", Lines: []string{"rdb_last_bgsave_status:ok", "latest_fork_usec:1712408"}}
	cases := []struct {
		name    string
		sets    []LogSet
		changes []evidence.Change
		cmds    []evidence.CommandOutput
		loop    bool
		want    []string
	}{
		{"Redis Sentinel: epochs, downAfterMilliseconds lowered, a 1.7 s fork",
			[]LogSet{minedSet("cart-api", false, 0, redisClient), minedSet("cart-redis-node", false, 0, sentinel...)}, []evidence.Change{helm}, []evidence.CommandOutput{info},
			true, []string{"4 failovers (configuration epochs 13 to 16)", "downAfterMilliseconds was lowered from 5000 to 1000", "1.7 s"}},
		{"MongoDB elections after electionTimeoutMillis was lowered",
			[]LogSet{minedSet("profiles-api", false, 0, mongoClient), minedSet("profiles-mongo", false, 0, mongo...)}, []evidence.Change{mongoCfg}, nil,
			true, []string{"4 failover events", "electionTimeoutMillis was lowered from 10000 to 500"}},
		{"Patroni promotions, the setting not read",
			[]LogSet{minedSet("billing", false, 0, pgClient), minedSet("billing-pg", false, 0, patroni...)}, nil, nil,
			true, []string{"3 failover events", "marks a healthy primary down"}},
		{"one failover is no loop",
			[]LogSet{minedSet("cart-api", false, 0, redisClient), minedSet("cart-redis-node", false, 0, sentinel[:2]...)}, []evidence.Change{helm}, nil,
			false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Changes: c.changes, Commands: c.cmds, Window: win}
			fs := detectReadOnlyWrites(ev, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			if (f.Kind == KindFailoverLoop) != c.loop {
				t.Fatalf("kind %q, want loop %v", f.Kind, c.loop)
			}
			if !c.loop {
				return
			}
			if c.changes != nil && f.fact("why") == "" {
				t.Error("no why")
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, append(c.want, "fails over again and again", "read-only")...)
			if !failoverLoop.related(h, &Finding{Kind: KindLogErrors, Subject: c.sets[0].Subject}) {
				t.Error("the client is not related")
			}
		})
	}
}
