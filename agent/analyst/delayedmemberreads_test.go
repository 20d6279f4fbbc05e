package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A client reading from secondaries while a delayed member is not hidden:
// rs.conf() as mongosh (Long), the legacy shell (slaveDelay, NumberLong,
// quoted keys) and a driver's JSON print it, the read preference from a
// log line, a change or a connection string; a hidden delayed member, no
// delay and primary reads are none.
func TestDetectDelayedMemberReads(t *testing.T) {
	mongosh := evidence.CommandOutput{Command: `mongosh --quiet --eval 'rs.conf().members'`, Lines: []string{
		"[",
		"  { _id: 0, host: 'users-db-0.users-db:27017', priority: 2, votes: 1, hidden: false, secondaryDelaySecs: Long('0') },",
		"  { _id: 1, host: 'users-db-1.users-db:27017', priority: 1, votes: 1, hidden: false, secondaryDelaySecs: Long('0') },",
		"  { _id: 2, host: 'users-db-2.users-db:27017', priority: 0, votes: 0, hidden: false, secondaryDelaySecs: Long('1800') }",
		"]",
	}}
	legacy := evidence.CommandOutput{Command: `mongo --quiet --eval 'printjson(rs.conf())'`, Lines: []string{
		`{`, `	"_id" : "rs0",`, `	"members" : [`,
		`		{ "_id" : 0, "host" : "db1.example.net:27017", "arbiterOnly" : false, "hidden" : false, "priority" : 1, "slaveDelay" : NumberLong(0), "votes" : 1 },`,
		`		{ "_id" : 2, "host" : "db3.example.net:27017", "arbiterOnly" : false, "priority" : 0, "slaveDelay" : NumberLong(3600), "votes" : 1 }`,
		`	]`, `}`,
	}}
	hidden := evidence.CommandOutput{Command: `mongosh --quiet --eval 'rs.conf().members'`, Lines: []string{
		"[ { _id: 0, host: 'users-db-0.users-db:27017', hidden: false, secondaryDelaySecs: Long('0') },",
		"  { _id: 2, host: 'users-db-2.users-db:27017', priority: 0, hidden: true, secondaryDelaySecs: Long('1800') } ]",
	}}
	driverLog := `{"level":"info","ts":"2026-11-25T11:30:44.102Z","msg":"mongo connected","replicaSet":"rs0","readPreference":"secondaryPreferred"}`
	primaryLog := `{"level":"info","ts":"2026-11-25T11:30:44.102Z","msg":"mongo connected","replicaSet":"rs0","readPreference":"primary"}`
	change := evidence.Change{Timestamp: win.Start.Add(-3 * time.Hour), Service: "orders-api", Kind: "config", Description: "orders-api: set read preference nearest to spread reads"}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string
		want    []string
	}{
		{"mongosh, a driver's log", []LogSet{minedSet("profile-api", false, 0, driverLog)}, []evidence.CommandOutput{mongosh}, nil, "profile-api",
			[]string{"readPreference=secondaryPreferred", "users-db-2", "secondaryDelaySecs 1800 (30 min", "not hidden"}},
		{"the legacy shell, a change", nil, []evidence.CommandOutput{legacy}, []evidence.Change{change}, "orders-api",
			[]string{"readPreference=nearest", "db3", "slaveDelay 3600 (1 h", "orders-api's change"}},
		{"a hidden delayed member", []LogSet{minedSet("profile-api", false, 0, driverLog)}, []evidence.CommandOutput{hidden}, nil, "", nil},
		{"primary reads", []LogSet{minedSet("profile-api", false, 0, primaryLog)}, []evidence.CommandOutput{mongosh}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectDelayedMemberReads(&Gathered{Logs: tc.sets, Commands: tc.cmds, Changes: tc.changes, Window: win}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindDelayedMemberReads, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
