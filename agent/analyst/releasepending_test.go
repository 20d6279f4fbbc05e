package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReleasePending: a Helm release whose latest revision is pending
// (helm history, helm list, helm status; its storage Secret's labels, or
// Helm 2's ConfigMap) refuses every later deploy ("another operation
// (install/upgrade/rollback) is in progress", from a CI job or Flux's
// helm-controller). What interrupted the operation that set it is read
// from the log of the job that ran helm (its runner pod evicted for a node
// scale-down, the job cancelled) with the autoscaler's log of the node it
// removed: then it has its "why". A pending revision superseded since, a
// history with nothing pending, or a revision pending for less than a
// deploy's timeout with nothing read of an interruption are not it.
func TestReleasePending(t *testing.T) {
	now := time.Date(2026, 2, 10, 10, 5, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	at := func(hhmmss string) time.Time {
		t, _ := time.Parse(time.RFC3339, "2026-02-10T"+hhmmss+"Z")
		return t
	}
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, ExitCode: -1, Lines: strings.Split(strings.Trim(out, "\n"), "\n")}
	}
	// A CI job's log, each line at its own time.
	job := func(name string, lines ...string) LogSet {
		set := LogSet{Source: name, Subject: name, Origin: SrcLogs, Host: true}
		for _, l := range lines {
			ts := at(l[11:19])
			set.Templates = append(set.Templates, tmpl(l, 1, ts, ts))
		}
		return set
	}
	history := cmd("helm history checkout-api -n shop --max 4", `
REVISION    UPDATED                     STATUS             CHART                  APP VERSION    DESCRIPTION
56          Fri Feb  6 14:02:13 2026    superseded         checkout-api-4.30.2    4.30.2         Upgrade complete
57          Mon Feb  9 16:40:11 2026    deployed           checkout-api-4.31.0    4.31.0         Upgrade complete
58          Tue Feb 10 09:12:31 2026    pending-upgrade    checkout-api-4.32.0    4.32.0         Preparing upgrade`)
	list := cmd("helm list -n shop", `
NAME            NAMESPACE    REVISION    UPDATED                                    STATUS             CHART                  APP VERSION
cart-api        shop         31          2026-02-10 09:40:00.412870911 +0000 UTC    deployed           cart-api-2.8.3         2.8.3
checkout-api    shop         58          2026-02-10 09:12:31.004418273 +0000 UTC    pending-upgrade    checkout-api-4.32.0    4.32.0`)
	autoscaler := cmd("kubectl logs -n kube-system deploy/cluster-autoscaler --since=1h", `
I0210 09:12:42.918004       1 nodes.go:126] ip-10-3-44-201.eu-west-1.compute.internal was unneeded for 10m0.581s
I0210 09:12:43.004598       1 actuator.go:213] Scale-down: removing node ip-10-3-44-201.eu-west-1.compute.internal, utilization: {0.18 0.09 0 cpu 0.18}, pods to reschedule: gitlab-runner/runner-ktz9xq2mv-project-412-concurrent-0-m8f3w2kd`)
	runnerConfig := cmd("kubectl get cm gitlab-runner -n gitlab-runner -o jsonpath='{.data.config\\.template\\.toml}'", `
[[runners]]
  [runners.kubernetes]
    [runners.kubernetes.pod_annotations]
      "cluster-autoscaler.kubernetes.io/safe-to-evict" = "true"`)
	evicted := job("gitlab-job-88530-deploy",
		"2026-02-10T09:12:11.870Z Running on runner-ktz9xq2mv-project-412-concurrent-0-m8f3w2kd via gitlab-runner-7c9b5d8f64-pq2xz...",
		"2026-02-10T09:12:14.006Z $ helm upgrade --install checkout-api charts/checkout-api -n shop -f values/prod.yaml --set image.tag=4.32.0 --wait --timeout 10m",
		"2026-02-10T09:13:05.224Z WARNING: Event retrieved from the cluster: Deleting pod for node scale down",
		`2026-02-10T09:13:35.331Z ERROR: Job failed (system failure): pod "gitlab-runner/runner-ktz9xq2mv-project-412-concurrent-0-m8f3w2kd" is disrupted: reason "EvictionByEvictionAPI", message "Eviction API: evicting"`)
	refused := job("gitlab-job-88561-deploy",
		"2026-02-10T09:58:50.114Z $ helm upgrade --install checkout-api charts/checkout-api -n shop -f values/prod.yaml --set image.tag=4.32.0 --wait --timeout 10m",
		"2026-02-10T09:58:51.009Z Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress")
	status := cmd("helm status payments-api -n pay", `
NAME: payments-api
LAST DEPLOYED: Tue Feb 10 09:20:02 2026
NAMESPACE: pay
STATUS: pending-install
REVISION: 1
TEST SUITE: None`)
	cancelled := job("deploy-payments",
		"2026-02-10T09:19:58.000Z Run helm install payments-api ./chart --namespace pay --atomic=false --wait",
		"2026-02-10T09:24:41.000Z ##[error]The operation was canceled.")
	secrets := cmd("kubectl get secret -n search -l owner=helm,name=search-api --show-labels", `
NAME                                TYPE                 DATA   AGE   LABELS
sh.helm.release.v1.search-api.v11   helm.sh/release.v1   1      3d    modifiedAt=1770400000,name=search-api,owner=helm,status=superseded,version=11
sh.helm.release.v1.search-api.v12   helm.sh/release.v1   1      2h    createdAt=1770710000,name=search-api,owner=helm,status=pending-rollback,version=12`)
	secrets.Namespace = "search"
	flux := job("helm-controller",
		"2026-02-10T09:50:00.000Z {\"level\":\"error\",\"msg\":\"Helm upgrade failed for release search/search-api with chart search-api@3.1.0: another operation (install/upgrade/rollback) is in progress\"}")
	tiller := cmd("kubectl get cm -n kube-system -l OWNER=TILLER --show-labels", `
NAME               DATA   AGE   LABELS
billing.v7         1      9d    MODIFIED_AT=1769600000,NAME=billing,OWNER=TILLER,STATUS=DEPLOYED,VERSION=7
billing.v8         1      1h    MODIFIED_AT=1770712000,NAME=billing,OWNER=TILLER,STATUS=PENDING_UPGRADE,VERSION=8`)
	superseded := cmd("helm history checkout-api -n shop", `
REVISION    UPDATED                     STATUS             CHART                  APP VERSION    DESCRIPTION
58          Tue Feb 10 09:12:31 2026    pending-upgrade    checkout-api-4.32.0    4.32.0         Preparing upgrade
59          Tue Feb 10 09:40:31 2026    deployed           checkout-api-4.32.0    4.32.0         Rollback to 57`)
	justStarted := cmd("helm history checkout-api -n shop", `
REVISION    UPDATED                     STATUS             CHART                  APP VERSION    DESCRIPTION
57          Mon Feb  9 16:40:11 2026    deployed           checkout-api-4.31.0    4.31.0         Upgrade complete
58          Tue Feb 10 10:01:31 2026    pending-upgrade    checkout-api-4.32.0    4.32.0         Preparing upgrade`)
	cases := []struct {
		name     string
		commands []evidence.CommandOutput
		logs     []LogSet
		subject  string
		state    string
		why      bool
		says     []string
		recs     []string
	}{
		{"helm history and list, the runner evicted by a node scale-down",
			[]evidence.CommandOutput{history, list, autoscaler, runnerConfig}, []LogSet{evicted, refused},
			"checkout-api", "pending-upgrade", true,
			[]string{"the Helm release checkout-api (namespace shop) is stuck in pending-upgrade at revision 58 (chart checkout-api-4.32.0) since 09:12 UTC",
				"lost its runner pod runner-ktz9xq2mv-project-412-concurrent-0-m8f3w2kd when cluster-autoscaler scaled down node ip-10-3-44-201.eu-west-1.compute.internal",
				"another operation (install/upgrade/rollback) is in progress", "the last deployed revision is 57", "safe to evict"},
			[]string{"helm rollback checkout-api 57 -n shop", "kubectl delete secret sh.helm.release.v1.checkout-api.v58 -n shop", `safe-to-evict: "false"`}},
		{"helm status pending-install, the pipeline cancelled",
			[]evidence.CommandOutput{status}, []LogSet{cancelled},
			"payments-api", "pending-install", true,
			[]string{"stuck in pending-install at revision 1", "the helm install that set it was interrupted", "The operation was canceled"},
			[]string{"helm rollback payments-api"}},
		{"the storage Secret's labels and Flux's refused upgrade, nothing of the interruption",
			[]evidence.CommandOutput{secrets}, []LogSet{flux},
			"search-api", "pending-rollback", false,
			[]string{"stuck in pending-rollback at revision 12", "what ended it was not read", "sh.helm.release.v1.search-api.v12 is labelled status=pending-rollback", "Helm upgrade failed for release search/search-api"},
			[]string{"kubectl delete secret sh.helm.release.v1.search-api.v12 -n search"}},
		{"Helm 2's ConfigMap labels",
			[]evidence.CommandOutput{tiller}, nil,
			"billing", "pending-upgrade", false,
			[]string{"stuck in pending-upgrade at revision 8"}, nil},
		{"a pending revision superseded since", []evidence.CommandOutput{superseded}, []LogSet{refused}, "", "", false, nil, nil},
		{"nothing pending", []evidence.CommandOutput{cmd("helm list -n shop", list.Lines[0]+"\n"+list.Lines[1])}, nil, "", "", false, nil, nil},
		{"pending for minutes with nothing interrupted: may still run", []evidence.CommandOutput{justStarted}, nil, "", "", false, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectReleasePending(&Gathered{Commands: c.commands, Logs: c.logs, Window: w}, nil)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("state") != c.state {
				t.Fatalf("subject %q state %q: %+v", f.Subject, f.fact("state"), f)
			}
			if (f.fact("why") != "") != c.why {
				t.Errorf("why %q, want it %v", f.fact("why"), c.why)
			}
			h := &Hypothesis{Kind: KindReleasePending, Subject: f.Subject, Primary: []*Finding{&f}}
			d := releasePending.describe(h, Scope{})
			for _, s := range c.says {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q: %s", s, d)
				}
			}
			r := &recommender{h: h}
			releasePending.recommend(h, Scope{}, r)
			all := ""
			for _, rec := range r.recs {
				all += rec.Action + "\n"
			}
			for _, s := range c.recs {
				if !strings.Contains(all, s) {
					t.Errorf("recommendations lack %q: %s", s, all)
				}
			}
		})
	}
}

// TestHelmRunRelease: the release a helm command line names, past its
// flags and their values.
func TestHelmRunRelease(t *testing.T) {
	for line, want := range map[string]string{
		"$ helm upgrade --install checkout-api charts/checkout-api -n shop --wait": "checkout-api",
		"helm upgrade -n shop -f values.yaml --install checkout-api ./chart":       "checkout-api",
		"Run helm install payments-api ./chart --namespace pay":                    "payments-api",
		"helm rollback search-api 11":                                              "search-api",
		"helm list -n shop":                                                        "",
	} {
		if got := helmRunRelease(line); got != want {
			t.Errorf("helmRunRelease(%q) = %q, want %q", line, got, want)
		}
	}
}
