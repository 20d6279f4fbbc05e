package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Objects a reader needs deleted by the bucket's lifecycle rule, read
// from boto3's and the AWS SDK for Java's NoSuchKey, the CLI's lifecycle
// configuration (an empty Filter.Prefix, a legacy top-level Prefix) and
// the server access log's S3.EXPIRE.OBJECT; a rule scoped to another
// prefix or to tags, and no rule, are none.
func TestDetectS3LifecycleExpired(t *testing.T) {
	boto := []string{
		"2026-11-26T06:00:12.875Z ERROR get s3://ledger-inbox/statements/2026/09/27/batch.csv failed: An error occurred (NoSuchKey) when calling the GetObject operation: The specified key does not exist.",
	}
	java := []string{
		"2026-11-26 06:00:12.875 ERROR [main] c.a.l.Loader - read s3://ledger-inbox/statements/2026/09/28/batch.csv: com.amazonaws.services.s3.model.AmazonS3Exception: The specified key does not exist. (Service: Amazon S3; Status Code: 404; Error Code: NoSuchKey; Request ID: 8T2ZQK4W1R9X3M7A)",
	}
	lifecycle := func(rules string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "aws s3api get-bucket-lifecycle-configuration --bucket ledger-inbox", Lines: []string{`{"Rules": [` + rules + `]}`}}
	}
	empty := lifecycle(`{"Expiration": {"Days": 30}, "ID": "expire-tmp", "Filter": {"Prefix": ""}, "Status": "Enabled"}`)
	legacy := lifecycle(`{"Expiration": {"Days": 14}, "ID": "cleanup", "Prefix": "", "Status": "Enabled"}`)
	scoped := lifecycle(`{"Expiration": {"Days": 30}, "ID": "expire-tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled"}`)
	tagged := lifecycle(`{"Expiration": {"Days": 30}, "ID": "expire-scratch", "Filter": {"Tag": {"Key": "scratch", "Value": "true"}}, "Status": "Enabled"}`)
	accessLog := evidence.CommandOutput{Command: "aws s3 cp s3://access-logs/ledger-inbox/2026-11-22-03-15-27 -", Lines: []string{
		"7c2f9e0b1d4a8e6f ledger-inbox [22/Nov/2026:03:14:52 +0000] - AmazonS3 8T2ZQK4W1R9X3M7A S3.EXPIRE.OBJECT statements/2026/10/20/batch.csv - - - - - - - - - - - - - - - -",
	}}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"boto3, an empty prefix filter, the access log", []LogSet{minedSet("ledger-import", false, 0, boto...)}, []evidence.CommandOutput{empty, accessLog}, "ledger-import",
			[]string{"bucket ledger-inbox", "rule expire-tmp", "after 30 days", "whole bucket", "S3.EXPIRE.OBJECT (statements/2026/10/20/batch.csv)"}},
		{"the Java SDK, a legacy prefix", []LogSet{minedSet("ledger-import", false, 0, java...)}, []evidence.CommandOutput{legacy}, "ledger-import", []string{"rule cleanup", "after 14 days", "whole bucket"}},
		{"a rule scoped to another prefix", []LogSet{minedSet("ledger-import", false, 0, boto...)}, []evidence.CommandOutput{scoped}, "", nil},
		{"a rule scoped to tags", []LogSet{minedSet("ledger-import", false, 0, boto...)}, []evidence.CommandOutput{tagged}, "", nil},
		{"no lifecycle read", []LogSet{minedSet("ledger-import", false, 0, boto...)}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectS3LifecycleExpired(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win, Scope: Scope{Service: "ledger-import"}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindS3LifecycleExpired, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
