package analyst

import (
	"strconv"
	"testing"
	"time"
)

// TestCalibrate checks each calibration rule on the trait it names: an
// answer with that trait is held at calibrationCap, one without keeps its
// confidence, and an answer already below the cap is not raised.
func TestCalibrate(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := func(k Kind, subject, src string) *Finding {
		return &Finding{Kind: k, Subject: subject, Time: t0, Weight: 0.9, Source: src}
	}
	hyp := func(k Kind, subject string, score float64, primary []*Finding, support ...*Finding) *Hypothesis {
		return &Hypothesis{Kind: k, Subject: subject, Score: score, Onset: t0, Primary: primary, Support: support}
	}
	oomState := f(KindOOMKilled, "api", SrcKubernetes)
	oomEvent := f(KindOOMKilled, "api", SrcEvents)
	podPending := f(KindUnschedulable, "api", SrcEvents)
	memGrowth := f(KindSaturation, "api", SrcMetrics)
	full := answerShape{timeline: 4, evidence: 5}
	slotsRefused := &Finding{Kind: KindDatabase, Subject: "ledger-pg", Source: SrcLogs, Time: t0, Weight: 0.8,
		Facts: map[string]string{"caller": "ledger-api", "line": `ts=2026-05-04T16:36:13.460Z level=error msg="query failed" err="pq: sorry, too many clients already"`}}
	pullNotFound := &Finding{Kind: KindImagePull, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.85,
		Facts: map[string]string{"message": `Failed to pull image "registry.acme.dev/api:2.1": rpc error: code = NotFound desc = failed to pull and unpack image "registry.acme.dev/api:2.1": failed to resolve reference "registry.acme.dev/api:2.1": registry.acme.dev/api:2.1: not found`}}
	pullRefused := &Finding{Kind: KindImagePull, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.85,
		Facts: map[string]string{"message": `Failed to pull image "harbor.acme.dev/media/api:4.2.0": failed to pull and unpack image "harbor.acme.dev/media/api:4.2.0": failed to resolve reference "harbor.acme.dev/media/api:4.2.0": unexpected status from HEAD request to https://harbor.acme.dev/v2/media/api/manifests/4.2.0: 401 Unauthorized`}}
	probeAnswer := func(code int) *Finding {
		return &Finding{Kind: KindLivenessKill, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.7,
			Facts: map[string]string{"message": "Liveness probe failed: HTTP probe failed with statuscode: " + strconv.Itoa(code), "probe": "liveness"}}
	}
	probeKill := &Finding{Kind: KindLivenessKill, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.85,
		Facts: map[string]string{"message": "Container app failed liveness probe, will be restarted", "probe": "liveness"}}
	nodeSilent := &Finding{Kind: KindNodeNotReady, Subject: "wk-7", Source: SrcKubernetes, Time: t0, Weight: 0.9, Facts: map[string]string{"node": "wk-7"},
		Evidence: []string{`node wk-7 condition Ready=Unknown since 2026-03-01T12:00:00Z, reason NodeStatusUnknown: "Kubelet stopped posting node status."`}}
	volumeReal := &Finding{Kind: KindVolumeClaim, Subject: "orders-db", Source: SrcMetrics, Time: t0, Weight: 0.8,
		Facts: map[string]string{"alert": "KubePersistentVolumeFillingUp", "real": "true", "growing": "true"}}
	callerTimeout := &Finding{Kind: KindTimeout, Subject: "fraud-check", Source: SrcLogs, Time: t0, Weight: 0.8, Facts: map[string]string{"caller": "order-api"}}
	cases := []struct {
		name  string
		a     *Analysis
		shape answerShape
		conf  float64
		want  float64
		rule  string
	}{
		{"corroborated cause keeps its confidence",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState, oomEvent}, memGrowth)}}, full, 90, 90, ""},
		{"a fault localized from signals is where, not why",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindLocalized, "web", 0.9, []*Finding{f(KindLocalized, "web", SrcMetrics)}, oomState)}}, full, 88, 70, "localized only"},
		{"one timeline entry",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState}, memGrowth)}}, answerShape{timeline: 1, evidence: 4}, 90, 70, "thin"},
		{"one evidence line",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState}, memGrowth)}}, answerShape{timeline: 3, evidence: 1}, 90, 70, "thin"},
		{"read only from events",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomEvent}, podPending)}}, full, 85, 70, "events only"},
		{"events with the object's state",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindImagePull, "api", 0.9, []*Finding{pullNotFound, f(KindImagePull, "api", SrcKubernetes)})}}, full, 85, 85, ""},
		{"a memory limit with only its consequences",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState, oomEvent}, f(KindCrashLoop, "api", SrcKubernetes))}}, full, 92, 70, "limit without what drove it"},
		{"a memory limit reached after a change",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindOOMKilled, Subject: "api", Score: 0.9, Onset: t0, Primary: []*Finding{oomState, oomEvent},
				Trigger: f(KindDeploy, "api", SrcChanges)}}}, full, 92, 92, ""},
		{"a memory limit reached by a stated leak",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomEvent, {Kind: KindOOMKilled, Subject: "api", Source: SrcKubernetes, Facts: map[string]string{"leak_rate": "12 MiB/min"}}})}}, full, 92, 92, ""},
		{"a broker's alarm with nothing filling it",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindResourceAlarm, "mq", 0.9, []*Finding{f(KindResourceAlarm, "mq", SrcLogs)}, f(KindTimeout, "mq", SrcLogs))}}, full, 89, 70, "limit without what drove it"},
		{"busy workers held by slow queries",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindWorkerPool, "web", 0.9, []*Finding{f(KindWorkerPool, "web", SrcLogs)}, f(KindSlowQuery, "web", SrcLogs))}}, full, 90, 90, ""},
		{"two unrelated rivals nearly as strong",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState}, memGrowth),
				hyp(KindDiskFull, "db", 0.85, []*Finding{f(KindDiskFull, "db", SrcLogs)}),
				hyp(KindDNS, "web", 0.8, []*Finding{f(KindDNS, "web", SrcLogs)}),
			}}, full, 80, 70, "competing causes"},
		{"one rival nearly as strong (confidence lowers it already)",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState}, memGrowth),
				hyp(KindDiskFull, "db", 0.85, []*Finding{f(KindDiskFull, "db", SrcLogs)}),
				hyp(KindDNS, "web", 0.5, []*Finding{f(KindDNS, "web", SrcLogs)}),
			}}, full, 80, 80, ""},
		{"rivals the root explains are not competing",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState}, memGrowth, podPending),
				hyp(KindSaturation, "api", 0.88, []*Finding{memGrowth}),
				hyp(KindUnschedulable, "api", 0.86, []*Finding{podPending}),
			}}, full, 90, 90, ""},
		{"an autoscaler at its maximum with only its pods' CPU",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindHPAMax, "api", 0.9, []*Finding{f(KindHPAMax, "api", SrcMetrics)}, f(KindSaturation, "api", SrcMetrics), f(KindCPUThrottling, "api", SrcMetrics))}}, full, 80, 70, "limit without what drove it"},
		{"an autoscaler at its maximum under a surge of unknown origin",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindHPAMax, "api", 0.95, []*Finding{f(KindHPAMax, "api", SrcMetrics)}, f(KindSaturation, "api", SrcMetrics), f(KindLoadSurge, "api", SrcMetrics))}}, full, 94, 70, "limit driven by a surge of unknown origin"},
		{"an autoscaler at its maximum under a surge from a named client",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindHPAMax, "api", 0.95, []*Finding{f(KindHPAMax, "api", SrcMetrics)}, f(KindSaturation, "api", SrcMetrics),
				&Finding{Kind: KindLoadSurge, Subject: "api", Source: SrcLogs, Time: t0, Weight: 0.8, Facts: map[string]string{"load_source": "user agent partner-sync/2.3 (61% of requests)"}})}}, full, 94, 94, ""},
		{"a memory limit reached under a surge of unknown origin",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState, oomEvent}, f(KindLoadSurge, "api", SrcMetrics))}}, full, 90, 70, "limit driven by a surge of unknown origin"},
		{"a memory limit reached under a surge, with memory growth beside it",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindOOMKilled, "api", 0.9, []*Finding{oomState, oomEvent}, f(KindLoadSurge, "api", SrcMetrics), memGrowth)}}, full, 90, 90, ""},
		{"probe kills explained as a slow start while the probe got a 404",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindLivenessKill, "api", 0.8, []*Finding{probeAnswer(404), probeKill}, f(KindCrashLoop, "api", SrcKubernetes))}}, full, 74, 70, "probe kills though the probe got an answer"},
		{"startup probe kills while the probe got a 503",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindLivenessKill, "api", 0.8, []*Finding{{Kind: KindLivenessKill, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.7,
				Facts: map[string]string{"message": "Startup probe failed: HTTP probe failed with statuscode: 503"}}, probeKill}, f(KindCrashLoop, "api", SrcKubernetes))}}, full, 80, 70, "probe kills though the probe got an answer"},
		{"probe kills while the application does not answer yet",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindLivenessKill, "api", 0.8, []*Finding{{Kind: KindLivenessKill, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.7,
				Facts: map[string]string{"message": `Liveness probe failed: Get "http://10.1.4.23:8080/actuator/health/liveness": dial tcp 10.1.4.23:8080: connect: connection refused`}}, probeKill}, f(KindCrashLoop, "api", SrcKubernetes))}}, full, 88, 88, ""},
		{"probe kills with the meaning of the probe's answer read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindLivenessKill, "api", 0.8, []*Finding{{Kind: KindLivenessKill, Subject: "api", Source: SrcEvents, Time: t0, Weight: 0.7,
				Facts: map[string]string{"message": "Liveness probe failed: HTTP probe failed with statuscode: 404", "why": "the probe's path /health is not served since the upgrade to 7.0.0"}}, probeKill}, f(KindCrashLoop, "api", SrcKubernetes))}}, full, 90, 90, ""},
		{"a node NotReady with its kubelet silent and nothing of the node",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindNodeNotReady, "wk-7", 0.8, []*Finding{nodeSilent, f(KindNodeNotReady, "wk-7", SrcEvents)},
				&Finding{Kind: KindCrashLoop, Subject: "api", Source: SrcKubernetes, Time: t0, Weight: 0.5, Related: []string{"wk-7"}})}}, full, 78, 70, "node NotReady without the node's own reason"},
		{"a node NotReady with its kubelet's log read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindNodeNotReady, "wk-7", 0.85, []*Finding{nodeSilent, f(KindNodeNotReady, "wk-7", SrcEvents)},
				&Finding{Kind: KindLogErrors, Subject: "wk-7-kubelet", Source: SrcLogs, Time: t0, Weight: 0.4})}}, full, 85, 85, ""},
		{"a node NotReady with a system log line of the node's host",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindNodeNotReady, "wk-7", 0.85, []*Finding{nodeSilent},
				&Finding{Kind: KindLogErrors, Subject: "journal", Source: SrcLogs, Time: t0, Weight: 0.4, Facts: map[string]string{"host": "wk-7"}})}}, full, 85, 85, ""},
		{"a node NotReady whose kubelet says why",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindNodeNotReady, "wk-7", 0.85, []*Finding{{Kind: KindNodeNotReady, Subject: "wk-7", Source: SrcKubernetes, Time: t0, Weight: 0.9,
				Evidence: []string{`node wk-7 condition Ready=False since 2026-03-01T12:00:00Z, reason KubeletNotReady: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"`}}, f(KindNodeNotReady, "wk-7", SrcEvents)})}}, full, 85, 85, ""},
		{"a node NotReady after a change of the node",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindNodeNotReady, Subject: "wk-7", Score: 0.85, Onset: t0, Primary: []*Finding{nodeSilent},
				Trigger: &Finding{Kind: KindInfraChange, Subject: "wk-7", Source: SrcChanges, Summary: "kernel 6.8 rolled to the worker pool"}}}}, full, 85, 85, ""},
		{"a volume alert borne out, answered with slow queries",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindSlowQuery, "orders-db", 0.87, []*Finding{f(KindSlowQuery, "orders-db", SrcLogs)}, f(KindLogErrors, "orders-db", SrcLogs)),
				hyp(KindVolumeClaim, "orders-db", 0.78, []*Finding{volumeReal}),
			}}, full, 77, 70, "the alert's claim left unexplained"},
		{"a volume alert borne out, answered with what fills the volume",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindWALRetained, "orders-db", 0.9, []*Finding{f(KindWALRetained, "orders-db", SrcLogs)}, f(KindLogErrors, "orders-db", SrcLogs)),
				hyp(KindVolumeClaim, "orders-db", 0.78, []*Finding{volumeReal}),
			}}, full, 92, 92, ""},
		{"a volume alert borne out, its finding part of the answer",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindLogMatch, "orders-db", 0.9, []*Finding{f(KindLogMatch, "orders-db", SrcLogs)}, volumeReal),
				hyp(KindVolumeClaim, "orders-db", 0.78, []*Finding{volumeReal}),
			}}, full, 88, 88, ""},
		{"a volume alert not checkable, answered with slow queries",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindSlowQuery, "orders-db", 0.87, []*Finding{f(KindSlowQuery, "orders-db", SrcLogs)}, f(KindLogErrors, "orders-db", SrcLogs))}},
			answerShape{timeline: 4, evidence: 5, question: "KubePersistentVolumeFillingUp for data-orders-db-0: why does the volume keep filling? KubePersistentVolumeFillingUp"}, 77, 70, "the alert's claim left unexplained"},
		{"a disk question answered with what fills the disk",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindDiskFull, "orders-db", 0.9, []*Finding{f(KindDiskFull, "orders-db", SrcLogs)}, f(KindLogErrors, "orders-db", SrcLogs))}},
			answerShape{timeline: 4, evidence: 5, question: "HostDiskWillFillIn4Hours fired for pg-main-01, is it real? HostDiskWillFillIn4Hours"}, 90, 90, ""},
		{"a volume alert refuted, the answer elsewhere",
			&Analysis{Hypotheses: []*Hypothesis{
				hyp(KindSlowQuery, "orders-db", 0.87, []*Finding{f(KindSlowQuery, "orders-db", SrcLogs)}, f(KindLogErrors, "orders-db", SrcLogs)),
				hyp(KindVolumeClaim, "orders-db", 0.5, []*Finding{{Kind: KindVolumeClaim, Subject: "orders-db", Source: SrcMetrics, Time: t0, Weight: 0.5, Facts: map[string]string{"alert": "KubePersistentVolumeFillingUp", "trend": "not growing"}}}),
			}}, full, 85, 85, ""},
		{"connection slots refused after a client's deploy",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindDatabase, Subject: "ledger-pg", Score: 0.8, Onset: t0, Primary: []*Finding{slotsRefused},
				Trigger: &Finding{Kind: KindDeploy, Subject: "ledger-api", Source: SrcChanges, Summary: "deploy of ledger-api: ledger-api 4.2.0: streaming statement export"}}}}, full, 79, 70, "connection slots without who took them"},
		{"connection slots refused after a client scaled out",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindDatabase, Subject: "ledger-pg", Score: 0.85, Onset: t0, Primary: []*Finding{slotsRefused},
				Trigger: &Finding{Kind: KindConfigChange, Subject: "order-worker", Source: SrcChanges, Summary: "config change of order-worker: kubectl scale deployment/order-worker --replicas=12"}}}}, full, 85, 85, ""},
		{"a consumer lag with only the consumers' own errors",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindBacklog, "mailer", 0.8, []*Finding{f(KindBacklog, "mailer", SrcMetrics)}, f(KindConsumerStall, "mailer", SrcLogs), f(KindLogErrors, "mailer", SrcLogs))}}, full, 77, 70, "backlog without what slowed its consumers"},
		{"a consumer lag behind a slow call per record",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindBacklog, "mailer", 0.85, []*Finding{f(KindBacklog, "mailer", SrcMetrics)}, f(KindSlowOperation, "mailer", SrcLogs))}}, full, 85, 85, ""},
		{"a consumer lag after a change",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindBacklog, Subject: "mailer", Score: 0.85, Onset: t0, Primary: []*Finding{f(KindBacklog, "mailer", SrcMetrics)},
				Trigger: f(KindConfigChange, "mailer", SrcChanges)}}}, full, 85, 85, ""},
		{"a command stalling a server, its sender not named",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindBlockingCommand, "redis-01", 0.8, []*Finding{f(KindBlockingCommand, "redis-01", SrcLogs)}, f(KindTimeout, "redis-01", SrcLogs))}}, full, 75, 70, "held without its holder"},
		{"a command stalling a server, its sender named",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindBlockingCommand, "redis-01", 0.9, []*Finding{{Kind: KindBlockingCommand, Subject: "redis-01", Source: SrcLogs, Facts: map[string]string{"blocker": "stats-exporter"}}})}}, full, 90, 90, ""},
		{"an image pull with only the back-off",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindImagePull, "web", 0.95, []*Finding{{Kind: KindImagePull, Subject: "web", Source: SrcKubernetes, Facts: map[string]string{"message": `Back-off pulling image "registry.acme.dev/web:2.1"`}}, f(KindImagePull, "web", SrcEvents)})}}, full, 95, 70, "image pull without the registry's answer"},
		{"an image pull with the registry's answer",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindImagePull, "api", 0.95, []*Finding{f(KindImagePull, "api", SrcKubernetes), pullNotFound})}}, full, 95, 95, ""},
		{"a dependency seen only in its callers' reports and its metrics",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindTimeout, "fraud-check", 0.8, []*Finding{callerTimeout}, f(KindLatency, "fraud-check", SrcMetrics), f(KindSaturation, "fraud-check", SrcMetrics))}}, full, 72, 70, "dependency seen only in its metrics"},
		{"a dependency whose own log is read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindTimeout, "fraud-check", 0.8, []*Finding{callerTimeout}, f(KindLatency, "fraud-check", SrcMetrics), f(KindLogErrors, "fraud-check", SrcLogs))}}, full, 78, 78, ""},
		{"a failover the clients recovered from",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindReadOnlyDB, "inventory-db", 0.96, []*Finding{{Kind: KindReadOnlyDB, Subject: "inventory-db", Source: SrcLogs,
				Facts: map[string]string{"failover_at": "14:21:05", "errors_from": "14:21:17", "errors_to": "14:21:40", "recovered": "true"}}}, f(KindTimeout, "inventory-db", SrcLogs))}}, full, 95, 70, "cause already over"},
		{"a failover the clients still fail on",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindReadOnlyDB, "inventory-db", 0.96, []*Finding{{Kind: KindReadOnlyDB, Subject: "inventory-db", Source: SrcLogs,
				Facts: map[string]string{"failover_at": "14:21:05", "errors_from": "14:21:17"}}}, f(KindTimeout, "inventory-db", SrcLogs))}}, full, 95, 95, ""},
		{"already below the cap",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindLocalized, "web", 0.6, []*Finding{f(KindLocalized, "web", SrcMetrics)})}}, full, 55, 55, "localized only"},
		{"a pull refused with no credentials read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindImagePull, "api", 0.9, []*Finding{pullRefused, f(KindImagePull, "api", SrcKubernetes)})}}, full, 95, 70, "pull refused without the credentials read"},
		{"a pull refused with its ServiceAccount read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindImagePull, "api", 0.9, []*Finding{pullRefused, {Kind: KindImagePull, Subject: "api", Source: SrcKubernetes, Facts: map[string]string{"pull_sa": "default"}}})}}, full, 95, 95, ""},
		{"a pull refused after the images moved registry",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindImagePull, Subject: "api", Score: 0.9, Onset: t0, Primary: []*Finding{pullRefused, f(KindImagePull, "api", SrcKubernetes)},
				Trigger: &Finding{Kind: KindDeploy, Subject: "api", Source: SrcChanges, Summary: "api 4.2.0: images now published to acme.azurecr.io"}}}}, full, 95, 95, ""},
		{"a pull refused after a change of something else",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindImagePull, Subject: "api", Score: 0.9, Onset: t0, Primary: []*Finding{pullRefused, f(KindImagePull, "api", SrcKubernetes)},
				Trigger: &Finding{Kind: KindInfraChange, Subject: "api", Source: SrcChanges, Summary: "api moved to namespace apps-v2"}}}}, full, 95, 70, "pull refused without the credentials read"},
		{"a disk filling with nothing read of what fills it",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindDiskClaim, "node-1", 0.9, []*Finding{{Kind: KindDiskClaim, Subject: "node-1", Source: SrcMetrics, Facts: map[string]string{"real": "yes", "filler_path": "/var/lib/kubelet/pods/1e82/volumes"}}})}}, full, 84, 70, "disk filling without what fills it"},
		{"a disk filled by a named workload",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindDiskClaim, "node-1", 0.9, []*Finding{{Kind: KindDiskClaim, Subject: "node-1", Source: SrcMetrics, Facts: map[string]string{"real": "yes", "filler_workload": "inventory-sync"}}})}}, full, 84, 84, ""},
		{"resolver timeouts with nothing of the resolver itself",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindResolverTimeout, "coredns", 0.9, []*Finding{f(KindResolverTimeout, "coredns", SrcLogs)}, f(KindTimeout, "coredns", SrcLogs))}}, full, 84, 70, "resolver timeouts without the resolver's own why"},
		{"resolver timeouts with the resolver throttled",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindResolverTimeout, "coredns", 0.9, []*Finding{f(KindResolverTimeout, "coredns", SrcLogs)}, f(KindCPUThrottling, "coredns", SrcMetrics))}}, full, 90, 90, ""},
		{"a node named after a workload, no node object read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindNodeNotReady, "cart", 0.9, []*Finding{{Kind: KindNodeNotReady, Subject: "cart", Source: SrcEvents, Time: t0, Weight: 0.9,
				Facts: map[string]string{"message": "Node is not ready"}, Evidence: []string{`event NodeNotReady on pod shop/cart-7c5b9d8f6-9kc2p: "Node is not ready"`}}}, f(KindRolloutStuck, "cart", SrcKubernetes), f(KindLogErrors, "cart", SrcLogs))}}, full, 83, 70, "a node that is not a node"},
		{"a node shown as a node, its kernel log read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindNodeNotReady, "wk-7", 0.9, []*Finding{nodeSilent}, &Finding{Kind: KindLogErrors, Subject: "wk-7", Source: SrcLogs, Facts: map[string]string{"host": "wk-7"}})}}, full, 88, 88, ""},
		{"a memory growth apart from the kills",
			&Analysis{Hypotheses: []*Hypothesis{
				{Kind: KindSaturation, Subject: "api", Score: 0.9, Onset: t0, Primary: []*Finding{{Kind: KindSaturation, Subject: "api", Source: SrcMetrics, Facts: map[string]string{"leak_rate": "38 MiB/min"}}}, Support: []*Finding{f(KindCrashLoop, "api", SrcEvents)}, Trigger: f(KindDeploy, "api", SrcChanges)},
				hyp(KindOOMKilled, "node-1", 0.8, []*Finding{f(KindOOMKilled, "node-1", SrcLogs)}),
			}}, full, 83, 70, "growth apart from the kills it would explain"},
		{"kills at the limit with the growth that drove them",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindOOMKilled, Subject: "api", Score: 0.9, Onset: t0, Primary: []*Finding{oomState},
				Support: []*Finding{{Kind: KindSaturation, Subject: "api", Source: SrcMetrics, Facts: map[string]string{"leak_rate": "38 MiB/min"}}}, Trigger: f(KindDeploy, "api", SrcChanges)}}}, full, 92, 92, ""},
		{"a file access refused, owner and user not read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindJobFailed, "report", 0.9, []*Finding{{Kind: KindJobFailed, Subject: "report", Source: SrcKubernetes,
				Facts: map[string]string{"line": "PermissionError: [Errno 13] Permission denied: '/export/2026-11-25'", "job": "report-1"}}}, f(KindLogErrors, "report", SrcLogs))}}, full, 82, 70, "permission refusal without owner or user"},
		{"a file access refused by a volume owned by root, the pod's uid read",
			&Analysis{Hypotheses: []*Hypothesis{hyp(KindJobFailed, "report", 0.9, []*Finding{{Kind: KindJobFailed, Subject: "report", Source: SrcKubernetes,
				Facts:    map[string]string{"line": "PermissionError: [Errno 13] Permission denied: '/export/2026-11-25'", "job": "report-1"},
				Evidence: []string{"pod runs as uid 65532 (runAsNonRoot) without fsGroup; /export owned by root:root 0755"}}}, f(KindLogErrors, "report", SrcLogs))}}, full, 88, 88, ""},
		{"an autoscaler at its maximum after a change of a log setting",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindHPAMax, Subject: "search", Score: 0.9, Onset: t0, Primary: []*Finding{f(KindHPAMax, "search", SrcMetrics)},
				Support: []*Finding{f(KindSaturation, "search", SrcMetrics), f(KindCPUThrottling, "search", SrcMetrics)},
				Trigger: &Finding{Kind: KindConfigChange, Subject: "search", Source: SrcChanges, Summary: "config change of search: SLOW_QUERY_LOG_MS 0 -> 500"}}}}, full, 89, 70, "limit without what drove it"},
		{"an autoscaler at its maximum after its CPU request was lowered",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindHPAMax, Subject: "search", Score: 0.9, Onset: t0, Primary: []*Finding{f(KindHPAMax, "search", SrcMetrics)},
				Support: []*Finding{f(KindSaturation, "search", SrcMetrics)},
				Trigger: &Finding{Kind: KindConfigChange, Subject: "search", Source: SrcChanges, Summary: "config change of search: resources.requests.cpu 1 -> 250m"}}}}, full, 89, 89, ""},
		{"an init container's back-off known only from events",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindTimeout, Subject: "loyalty", Score: 0.9, Onset: t0, Primary: []*Finding{{Kind: KindTimeout, Subject: "loyalty", Source: SrcLogs, Facts: map[string]string{"caller": "loyalty"}}},
				Support: []*Finding{{Kind: KindCrashLoop, Subject: "loyalty", Source: SrcEvents, Facts: map[string]string{"message": "Back-off restarting failed container db-migrate in pod loyalty-5c9_rewards(a0f3)"}}, f(KindRolloutStuck, "loyalty", SrcKubernetes)},
				Trigger: &Finding{Kind: KindInfraChange, Subject: "data", Source: SrcChanges, Summary: "NetworkPolicy: default-deny ingress for namespace data"}}}}, full, 80, 70, "another container's crashes known only from events"},
		{"an init container's crash read from the pods' state",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindTimeout, Subject: "loyalty", Score: 0.9, Onset: t0, Primary: []*Finding{{Kind: KindTimeout, Subject: "loyalty", Source: SrcLogs, Facts: map[string]string{"caller": "loyalty"}}},
				Support: []*Finding{{Kind: KindCrashLoop, Subject: "loyalty", Source: SrcEvents, Facts: map[string]string{"message": "Back-off restarting failed container db-migrate in pod loyalty-5c9_rewards(a0f3)"}},
					{Kind: KindCrashLoop, Subject: "loyalty", Source: SrcKubernetes, Facts: map[string]string{"init_container": "db-migrate"}}},
				Trigger: &Finding{Kind: KindInfraChange, Subject: "data", Source: SrcChanges, Summary: "NetworkPolicy: default-deny ingress for namespace data"}}}}, full, 82, 82, ""},
		{"an init container's lock named by the answer",
			&Analysis{Hypotheses: []*Hypothesis{{Kind: KindMigrationLock, Subject: "ledger", Score: 0.9, Onset: t0,
				Primary: []*Finding{{Kind: KindMigrationLock, Subject: "ledger", Source: SrcKubernetes, Facts: map[string]string{"init_container": "db-migrate", "holder": "ledger-65f8-8fvqd"}}},
				Support: []*Finding{{Kind: KindCrashLoop, Subject: "ledger", Source: SrcEvents, Facts: map[string]string{"message": "Back-off restarting failed container db-migrate in pod ledger-65f8-8fvqd_finance(2b8e)"}}, f(KindLogErrors, "ledger", SrcLogs)}}}}, full, 95, 95, ""},
		{"a healthy verdict is left alone",
			&Analysis{Healthy: true, Hypotheses: []*Hypothesis{hyp(KindLocalized, "web", 0.2, []*Finding{f(KindLocalized, "web", SrcMetrics)})}}, answerShape{}, 13, 13, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := calibrate(c.a, c.conf, c.shape); got != c.want {
				t.Errorf("calibrate = %.0f, want %.0f", got, c.want)
			}
			if got := calibrationRuleOf(c.a, c.shape); got != c.rule {
				t.Errorf("rule %q, want %q", got, c.rule)
			}
		})
	}
}
