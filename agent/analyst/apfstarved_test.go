package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestAPFStarved: a client refused with 429 by the API server is explained
// by the priority level that is full (flow control metrics by
// priority_level, the dump_priority_levels table) and the ServiceAccount
// that fills it (dump_requests counted with uniq -c, or its raw rows); a
// 429 from anything but the API server, or a level neither rejecting nor
// queueing, explains nothing.
func TestAPFStarved(t *testing.T) {
	now := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-time.Hour), End: now}
	// rising is a flow control series flat in the baseline that rises to
	// peak in the incident window.
	rising := func(name, level, schema string, peak float64) MetricSet {
		s := evidence.Series{Labels: evidence.Labels{"priority_level": level, "flow_schema": schema}}
		for ts := w.BaselineStart; ts.Before(w.End); ts = ts.Add(time.Minute) {
			v := 0.0
			if !ts.Before(w.Start.Add(5 * time.Minute)) {
				v = peak
			}
			s.Points = append(s.Points, evidence.Point{T: ts, V: v})
		}
		return MetricSet{Name: name, Series: []evidence.Series{s}}
	}
	logOf := func(subject, line string) LogSet {
		return LogSet{Source: subject + "-0", Subject: subject, Namespace: "ops", Templates: []analysis.LogTemplate{{Example: line, FirstSeen: now.Add(-30 * time.Minute), Count: 5, Incident: 5}}}
	}
	levelsTable := evidence.CommandOutput{Command: "kubectl get --raw /debug/api_priority_and_fairness/dump_priority_levels", Lines: []string{
		"PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests",
		"exempt,            0,            true,   false,       0,               0,                 0,                  0,                0,                0",
		"workload-high,     1,            false,  false,       0,               4,                 210733,             0,                0,                0",
		"workload-low,      64,           false,  false,       47,              245,               1894410,            251187,           11204,            0",
	}}
	uniqCounted := evidence.CommandOutput{Command: "kubectl get --raw '/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1' | awk -F', *' '{print $6}' | sort | uniq -c | sort -rn", Lines: []string{
		"    214 system:serviceaccount:finops:pod-cost-exporter",
		"     19 system:serviceaccount:flux-system:kustomize-controller",
		"      6 system:serviceaccount:monitoring:kube-state-metrics",
	}}
	rawRows := evidence.CommandOutput{Command: "kubectl get --raw /debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1", Lines: []string{
		"PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency, UserName, Verb, APIPath",
		"global-default, global-default, 3, 0, system:serviceaccount:batch:report-indexer, 2026-05-04T09:59:58Z, 1, 0, 0s, system:serviceaccount:batch:report-indexer, list, /api/v1/pods",
		"global-default, global-default, 3, 1, system:serviceaccount:batch:report-indexer, 2026-05-04T09:59:58Z, 1, 0, 0s, system:serviceaccount:batch:report-indexer, list, /api/v1/pods",
		"global-default, global-default, 3, 2, system:serviceaccount:batch:report-indexer, 2026-05-04T09:59:59Z, 1, 0, 0s, system:serviceaccount:batch:report-indexer, list, /api/v1/nodes",
		"global-default, global-default, 7, 0, system:serviceaccount:argocd:argocd-application-controller, 2026-05-04T09:59:59Z, 1, 0, 0s, system:serviceaccount:argocd:argocd-application-controller, get, /apis/apps/v1/namespaces/web/deployments/web",
		"workload-low, service-accounts, 1, 0, system:serviceaccount:ops:backup, 2026-05-04T09:59:59Z, 1, 0, 0s, system:serviceaccount:ops:backup, get, /api/v1/namespaces/ops/secrets/x",
	}}
	fluxLine := `{"level":"error","ts":"2026-05-04T09:40:00.118Z","msg":"Reconciler error","controller":"kustomization","controllerGroup":"kustomize.toolkit.fluxcd.io","controllerKind":"Kustomization","Kustomization":{"name":"apps","namespace":"flux-system"},"namespace":"flux-system","name":"apps","reconcileID":"0d7f3b2a-5c1e-4a8b-9f6d-2e4c7a1b3d50","error":"Deployment/search/search-api dry-run failed: the server has received too many requests and has asked us to try again later (get deployments.apps search-api)"}`
	argoLine := `time="2026-05-04T09:41:12Z" level=info msg="Failed to sync: the server has received too many requests and has asked us to try again later (get deployments.apps web)" application=argocd/web`
	operatorLine := `E0504 09:42:01.123456       1 reflector.go:147] failed to list *v1.ConfigMap: Too many requests, please try again later.`

	cases := []struct {
		name      string
		logs      []LogSet
		metrics   []MetricSet
		commands  []evidence.CommandOutput
		service   string
		subject   string // "": no finding
		level     string
		caller    string
		stateOnly bool
	}{
		{"Flux JSON log, dump tables counted with uniq -c",
			[]LogSet{logOf("kustomize-controller", fluxLine)}, nil,
			[]evidence.CommandOutput{levelsTable, uniqCounted}, "kustomize-controller",
			"kustomize-controller", "workload-low", "pod-cost-exporter", false},
		{"Argo CD logfmt, flow control metrics, raw dump_requests rows",
			[]LogSet{logOf("argocd-application-controller", argoLine)},
			[]MetricSet{rising("apiserver_flowcontrol_rejected_requests_total", "global-default", "global-default", 4), rising("apiserver_flowcontrol_current_inqueue_requests", "global-default", "global-default", 50)},
			[]evidence.CommandOutput{rawRows}, "",
			"argocd-application-controller", "global-default", "report-indexer", false},
		{"klog reflector line, metrics only: level named, no load source",
			[]LogSet{logOf("cert-operator", operatorLine)},
			[]MetricSet{rising("apiserver_flowcontrol_rejected_requests_total", "workload-low", "service-accounts", 2)},
			nil, "cert-operator",
			"cert-operator", "workload-low", "", true},
		{"metrics and table without a refused client: the asked service",
			nil, []MetricSet{rising("apiserver_flowcontrol_rejected_requests_total", "workload-low", "service-accounts", 2)},
			[]evidence.CommandOutput{levelsTable, uniqCounted}, "kustomize-controller",
			"kustomize-controller", "workload-low", "pod-cost-exporter", false},
		{"429 from a partner API, no flow control evidence",
			[]LogSet{logOf("checkout", `level=error msg="charge failed" status=429 body="429 Too Many Requests"`)}, nil, nil, "checkout",
			"", "", "", false},
		{"flow control flat, table idle",
			[]LogSet{logOf("kustomize-controller", fluxLine)}, nil,
			[]evidence.CommandOutput{{Command: levelsTable.Command, Lines: []string{levelsTable.Lines[0], "workload-low, 0, true, false, 0, 3, 1894410, 0, 0, 0"}}}, "kustomize-controller",
			"", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Logs: tc.logs, Metrics: tc.metrics, Commands: tc.commands, Window: w, Scope: Scope{Service: tc.service, Namespace: "ops"}}
			f, ok := oneFinding(t, detectAPFStarved(ev, nil), tc.subject != "")
			if !ok {
				return
			}
			if f.Subject != tc.subject || f.fact("priority_level") != tc.level || f.fact("caller") != tc.caller {
				t.Errorf("got subject %q level %q caller %q; want %q %q %q", f.Subject, f.fact("priority_level"), f.fact("caller"), tc.subject, tc.level, tc.caller)
			}
			if (f.fact("state_only") != "") != tc.stateOnly || !tc.stateOnly && f.fact("load_source") == "" {
				t.Errorf("state_only %q load_source %q", f.fact("state_only"), f.fact("load_source"))
			}
			h := &Hypothesis{Kind: KindAPFStarved, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, "Priority and Fairness", tc.level, "429")
			if tc.caller == "" {
				return
			}
			// The caller's deploy triggers it; a change to the victim does not.
			deploy := &Finding{Kind: KindDeploy, Subject: tc.caller, Time: f.Time.Add(-20 * time.Minute)}
			deploy.setFact("description", tc.caller+" 0.4.0 first rollout")
			victimChange := &Finding{Kind: KindConfigChange, Subject: f.Subject, Time: f.Time.Add(-10 * time.Minute)}
			victimChange.setFact("description", "sync interval 10m -> 5m")
			if !fitsMechanism(h, deploy) || fitsMechanism(h, victimChange) {
				t.Errorf("fits: caller's deploy %v, victim's change %v", fitsMechanism(h, deploy), fitsMechanism(h, victimChange))
			}
			if got := nearestChange(h, []*Finding{deploy, victimChange}); got != deploy {
				t.Errorf("trigger %+v, want the caller's deploy", got)
			}
		})
	}
}
