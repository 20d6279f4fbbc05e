package bundle_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// helm history and helm list, as helm 3.18 prints them (from the goldens
// of package kubetext): each revision is a deploy change of the release,
// dated by the copy that shows its zone.
const helmTranscript = "$ helm history checkout -n shop\n" +
	"REVISION\tUPDATED                 \tSTATUS    \tCHART         \tAPP VERSION\tDESCRIPTION                                         \n" +
	"2       \tFri Mar 13 16:05:02 2026\tsuperseded\tcheckout-2.4.0\t2.4.0      \tUpgrade complete                                    \n" +
	"3       \tSat Mar 14 10:21:37 2026\tfailed    \tcheckout-2.5.0\t2.5.0      \tUpgrade \"checkout\" failed: context deadline exceeded\n" +
	"4       \tSat Mar 14 09:31:09 2026\tdeployed  \tcheckout-2.4.0\t2.4.0      \tRollback to 2                                       \n" +
	"$ helm history checkout --namespace shop --max 2 -o yaml\n" +
	"- app_version: 2.5.0\n  chart: checkout-2.5.0\n  description: 'Upgrade \"checkout\" failed: context deadline exceeded'\n  revision: 3\n  status: failed\n  updated: \"2026-03-14T10:21:37+01:00\"\n" +
	"$ helm ls -n pay -o json\n" +
	`[{"name":"ledger","namespace":"pay","revision":"7","updated":"2026-03-14 08:02:11.52 +0000 UTC","status":"deployed","chart":"ledger-0.9.1","app_version":"1.8.0"}]` + "\n"

func TestHelmChanges(t *testing.T) {
	ctx := context.Background()
	for _, withFile := range []bool{false, true} {
		files := fstest.MapFS{"session.txt": {Data: []byte(helmTranscript)}}
		if withFile {
			files["changes.json"] = &fstest.MapFile{Data: []byte(`[{"timestamp": "2026-03-14T09:00:00Z", "service": "checkout", "kind": "config", "description": "timeout 5s -> 2s"}]`)}
		}
		b := formsBundle(t, files)
		src := b.Sources(b.CapturedAt)
		if src.Changes == nil {
			t.Fatal("no Changes source")
		}
		list, err := src.Changes.List(ctx, time.Time{}, time.Time{}, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range list {
			got = append(got, c.Timestamp.Format(time.RFC3339)+" "+c.Service+" "+c.Kind+" "+c.Revision+" "+c.Source+" "+c.Description)
		}
		want := []string{
			"2026-03-13T16:05:02Z checkout deploy 2 session.txt:3 helm release shop/checkout revision 2 (chart checkout-2.4.0, app version 2.4.0) superseded: Upgrade complete (helm printed the time without its zone: read as UTC)",
			"2026-03-14T08:02:11Z ledger deploy 7 session.txt:13 helm release pay/ledger revision 7 (chart ledger-0.9.1, app version 1.8.0) deployed",
			"2026-03-14T09:21:37Z checkout deploy 3 session.txt:6 helm release shop/checkout revision 3 (chart checkout-2.5.0, app version 2.5.0) failed: Upgrade \"checkout\" failed: context deadline exceeded",
			"2026-03-14T09:31:09Z checkout deploy 4 session.txt:5 helm release shop/checkout revision 4 (chart checkout-2.4.0, app version 2.4.0) deployed: Rollback to 2 (helm printed the time without its zone: read as UTC)",
		}
		if withFile {
			want = append(want[:2], append([]string{"2026-03-14T09:00:00Z checkout config  changes.json timeout 5s -> 2s"}, want[2:]...)...)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("changes (changes.json %v):\n%s\nwant\n%s", withFile, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// a transcript without helm adds no Changes source
	b := formsBundle(t, fstest.MapFS{"session.txt": {Data: []byte("$ kubectl get ns\nNAME   STATUS   AGE\nshop   Active   3d\n")}})
	if b.Sources(b.CapturedAt).Changes != nil {
		t.Error("a Changes source without changes")
	}
}
