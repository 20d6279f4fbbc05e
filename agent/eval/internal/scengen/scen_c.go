package main

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// evicted marks p as evicted by the kubelet for ephemeral storage.
func evicted(p *corev1.Pod, at time.Time, msg string) {
	p.Status.Phase = corev1.PodFailed
	p.Status.Reason, p.Status.Message = "Evicted", msg
	cs := &p.Status.ContainerStatuses[0]
	started := cs.State.Running.StartedAt
	cs.Ready, cs.Started = false, ptr(false)
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown",
		Message: "The container could not be located when the pod was terminated", StartedAt: started, FinishedAt: mt(at)}}
	setPodConditions(p, p.Status.StartTime.Time, at)
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "TerminationByKubelet", Message: "The node was low on resource: ephemeral-storage. ", LastTransitionTime: mt(at)})
}

// scenDiskPressure: a node fills its disk (thumbnailer scratch files); the
// kubelet reports DiskPressure and evicts pods.
func scenDiskPressure() (*World, string, *Scenario) {
	w := newWorld("node-disk-pressure", mustTime("2026-03-11T03:18:00Z"), 707)
	nodes := w.baseCluster("eu-west-1", "4")
	bad := w.Nodes[1]
	pressure := w.ago(26 * time.Minute)
	bad.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/disk-pressure", Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr(mt(pressure))}}
	for i := range bad.Status.Conditions {
		if bad.Status.Conditions[i].Type == corev1.NodeDiskPressure {
			c := &bad.Status.Conditions[i]
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure", mt(pressure)
		}
	}
	a := w.addApp(AppSpec{NS: "media", Name: "thumbnailer", Replicas: 3, NewPods: 5, Nodes: []string{nodes[1], nodes[1], nodes[0], nodes[2], nodes[0]}, Team: "media", MemLim: "1Gi", MemReq: "512Mi",
		Revs: []Rev{{Image: "ghcr.io/acme/thumbnailer:3.4.1", At: w.ago(11 * 24 * time.Hour)}}, ProbePath: "/healthz"})
	rec := w.addApp(AppSpec{NS: "media", Name: "media-api", Replicas: 2, Nodes: nodes, Team: "media", ProbePath: "/healthz",
		Revs: []Rev{{Image: "ghcr.io/acme/media-api:1.8.0", At: w.ago(5 * 24 * time.Hour)}}})
	w.hpaNoise("media", "media-api", w.ago(49*time.Minute))
	msg := func(used string) string {
		return "The node was low on resource: ephemeral-storage. Threshold quantity: 4281126156, available: 3921408Ki. Container thumbnailer was using " + used + ", request is 0, has larger consumption of ephemeral-storage. "
	}
	rs := a.RSs[0]
	for i, p := range a.Pods[:2] {
		at := pressure.Add(time.Duration(40+i*95) * time.Second)
		evicted(p, at, msg([]string{"31457280Ki", "8921344Ki"}[i]))
		w.podEvent(p, "Warning", "Evicted", msg([]string{"31457280Ki", "8921344Ki"}[i]), at, time.Time{}, 1)
		w.podEvent(p, "Normal", "Killing", "Stopping container thumbnailer", at.Add(time.Second), time.Time{}, 1)
	}
	for i, p := range a.Pods[3:] {
		t := pressure.Add(time.Duration(42+i*95) * time.Second)
		p.Status.StartTime = ptr(mt(t))
		p.CreationTimestamp = mt(t.Add(-time.Second))
		p.Status.ContainerStatuses[0].State.Running.StartedAt = mt(t.Add(3 * time.Second))
		setPodConditions(p, t, t.Add(14*time.Second))
		w.startupEvents(p)
		w.rsCreateEvent(rs, p)
	}
	w.event(evSpec{NS: "default", Kind: "Node", Name: bad.Name, Type: "Warning", Reason: "FreeDiskSpaceFailed",
		Msg:   "Failed to garbage collect required amount of images. Attempted to free 9663676416 bytes, but only found 0 bytes eligible to free.",
		First: pressure.Add(-4 * time.Minute), Last: w.ago(2 * time.Minute), Count: 6, Component: "kubelet", Host: bad.Name})
	w.event(evSpec{NS: "default", Kind: "Node", Name: bad.Name, Reason: "NodeHasDiskPressure", Msg: "Node " + bad.Name + " status is now: NodeHasDiskPressure",
		First: pressure, Component: "kubelet", Host: bad.Name})
	w.event(evSpec{NS: "default", Kind: "Node", Name: bad.Name, Type: "Warning", Reason: "EvictionThresholdMet", Msg: "Attempting to reclaim ephemeral-storage",
		First: pressure.Add(10 * time.Second), Last: w.ago(70 * time.Second), Count: 9, Component: "kubelet", Host: bad.Name})
	for _, p := range a.Pods {
		l := w.lines()
		run := p.Status.ContainerStatuses[0]
		from := w.ago(70 * time.Minute)
		to := w.Now
		if run.State.Terminated != nil {
			to = run.State.Terminated.FinishedAt.Time
		} else if run.State.Running.StartedAt.After(from) {
			from = run.State.Running.StartedAt.Time
			w.startup(l, styleText, "thumbnailer", "3.4.1", from, "scratch dir /tmp/work (emptyDir, no size limit)")
		}
		onBad := p.Spec.NodeName == bad.Name
		l.Every(from.Add(2*time.Second), to, 15*time.Second, func(t time.Time, i int) string {
			if onBad && t.After(pressure.Add(-6*time.Minute)) && i%2 == 0 {
				return fmt.Sprintf("%s ERROR [thumbnailer] render failed job=%s: write /tmp/work/%s.png: no space left on device", ts(t), w.hex(12), w.hex(12))
			}
			return fmt.Sprintf("%s INFO  [thumbnailer] rendered job=%s sizes=3 took=%dms scratch_bytes=%d", ts(t), w.hex(12), 300+w.R.IntN(900), 40_000_000+w.R.IntN(90_000_000))
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(rec, styleJSON, "1.8.0", 60*time.Second, []string{"/v1/media/{id}", "POST /v1/uploads"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("node_filesystem_avail_bytes", "gauge", "Filesystem space available to non-root users in bytes.")
	for i, n := range w.Nodes {
		inst := n.Status.Addresses[0].Address + ":9100"
		lbl := fmt.Sprintf(`device="/dev/nvme0n1p1",fstype="xfs",instance=%q,job="node-exporter",mountpoint="/"`, inst)
		if n == bad {
			o.Gauge(lbl, 0.003, func(t time.Time) float64 {
				f := float64(t.Sub(w.ago(2*time.Hour))) / float64(2*time.Hour)
				v := 52e9 - 49e9*math.Pow(f, 1.6)
				if t.After(pressure.Add(2 * time.Minute)) {
					v = 4.4e9 + float64(t.Unix()%300)*2e6
				}
				return v
			})
		} else {
			o.Gauge(lbl, 0.002, constant(float64(48+i*3)*1e9))
		}
	}
	o.Family("node_filesystem_size_bytes", "gauge", "Filesystem size in bytes.")
	for _, n := range w.Nodes {
		o.GaugeExact(fmt.Sprintf(`device="/dev/nvme0n1p1",fstype="xfs",instance=%q,job="node-exporter",mountpoint="/"`, n.Status.Addresses[0].Address+":9100"), constant(85_886_742_528))
	}
	o.Family("kubelet_evictions", "counter", "Cumulative number of pod evictions by eviction signal.")
	o.CounterSteps(fmt.Sprintf(`eviction_signal="nodefs.available",node=%q`, bad.Name), 0, []time.Time{pressure.Add(40 * time.Second), pressure.Add(135 * time.Second)})
	o.Family("kube_node_status_condition", "gauge", "The condition of a cluster node.")
	o.GaugeExact(fmt.Sprintf(`condition="DiskPressure",node=%q,status="true"`, bad.Name), step(pressure, 0, 1, 0))
	o.GaugeExact(fmt.Sprintf(`condition="DiskPressure",node=%q,status="true"`, w.Nodes[0].Name), constant(0))
	o.Family("thumbnailer_jobs", "counter", "Thumbnail jobs by result.")
	o.Counter(`namespace="media",service="thumbnailer",result="ok"`, 4_400_120, step(pressure, 6.1, 4.2, 0))
	o.Counter(`namespace="media",service="thumbnailer",result="error"`, 3_120, step(pressure.Add(-6*time.Minute), 0.01, 1.1, 0))
	w.nodeCPU(o, 0.33)
	o.Save("nodes")
	w.changes(
		chg(w.ago(11*24*time.Hour), "thumbnailer", "deploy", "thumbnailer 3.4.1: AVIF output", "3.4.1", "ci"),
		chg(w.ago(5*24*time.Hour), "media-api", "deploy", "media-api 1.8.0", "1.8.0", "ci"),
	)
	sc := &Scenario{Title: "node disk pressure evicts thumbnailer pods", Request: ScenarioRequest{AgentName: "planner",
		Message: "Thumbnail jobs are failing and some thumbnailer pods were evicted.", Context: map[string]string{"service": "thumbnailer", "namespace": "media"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"disk pressure", "diskpressure", "ephemeral-storage", "ephemeral storage", "disk"}, {"evict"}},
			AffectedSystemsAll: []string{"thumbnailer"}, MinEvidence: 2, MinTimeline: 2, ToolsUsedAny: []string{"list_nodes", "get_events", "describe_pod"}}}
	return w, "node " + bad.Name + " under DiskPressure; thumbnailer pods evicted", sc
}

// scenPending: report-builder scaled 3 -> 12 for month-end; half the pods
// cannot be scheduled (Insufficient cpu).
func scenPending() (*World, string, *Scenario) {
	w := newWorld("pending-insufficient-cpu", mustTime("2026-03-31T23:40:00Z"), 808)
	nodes := w.baseCluster("us-east-2", "4")
	at := w.ago(22 * time.Minute)
	a := w.addApp(AppSpec{NS: "analytics", Name: "report-builder", Replicas: 12, CPUReq: "1500m", MemReq: "1Gi", MemLim: "2Gi", Team: "data", NoService: true,
		Nodes: []string{nodes[0], nodes[1], nodes[2], nodes[0], nodes[1], nodes[2]}, NewPods: 12,
		Revs: []Rev{{Image: "ghcr.io/acme/report-builder:7.0.3", At: w.ago(13 * 24 * time.Hour)}}})
	dash := w.addApp(AppSpec{NS: "analytics", Name: "dashboard-api", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "data",
		Revs: []Rev{{Image: "ghcr.io/acme/dashboard-api:2.2.0", At: w.ago(6 * 24 * time.Hour)}}})
	w.completedJob("analytics", "etl-daily-29584080", nodes[2], w.ago(58*time.Minute))
	w.scalingEvent(a, a.RSs[0], at, fmt.Sprintf("Scaled up replica set %s from 3 to 12", a.RSs[0].Name))
	unsched := "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	for i, p := range a.Pods {
		if i < 3 {
			continue
		}
		t := at.Add(time.Duration(i) * 100 * time.Millisecond)
		p.CreationTimestamp = mt(t)
		w.rsCreateEvent(a.RSs[0], p)
		if i < 6 {
			p.Status.StartTime = ptr(mt(t.Add(time.Second)))
			p.Status.ContainerStatuses[0].State.Running.StartedAt = mt(t.Add(4 * time.Second))
			setPodConditions(p, t.Add(time.Second), t.Add(12*time.Second))
			w.startupEvents(p)
			continue
		}
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: unsched, LastTransitionTime: mt(t.Add(time.Second))}}}
		w.podEvent(p, "Warning", "FailedScheduling", unsched, t.Add(time.Second), w.ago(time.Duration(20+i*7)*time.Second), 5+int32(i))
		w.event(evSpec{NS: "analytics", Kind: "Pod", Name: p.Name, UID: p.UID, Reason: "NotTriggerScaleUp", First: t.Add(11 * time.Second), Last: w.ago(time.Duration(40+i*3) * time.Second), Count: 12,
			Msg: "pod didn't trigger scale-up: 1 max node group size reached", Component: "cluster-autoscaler"})
		w.podLog(p, "", fmt.Sprintf("Request log error: pod %q does not have a host assigned\n", p.Name))
	}
	for _, p := range a.Pods[:6] {
		l := w.lines()
		st := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		from := st
		if from.Before(w.ago(70 * time.Minute)) {
			from = w.ago(70 * time.Minute)
		} else {
			w.startup(l, styleLogfmt, "report-builder", "7.0.3", st, "worker pool size=6")
		}
		l.Every(from.Add(time.Second), w.Now, 40*time.Second, func(t time.Time, i int) string {
			return msgLine(styleLogfmt, t, "INFO", "report-builder", fmt.Sprintf("report rendered tenant=t-%04d period=2026-03 pages=%d took=%.1fs", w.R.IntN(3000), 3+w.R.IntN(60), 2+w.R.ExpFloat64()*8))
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(dash, styleJSON, "2.2.0", 60*time.Second, []string{"/v1/dashboards/{id}", "/v1/widgets?dash={id}"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("kube_deployment_spec_replicas", "gauge", "Number of desired pods for a deployment.")
	o.GaugeExact(`namespace="analytics",deployment="report-builder"`, step(at, 3, 12, 0))
	o.GaugeExact(`namespace="analytics",deployment="dashboard-api"`, constant(2))
	o.Family("kube_deployment_status_replicas_available", "gauge", "The number of available replicas per deployment.")
	o.GaugeExact(`namespace="analytics",deployment="report-builder"`, step(at.Add(30*time.Second), 3, 6, 0))
	o.GaugeExact(`namespace="analytics",deployment="dashboard-api"`, constant(2))
	o.Family("kube_pod_status_unschedulable", "gauge", "Whether a pod is unschedulable, summed per namespace.")
	o.GaugeExact(`namespace="analytics"`, step(at, 0, 6, 0))
	o.Family("report_queue_depth", "gauge", "Reports waiting to be rendered.")
	o.Gauge(`namespace="analytics",service="report-builder"`, 0.05, func(t time.Time) float64 {
		if t.Before(at.Add(-30 * time.Minute)) {
			return 40
		}
		return 40 + 3.5*float64(t.Sub(at.Add(-30*time.Minute)))/float64(time.Minute)
	})
	w.nodeCPU(o, 0.74)
	o.Save("analytics")
	w.changes(
		chg(w.ago(13*24*time.Hour), "report-builder", "deploy", "report-builder 7.0.3", "7.0.3", "ci"),
		chg(at, "report-builder", "config", "scale report-builder from 3 to 12 replicas for month-end close (kubectl scale)", "", "olga.k"),
	)
	sc := &Scenario{Title: "report-builder pods Pending after scale-up: insufficient cpu", Request: ScenarioRequest{AgentName: "k8s_agent",
		Message: "We scaled report-builder for month-end but reports are still slow and half the pods are not running.", Context: map[string]string{"service": "report-builder", "namespace": "analytics"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"insufficient cpu", "cpu"}, {"pending", "unschedulable", "schedul"}},
			AffectedSystemsAll: []string{"report-builder"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"list_pods", "describe_pod", "get_events", "list_nodes"}}}
	return w, "analytics/report-builder: 6 of 12 pods unschedulable (Insufficient cpu)", sc
}

// scenReadiness: query-gateway v2.0.0 listens on 9090 but the readiness
// probe still checks 8080; no pod becomes ready and the Service has no
// ready endpoints.
func scenReadiness() (*World, string, *Scenario) {
	w := newWorld("readiness-probe-failing", mustTime("2026-03-18T13:55:00Z"), 909)
	nodes := w.baseCluster("eu-north-1", "4")
	at := w.ago(33 * time.Minute)
	w.ns("search").NewEvents = true
	a := w.addApp(AppSpec{NS: "search", Name: "query-gateway", Replicas: 3, Nodes: nodes, ProbePath: "/ready", Team: "search",
		Env:  []corev1.EnvVar{{Name: "LISTEN_ADDR", Value: ":9090"}},
		Revs: []Rev{{Image: "ghcr.io/acme/query-gateway:1.9.4", At: w.ago(17 * 24 * time.Hour)}, {Image: "ghcr.io/acme/query-gateway:2.0.0", At: at, Cause: "helm upgrade query-gateway 2.0.0"}}})
	a.Dep.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	w.Stuck[a.Dep.UID] = true
	w.UnavailableSince[a.Dep.UID] = at
	web := w.addApp(AppSpec{NS: "search", Name: "search-web", Replicas: 2, Nodes: nodes, Port: 3000, ProbePath: "/", Team: "search",
		Revs: []Rev{{Image: "ghcr.io/acme/search-web:5.3.0", At: w.ago(9 * 24 * time.Hour)}}})
	es := w.addApp(AppSpec{NS: "search", Name: "indexer", Replicas: 1, Nodes: nodes, NoService: true, Team: "search",
		Revs: []Rev{{Image: "ghcr.io/acme/indexer:0.14.2", At: w.ago(21 * 24 * time.Hour)}}})
	w.resolvedScheduling(es, w.ago(44*time.Minute))
	w.scalingEvent(a, a.RSs[0], at, fmt.Sprintf("Scaled down replica set %s from 3 to 0", a.RSs[0].Name))
	w.scalingEvent(a, a.RSs[1], at.Add(31*time.Second), fmt.Sprintf("Scaled up replica set %s from 0 to 3", a.RSs[1].Name))
	for i, p := range a.Pods {
		t := at.Add(time.Duration(31+i) * time.Second)
		p.CreationTimestamp, p.Status.StartTime = mt(t), ptr(mt(t))
		cs := &p.Status.ContainerStatuses[0]
		cs.State.Running.StartedAt = mt(t.Add(3 * time.Second))
		cs.Ready = false
		setPodConditions(p, t, t)
		w.startupEvents(p)
		w.rsCreateEvent(a.RSs[1], p)
		w.podEvent(p, "Warning", "Unhealthy", fmt.Sprintf("Readiness probe failed: Get \"http://%s:8080/ready\": dial tcp %s:8080: connect: connection refused", p.Status.PodIP, p.Status.PodIP),
			t.Add(9*time.Second), w.ago(time.Duration(2+i*3)*time.Second), 190+int32(w.R.IntN(15)))
		l := w.lines()
		st := cs.State.Running.StartedAt.Time
		l.Add(st, msgLine(styleJSON, st, "INFO", "query-gateway", "starting query-gateway version=2.0.0"))
		l.Add(st.Add(300*time.Millisecond), msgLine(styleJSON, st.Add(300*time.Millisecond), "INFO", "query-gateway", "connected to opensearch cluster=search-prod nodes=3 status=green"))
		l.Add(st.Add(400*time.Millisecond), msgLine(styleJSON, st.Add(400*time.Millisecond), "INFO", "query-gateway", "http server listening on :9090 (LISTEN_ADDR)"))
		l.Every(st.Add(time.Minute), w.Now, 5*time.Minute, func(t time.Time, i int) string {
			return msgLine(styleJSON, t, "INFO", "query-gateway", fmt.Sprintf("cache refresh done synonyms=%d", 1200+w.R.IntN(30)))
		})
		w.podLog(p, "", l.String())
	}
	for _, p := range web.Pods {
		l := w.lines()
		l.Every(w.ago(70*time.Minute), w.Now, 25*time.Second, func(t time.Time, i int) string {
			if t.After(at) {
				return msgLine(styleLogfmt, t, "ERROR", "search-web", "search request failed: upstream query-gateway.search.svc.cluster.local:80: dial tcp 172.20.14.9:80: connect: connection refused")
			}
			return reqLine(styleLogfmt, t, "search-web", "GET", "/search?q="+w.pick("boots", "tent", "kayak", "lamp"), 200, 30+w.R.ExpFloat64()*30, w.reqID())
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(es, styleLogfmt, "0.14.2", 90*time.Second, []string{"/internal/reindex/status"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("kube_endpoint_address", "gauge", "Ready endpoint addresses per service.")
	o.GaugeExact(`namespace="search",endpoint="query-gateway",ready="true"`, step(at, 3, 0, 0))
	o.GaugeExact(`namespace="search",endpoint="search-web",ready="true"`, constant(2))
	o.Family("kube_pod_status_ready", "gauge", "Describes whether the pod is ready to serve requests.")
	for _, p := range a.Pods {
		o.GaugeExact(fmt.Sprintf(`namespace="search",pod=%q,condition="true"`, p.Name), between(p.CreationTimestamp.Time, w.Now.Add(time.Minute), constant(0)))
	}
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="search",service="search-web",code="200"`, 12_009_554, step(at, 33, 9, 0))
	o.Counter(`namespace="search",service="search-web",code="503"`, 2_114, step(at, 0.01, 24, 0))
	w.goroutines(o, "indexer", "search-web")
	w.nodeCPU(o, 0.25)
	o.Save("search")
	w.changes(
		chg(w.ago(9*24*time.Hour), "search-web", "deploy", "search-web 5.3.0", "5.3.0", "ci"),
		chg(at, "query-gateway", "deploy", "query-gateway 2.0.0: move to LISTEN_ADDR=:9090 (PR #412)", "2.0.0", "helm"),
	)
	sc := &Scenario{Title: "query-gateway readiness probe failing: Service without ready endpoints", Request: ScenarioRequest{AgentName: "planner",
		Message: "Search is down: search-web says connection refused to query-gateway.", Context: map[string]string{"service": "query-gateway", "namespace": "search"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"readiness probe", "readiness"}, {"endpoint", "not ready", "unready", "port"}},
			AffectedSystemsAll: []string{"query-gateway"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"list_services", "describe_pod", "get_events"}}}
	return w, "search/query-gateway pods never ready: readiness probe on 8080, app on 9090", sc
}

// scenFlag: turning on enable_dynamic_discounts breaks pricing-engine (VMs,
// no Kubernetes): host logs and Prometheus only.
func scenFlag() (*World, string, *Scenario) {
	w := newWorld("feature-flag-errors", mustTime("2026-03-20T15:10:00Z"), 1010)
	flip := w.ago(26 * time.Minute)
	for h, host := range []string{"pricing-1", "pricing-2"} {
		l := w.lines()
		l.Every(w.ago(95*time.Minute), w.Now, 20*time.Second, func(t time.Time, i int) string {
			sku := fmt.Sprintf("SKU-%06d", w.R.IntN(999999))
			if t.After(flip) && w.R.Float64() < 0.4 {
				return fmt.Sprintf("%s ERROR [pricing] %s discount rule evaluation failed: rule=tiered_bundle_v2 sku=%s err=\"runtime error: integer divide by zero\" flag.enable_dynamic_discounts=true", ts(t), host, sku)
			}
			if i%40 == 0 {
				return fmt.Sprintf("%s INFO  [flags] %s flag cache refreshed flags=37 source=launchdarkly", ts(t), host)
			}
			return fmt.Sprintf("%s INFO  [pricing] %s price computed sku=%s base=%.2f final=%.2f took=%dms", ts(t), host, sku, 5+w.R.Float64()*200, 5+w.R.Float64()*190, 2+w.R.IntN(12))
		})
		l.Add(flip.Add(time.Duration(3+h)*time.Second), fmt.Sprintf("%s INFO  [flags] %s flag changed enable_dynamic_discounts: false -> true (rollout 100%%)", ts(flip.Add(time.Duration(3+h)*time.Second)), host))
		w.Files["logs/"+host+".log"] = []byte(l.String())
	}
	ng := w.lines()
	ng.Every(w.ago(95*time.Minute), w.Now, 15*time.Second, func(t time.Time, i int) string {
		code := 200
		if t.After(flip) && w.R.Float64() < 0.38 {
			code = 500
		}
		return fmt.Sprintf("%s 10.20.%d.%d \"GET /v1/price?sku=SKU-%06d HTTP/1.1\" %d %d %.3f \"pricing-%d\"", t.UTC().Format(time.RFC3339), w.R.IntN(8), w.R.IntN(250), w.R.IntN(999999), code, 180+w.R.IntN(200), 0.002+w.R.ExpFloat64()*0.01, 1+w.R.IntN(2))
	})
	w.Files["logs/nginx-access.log"] = []byte(ng.String())
	cron := w.lines()
	cron.Every(w.ago(95*time.Minute), w.Now, 10*time.Minute, func(t time.Time, i int) string {
		return fmt.Sprintf("%s INFO  [inventory-sync] synced %d SKUs from ERP in %.1fs", ts(t), 2000+w.R.IntN(400), 20+w.R.Float64()*10)
	})
	w.Files["logs/inventory-sync.log"] = []byte(cron.String())

	o := w.om(2*time.Hour, time.Minute)
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	for _, h := range []string{"pricing-1", "pricing-2"} {
		o.Counter(fmt.Sprintf(`instance="%s:9464",job="pricing-engine",code="200"`, h), 20_000_000, step(flip, 75, 47, 0))
		o.Counter(fmt.Sprintf(`instance="%s:9464",job="pricing-engine",code="500"`, h), 880, step(flip, 0.02, 29, 0))
	}
	o.Family("pricing_discount_evaluations", "counter", "Discount rule evaluations by result.")
	o.Counter(`job="pricing-engine",rule="tiered_bundle_v2",result="error"`, 0, step(flip, 0, 58, 0))
	o.Counter(`job="pricing-engine",rule="tiered_bundle_v2",result="ok"`, 0, step(flip, 0, 12, 0))
	o.Family("feature_flag_state", "gauge", "Current value of a feature flag as seen by the service (1 on).")
	o.GaugeExact(`job="pricing-engine",flag="enable_dynamic_discounts"`, step(flip, 0, 1, 0))
	o.GaugeExact(`job="pricing-engine",flag="new_footer"`, constant(1))
	o.Family("node_load1", "gauge", "1m load average.")
	o.Gauge(`instance="pricing-1:9100",job="node"`, 0.1, constant(0.9))
	o.Gauge(`instance="pricing-2:9100",job="node"`, 0.1, constant(1.1))
	o.Gauge(`instance="erp-sync-1:9100",job="node"`, 0.2, constant(0.3))
	o.Save("pricing")
	w.changes(
		chg(w.ago(5*time.Hour), "inventory-sync", "deploy", "inventory-sync 2.3.0: retry ERP timeouts", "2.3.0", "ci"),
		chg(w.ago(3*time.Hour), "storefront", "feature_flag", "new_footer: on for 100%", "", "maya.r"),
		chg(flip, "pricing-engine", "feature_flag", "enable_dynamic_discounts: false -> true for 100% of traffic (LaunchDarkly)", "", "tom.becker"),
	)
	sc := &Scenario{Title: "pricing-engine errors after the enable_dynamic_discounts flag flip", Request: ScenarioRequest{AgentName: "metrics_agent",
		Message: "Checkout prices fail intermittently with 500s from pricing-engine.", Context: map[string]string{"service": "pricing-engine"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"feature flag", "feature_flag", "flag", "enable_dynamic_discounts"}},
			AffectedSystemsAll: []string{"pricing-engine"}, MinEvidence: 2, MinTimeline: 2, ToolsUsedAny: []string{"list_changes", "search_logs", "get_log_signatures"}}}
	return w, "pricing-engine (VMs) throws divide-by-zero since the enable_dynamic_discounts flag was turned on", sc
}

// scenDependency: payments-api was scaled to 0 by a maintenance script; the
// caller order-service gets connection refused.
func scenDependency() (*World, string, *Scenario) {
	w := newWorld("dependency-down", mustTime("2026-03-23T10:05:00Z"), 1111)
	nodes := w.baseCluster("us-east-1", "4")
	down := w.ago(19 * time.Minute)
	ord := w.addApp(AppSpec{NS: "commerce", Name: "order-service", Replicas: 3, Nodes: nodes, ProbePath: "/healthz", Team: "commerce",
		Env:  []corev1.EnvVar{{Name: "PAYMENTS_URL", Value: "https://payments-api.payments.svc.cluster.local:8443"}},
		Revs: []Rev{{Image: "ghcr.io/acme/order-service:3.12.0", At: w.ago(6 * 24 * time.Hour)}}})
	pay := w.addApp(AppSpec{NS: "payments", Name: "payments-api", Replicas: 0, Port: 8443, SvcPort: 8443, Nodes: nodes, ProbePath: "/healthz", Team: "payments",
		Revs: []Rev{{Image: "ghcr.io/acme/payments-api:5.0.2", At: w.ago(14 * 24 * time.Hour)}}})
	pw := w.addApp(AppSpec{NS: "payments", Name: "payments-worker", Replicas: 2, Nodes: nodes, NoService: true, Team: "payments",
		Revs: []Rev{{Image: "ghcr.io/acme/payments-worker:5.0.2", At: w.ago(14 * 24 * time.Hour)}}})
	cart := w.addApp(AppSpec{NS: "commerce", Name: "cart", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "commerce",
		Revs: []Rev{{Image: "ghcr.io/acme/cart:1.40.0", At: w.ago(2 * 24 * time.Hour)}}})
	w.completedJob("commerce", "abandoned-carts-29573400", nodes[1], w.ago(53*time.Minute))
	pay.Dep.Generation++
	w.scalingEvent(pay, pay.RSs[0], down, fmt.Sprintf("Scaled down replica set %s from 3 to 0", pay.RSs[0].Name))
	for i := range 3 {
		name := pay.RSs[0].Name + "-" + w.suffix(5)
		w.event(evSpec{NS: "payments", Kind: "Pod", Name: name, UID: w.uid(), FieldPath: "spec.containers{payments-api}", Reason: "Killing", Msg: "Stopping container payments-api",
			First: down.Add(time.Duration(i) * 200 * time.Millisecond), Component: "kubelet", Host: nodes[i]})
		w.event(evSpec{NS: "payments", Kind: "ReplicaSet", Name: pay.RSs[0].Name, UID: pay.RSs[0].UID, Reason: "SuccessfulDelete", Msg: "Deleted pod: " + name,
			First: down.Add(time.Duration(i) * 200 * time.Millisecond), Component: "replicaset-controller"})
	}
	svcIP := pay.Svc.Spec.ClusterIP
	for _, p := range ord.Pods {
		l := w.lines()
		l.Every(w.ago(70*time.Minute), w.Now, 15*time.Second, func(t time.Time, i int) string {
			id := fmt.Sprintf("ord_%s", w.hex(10))
			if t.After(down) && i%2 == 0 {
				return fmt.Sprintf(`{"ts":%q,"level":"error","service":"order-service","msg":"payment authorization failed","order_id":%q,"error":"Post \"https://payments-api.payments.svc.cluster.local:8443/v1/authorizations\": dial tcp %s:8443: connect: connection refused"}`, ts(t), id, svcIP)
			}
			if t.After(down) {
				return reqLine(styleJSON, t, "order-service", "POST", "/v1/orders", 502, 3+w.R.Float64()*4, w.reqID())
			}
			return reqLine(styleJSON, t, "order-service", w.pick("POST", "GET"), "/v1/orders", 201, 90+w.R.ExpFloat64()*60, w.reqID())
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(pw, styleLogfmt, "5.0.2", 60*time.Second, []string{"/internal/settlements/poll"})
	w.healthyLogs(cart, styleJSON, "1.40.0", 45*time.Second, []string{"/v1/cart/{id}", "POST /v1/cart/{id}/items"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("kube_deployment_spec_replicas", "gauge", "Number of desired pods for a deployment.")
	o.GaugeExact(`namespace="payments",deployment="payments-api"`, step(down, 3, 0, 0))
	o.GaugeExact(`namespace="commerce",deployment="order-service"`, constant(3))
	o.Family("up", "gauge", "Whether the scrape target is up.")
	for i := range 3 {
		o.GaugeExact(fmt.Sprintf(`job="payments-api",instance="10.42.%d.%d:8443"`, i, 20+i*7), between(w.ago(3*time.Hour), down.Add(time.Minute), constant(1)))
	}
	o.GaugeExact(`job="order-service"`, constant(1))
	o.GaugeExact(`job="cart"`, constant(1))
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="commerce",service="order-service",code="201"`, 6_120_883, step(down, 11, 0.2, 0))
	o.Counter(`namespace="commerce",service="order-service",code="502"`, 410, step(down, 0.01, 10.5, 0))
	o.Counter(`namespace="payments",service="payments-api",code="200"`, 8_002_118, between(w.ago(3*time.Hour), down.Add(time.Minute), constant(11)))
	o.Counter(`namespace="commerce",service="cart",code="200"`, 18_400_201, diurnal(35, 0.1))
	w.nodeCPU(o, 0.29)
	o.Save("commerce")
	w.changes(
		chg(w.ago(2*24*time.Hour), "cart", "deploy", "cart 1.40.0", "1.40.0", "ci"),
		chg(down, "payments-api", "infra", "maintenance script drain-payments.sh ran against prod context: kubectl scale deployment/payments-api --replicas=0 (meant for payments-staging)", "", "ops-automation"),
	)
	sc := &Scenario{Title: "order-service failing: downstream payments-api is down (connection refused)", Request: ScenarioRequest{AgentName: "planner",
		Message: "order-service is returning 502 on checkout.", Context: map[string]string{"service": "order-service", "namespace": "commerce"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"payments-api"}, {"connection refused", "down", "unavailable", "unreachable", "scaled to 0", "zero replicas", "no endpoints", "no ready endpoints"}},
			AffectedSystemsAll: []string{"order-service", "payments-api"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"get_pod_logs", "list_deployments", "list_services", "get_events"}}}
	return w, "commerce/order-service cannot reach payments/payments-api (scaled to 0)", sc
}

// scenLambda: image-resize's reserved concurrency was cut to 5; synchronous
// invokes from upload-handler are throttled (CloudWatch only).
func scenLambda() (*World, string, *Scenario) {
	w := newWorld("lambda-throttling", mustTime("2026-03-26T21:15:00Z"), 1212)
	cut := w.ago(34 * time.Minute)
	start := w.ago(2 * time.Hour)
	up := w.lines()
	resize := w.lines()
	report := w.lines()
	up.Every(start, w.Now, 9*time.Second, func(t time.Time, i int) string {
		rid := w.reqID()
		if t.After(cut) && w.R.Float64() < 0.55 {
			return fmt.Sprintf("%s\t%s\tERROR\tInvoke Error \t{\"errorType\":\"TooManyRequestsException\",\"errorMessage\":\"Rate Exceeded.\",\"name\":\"TooManyRequestsException\",\"$fault\":\"client\",\"$metadata\":{\"httpStatusCode\":429,\"requestId\":\"%s\",\"attempts\":3},\"Reason\":\"ReservedFunctionConcurrentInvocationLimitExceeded\",\"Type\":\"User\"}", ts(t), rid, w.reqID())
		}
		if i%50 == 0 {
			return fmt.Sprintf("REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: 512 MB\tMax Memory Used: %d MB", rid, 900+w.R.Float64()*300, 1000+w.R.IntN(300), 110+w.R.IntN(10))
		}
		return fmt.Sprintf("%s\t%s\tINFO\tupload stored key=uploads/%s.jpg size=%d resized=true", ts(t), rid, w.hex(16), 200_000+w.R.IntN(4_000_000))
	})
	resize.Every(start, w.Now, 12*time.Second, func(t time.Time, i int) string {
		if t.After(cut) && w.R.Float64() < 0.7 {
			return ""
		}
		rid := w.reqID()
		return fmt.Sprintf("REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: 1024 MB\tMax Memory Used: %d MB", rid, 700+w.R.Float64()*250, 750+w.R.IntN(250), 300+w.R.IntN(40))
	})
	report.Every(start, w.Now, 15*time.Minute, func(t time.Time, i int) string {
		return fmt.Sprintf("%s\t%s\tINFO\tnightly-report heartbeat: nothing scheduled", ts(t), w.reqID())
	})
	w.cwLogs("/aws/lambda/upload-handler", up)
	w.cwLogs("/aws/lambda/image-resize", resize)
	w.cwLogs("/aws/lambda/nightly-report", report)
	p := time.Minute
	m := func(id, name, fn, stat string, f func(time.Time) float64, jit float64) CWMetric {
		return CWMetric{ID: id, Namespace: "AWS/Lambda", Name: name, Stat: stat, Dims: [][2]string{{"FunctionName", fn}}, Period: p, Start: start, End: w.Now, F: f, Jitter: jit, Integer: stat == "Sum" || stat == "Maximum"}
	}
	w.cwMetrics(
		m("throttles_resize", "Throttles", "image-resize", "Sum", step(cut, 0, 31, 0), 0.15),
		m("concurrency_resize", "ConcurrentExecutions", "image-resize", "Maximum", func(t time.Time) float64 {
			if t.After(cut) {
				return 5
			}
			return 14
		}, 0.1),
		m("invocations_resize", "Invocations", "image-resize", "Sum", step(cut, 20, 6, 0), 0.1),
		m("duration_resize", "Duration", "image-resize", "Average", constant(820), 0.06),
		m("errors_upload", "Errors", "upload-handler", "Sum", step(cut, 0, 17, 0), 0.15),
		m("invocations_upload", "Invocations", "upload-handler", "Sum", constant(30), 0.08),
		m("invocations_report", "Invocations", "nightly-report", "Sum", constant(0.07), 0),
	)
	w.changes(
		chg(w.ago(2*24*time.Hour), "upload-handler", "deploy", "upload-handler 2026.03.24: HEIC support", "2026.03.24", "ci"),
		chg(cut, "image-resize", "infra", "terraform apply (infra PR #912): aws_lambda_function.image_resize reserved_concurrent_executions = 5 (was unreserved)", "", "terraform"),
	)
	sc := &Scenario{Title: "image-resize Lambda throttled after its reserved concurrency was cut to 5", Request: ScenarioRequest{AgentName: "aws_agent",
		Message: "Uploads fail with errors from upload-handler since about half an hour ago.", Context: map[string]string{"service": "upload-handler"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"throttl", "concurrency", "rate exceeded", "toomanyrequests"}},
			AffectedSystemsAll: []string{"image-resize"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"get_cloudwatch_metrics", "get_cloudwatch_logs", "list_cloudwatch_metrics"}}}
	return w, "AWS Lambda image-resize throttled (reserved concurrency 5); upload-handler invocations fail", sc
}

// scenHealthy: nothing is wrong; only unrelated noise.
func scenHealthy() (*World, string, *Scenario) {
	w := newWorld("healthy-control", mustTime("2026-03-27T09:30:00Z"), 1313)
	nodes := w.baseCluster("eu-west-1", "4")
	cat := w.addApp(AppSpec{NS: "shop", Name: "catalog", Replicas: 3, Nodes: nodes, ProbePath: "/healthz", Team: "shop",
		Revs: []Rev{{Image: "ghcr.io/acme/catalog:6.1.0", At: w.ago(12 * 24 * time.Hour)}, {Image: "ghcr.io/acme/catalog:6.1.1", At: w.ago(2*24*time.Hour + 5*time.Hour)}}})
	cart := w.addApp(AppSpec{NS: "shop", Name: "cart", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "shop",
		Revs: []Rev{{Image: "ghcr.io/acme/cart:1.41.2", At: w.ago(5 * 24 * time.Hour)}}})
	redis := w.addApp(AppSpec{NS: "shop", Name: "redis", Replicas: 1, Port: 6379, SvcPort: 6379, Nodes: nodes, Team: "shop",
		Revs: []Rev{{Image: "redis:7.4.2-alpine", At: w.ago(60 * 24 * time.Hour)}}})
	// one old restart, long resolved
	p := cart.Pods[1]
	run := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	restartedRunning(p, 1, p.Status.StartTime.Time, w.ago(41*time.Hour), w.ago(41*time.Hour-15*time.Second), "Error", 2, true)
	_ = run
	w.completedJob("shop", "price-feed-import-29576730", nodes[0], w.ago(47*time.Minute))
	w.resolvedScheduling(cat, w.ago(55*time.Minute))
	w.hpaNoise("shop", "catalog", w.ago(29*time.Minute))
	w.healthyLogs(cat, styleJSON, "6.1.1", 30*time.Second, []string{"/v1/products/{id}", "/v1/search?q=shoes", "/v1/categories"})
	for _, p := range cat.Pods[:1] {
		t := w.ago(37 * time.Minute)
		w.podLog(p, "", msgLine(styleJSON, t, "WARN", "catalog", "slow query: SELECT products by category took 1.21s (threshold 1s)"))
	}
	w.healthyLogs(cart, styleLogfmt, "1.41.2", 40*time.Second, []string{"/v1/cart/{id}", "POST /v1/cart/{id}/items"})
	for _, p := range redis.Pods {
		w.podLog(p, "", "1:M 25 Mar 2026 12:02:11.041 * Background saving started by pid 4121\n1:M 27 Mar 2026 09:02:11.310 * Background saving terminated with success\n")
	}
	o := w.om(2*time.Hour, time.Minute)
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="shop",service="catalog",code="200"`, 90_120_443, diurnal(120, 0.2))
	o.Counter(`namespace="shop",service="catalog",code="404"`, 301_229, constant(0.9))
	o.Counter(`namespace="shop",service="catalog",code="500"`, 2_101, constant(0.02))
	o.Counter(`namespace="shop",service="cart",code="200"`, 30_558_120, diurnal(45, 0.2))
	o.Counter(`namespace="shop",service="cart",code="500"`, 802, constant(0.01))
	o.Family("http_request_duration_seconds", "histogram", "Request latency.")
	o.Histogram(`namespace="shop",service="catalog"`, diurnal(120, 0.2), constant(0.028))
	o.Family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes.")
	for _, p := range cat.Pods {
		o.Gauge(fmt.Sprintf(`namespace="shop",pod=%q,container="catalog"`, p.Name), 0.02, constant(180*mi+float64(len(p.Name)%5)*4*mi))
	}
	o.Family("redis_connected_clients", "gauge", "Connected clients.")
	o.Gauge(`instance="redis.shop:9121",job="redis"`, 0.05, constant(42))
	w.goroutines(o, "catalog", "cart")
	w.nodeCPU(o, 0.28)
	o.Save("shop")
	w.changes(
		chg(w.ago(5*24*time.Hour), "cart", "deploy", "cart 1.41.2", "1.41.2", "ci"),
		chg(w.ago(2*24*time.Hour+5*time.Hour), "catalog", "deploy", "catalog 6.1.1: typo fixes in category names", "6.1.1", "ci"),
		chg(w.ago(20*time.Hour), "catalog", "feature_flag", "show_reviews_widget: on for 10%", "", "pm.anna"),
	)
	sc := &Scenario{Title: "healthy control: catalog is fine", Request: ScenarioRequest{AgentName: "planner",
		Message: "Is anything wrong with the catalog service? A customer said search felt slow this morning.", Context: map[string]string{"service": "catalog", "namespace": "shop"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"no fault", "healthy", "no significant", "no issue", "no evidence", "nothing abnormal", "no problem"}},
			ToolsUsedAny: []string{"list_pods", "get_events", "prometheus_query_range", "detect_anomalies", "get_pod_logs"}}}
	return w, "shop namespace, all healthy; unrelated noise only", sc
}
