package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTombstones reads reads aborted on tombstones: Cassandra 4's
// "Scanned over N tombstones during query ... query aborted", Cassandra
// 3's TombstoneOverwhelmingException, warnings with nodetool tablestats
// at the failure threshold; with the client that gets the read failures,
// the job that deletes rows one by one and the table's gc_grace_seconds.
// Warnings alone, under the failure threshold, are not this cause.
func TestTombstones(t *testing.T) {
	abort4 := `ERROR [ReadStage-1] 2026-03-14 10:12:00,187 ReadCommand.java:571 - Scanned over 100001 tombstones during query 'SELECT * FROM inbox.messages_by_user WHERE user_id = 3f7d2c18 LIMIT 50' (last scanned row token was -4435519502678743854 and partion key was ((3f7d2c18), 4682961774003)); query aborted`
	abort3 := `ERROR [SharedPool-Worker-2] 2026-03-14 10:12:00,001 MessageDeliveryTask.java:77 - Scanned over 100001 tombstones in chat.events; query aborted (see tombstone_failure_threshold)`
	warn := `WARN  [ReadStage-4] 2026-03-14 10:12:10,877 ReadCommand.java:605 - Read 50 live rows and 1363 tombstone cells for query SELECT * FROM inbox.messages_by_user WHERE user_id = 685ca8af LIMIT 50 (see tombstone_warn_threshold)`
	javaDriver := `com.datastax.oss.driver.api.core.servererrors.ReadFailureException: Cassandra failure during read query at consistency LOCAL_QUORUM (2 responses were required but only 0 replica responded, 2 failed)`
	gocql := `2026-03-14T10:12:01Z ERROR load history: Operation failed - received 0 responses and 2 failures: READ_TOO_MANY_TOMBSTONES`
	cleanup := `2026-03-14T10:00:04Z cleanup: deleting read notifications older than 24h (per message) table=inbox.messages_by_user`
	stats := func(max string) evidence.CommandOutput {
		out := "\t\tSSTable count: 14\n\t\tAverage tombstones per slice (last five minutes): 41233.8\n\t\tMaximum tombstones per slice (last five minutes): " + max
		run := "nodetool tablestats inbox.messages_by_user"
		return evidence.CommandOutput{Command: "kubectl exec -n data cass-inbox-0 -c cassandra -- " + run, Run: run, Exec: true, Pod: "cass-inbox-0", Lines: strings.Split(out, "\n")}
	}
	describeOut := evidence.CommandOutput{Command: "cqlsh -e 'DESCRIBE TABLE inbox.messages_by_user'", Run: "cqlsh -e 'DESCRIBE TABLE inbox.messages_by_user'", Exec: true, Pod: "cass-inbox-0",
		Lines: []string{"    PRIMARY KEY (user_id, created_at)", "    AND gc_grace_seconds = 864000"}}
	cleanupChange := evidence.Change{Timestamp: win.Start.Add(-72 * 3600e9), Kind: "deploy", Service: "notifications-cleanup", Description: "notifications-cleanup 2.0.0: hourly CronJob deletes read notifications individually (was: 30-day TTL on insert, removed)"}
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
		deleter string
	}{
		{"Cassandra 4: aborted reads, Java driver, the cleanup job and its change", []LogSet{
			logSet("cass-inbox", false, abort4, warn), logSet("inbox-api", false, javaDriver), logSet("notifications-cleanup", false, cleanup)},
			[]evidence.CommandOutput{stats("100001"), describeOut}, "cass-inbox",
			[]string{"aborts reads of inbox.messages_by_user on tombstones", "inbox-api gets the read failures", "864000 s, 10 days", "notifications-cleanup deletes the rows one by one", "TTL on insert, removed"}, "notifications-cleanup"},
		{"Cassandra 3: TombstoneOverwhelming in a keyspace.table, gocql client", []LogSet{
			logSet("cass-chat", false, abort3), logSet("chat-history", false, gocql)}, nil, "cass-chat",
			[]string{"aborts reads of chat.events", "chat-history gets the read failures"}, ""},
		{"warnings at the failure threshold in tablestats", []LogSet{logSet("cass-inbox", false, warn)},
			[]evidence.CommandOutput{stats("100001")}, "cass-inbox", []string{"maximum 100001 tombstones per slice"}, ""},
		{"warnings under the threshold: reads still served", []LogSet{logSet("cass-inbox", false, warn)},
			[]evidence.CommandOutput{stats("1363")}, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Window: win}
			if c.deleter != "" {
				ev.Earlier = []evidence.Change{cleanupChange}
			}
			f := onlyFinding(t, detectTombstones(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("deleter") != c.deleter || (f.fact("why") != "") != (c.deleter != "") {
				t.Errorf("deleter %q why %q", f.fact("deleter"), f.fact("why"))
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "deletes") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
	// Another service's release is no trigger; the deleter's is.
	f := detectTombstones(&Gathered{Logs: []LogSet{logSet("cass-inbox", false, abort4), logSet("notifications-cleanup", false, cleanup)}, Window: win}, nil)[0]
	h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
	push := &Finding{Kind: KindDeploy, Subject: "push-gateway", Summary: "deploy of push-gateway: push-gateway 1.12.0: APNs token auth"}
	del := &Finding{Kind: KindDeploy, Subject: "notifications-cleanup", Summary: "deploy of notifications-cleanup 2.0.1"}
	if tombstonesM.fitsChange(h, push) || !tombstonesM.fitsChange(h, del) {
		t.Errorf("fitsChange: push %v, cleanup %v", tombstonesM.fitsChange(h, push), tombstonesM.fitsChange(h, del))
	}
}
