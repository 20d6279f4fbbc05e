package analyst

import (
	"strings"
	"testing"
)

func TestPollSettingNote(t *testing.T) {
	cases := []struct{ change, want string }{
		{"application-prod.yml: spring.kafka.consumer.max-poll-records 100 -> 1000 to drain the backlog faster", "max.poll.records (the records per poll) from 100 to 1000"},
		{"consumer.properties: max.poll.records=2000", "max.poll.records (the records per poll)"},
		{"KAFKA_MAX_POLL_INTERVAL_MS 300000 -> 30000", "max.poll.interval.ms from 300000 to 30000"},
		{"maxPollRecords raised for the reindex", "max.poll.records"},
		{"bump image to 1.9.2", ""},
	}
	for _, c := range cases {
		tr := &Finding{Kind: KindConfigChange, Summary: "config change"}
		tr.setFact("description", c.change)
		h := &Hypothesis{Kind: KindConsumerStall, Subject: "email-dispatcher", Trigger: tr}
		got := pollSettingNote(h)
		if c.want == "" {
			if got != "" {
				t.Errorf("%q: note %q, want none", c.change, got)
			}
			continue
		}
		if !strings.Contains(got, c.want) || !strings.Contains(got, "rebalances") {
			t.Errorf("%q: note %q, want it to contain %q", c.change, got, c.want)
		}
	}
	if got := pollSettingNote(&Hypothesis{Kind: KindBacklog}); got != "" {
		t.Errorf("no trigger: note %q", got)
	}
}
