// Package analyst is the offline analyst: the default investigation engine,
// which needs no language model. Specialist agents gather evidence through
// their toolkits (Kubernetes state and events, pod and host logs, metrics,
// changes, CloudWatch, runbooks); pure detectors turn typed evidence into
// findings (OOMKilled containers, crash loops, image pull errors, node
// pressure, log templates new or surging in the incident window, metric
// anomalies, changes shortly before the onset, failing dependencies); the
// reasoner groups findings into hypotheses, ranks them by evidence strength,
// specificity and timing, and writes the result with a calibrated
// confidence, a merged timeline, recommendations from a playbook per cause,
// ruled-out hypotheses and data gaps. See docs/investigations.md.
package analyst

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is the category of a finding, and of the hypothesis it supports.
type Kind string

// Finding kinds. Causes name a mechanism; symptoms are what a cause
// produces; changes are what happened before.
const (
	KindOOMKilled      Kind = "oom_killed"
	KindCrashLoop      Kind = "crash_loop"
	KindAppCrash       Kind = "app_crash" // panics, stack traces, fatal errors
	KindImagePull      Kind = "image_pull"
	KindConfigError    Kind = "config_error"  // CreateContainerConfigError: missing secret/configmap
	KindStartFailure   Kind = "start_failure" // the container's command/entrypoint cannot be started (StartError)
	KindMountFailure   Kind = "mount_failure"
	KindProbeFailure   Kind = "probe_failure"
	KindLivenessKill   Kind = "liveness_kill"  // containers restarted by a failing liveness/startup probe
	KindCPUThrottling  Kind = "cpu_throttling" // CFS quota throttling or CPU starvation
	KindDNSServer      Kind = "dns_server"     // the cluster DNS (CoreDNS/kube-dns) itself fails
	KindEviction       Kind = "eviction"
	KindNodePressure   Kind = "node_pressure"
	KindNodeNotReady   Kind = "node_not_ready"
	KindUnschedulable  Kind = "unschedulable"
	KindQuota          Kind = "quota_exceeded"
	KindRolloutStuck   Kind = "rollout_stuck"
	KindNoEndpoints    Kind = "no_endpoints"
	KindHPAMax         Kind = "hpa_at_max"
	KindBacklog        Kind = "backlog"           // a consumer lag or queue depth growing
	KindJobOverlap     Kind = "cronjob_overlap"   // several runs of one CronJob active at once
	KindCacheFull      Kind = "cache_saturation"  // a cache at maxmemory evicting keys, its hit ratio falling
	KindConnLeak       Kind = "connection_leak"   // connections held (idle in transaction, pool in use) climb steadily with flat load
	KindLoadSurge      Kind = "load_surge"        // a service's load (requests, connections, sessions) rose several times
	KindConsumerStall  Kind = "consumer_stall"    // a consumer's poll loop too slow: poll timeouts, rebalances
	KindCertExpiring   Kind = "cert_expiring"     // a certificate close to its expiry
	KindSelector       Kind = "selector_mismatch" // a Service selector matching no pod labels
	KindConfigInvalid  Kind = "config_invalid"    // a config file the application cannot parse
	KindCertificate    Kind = "certificate"
	KindTLS            Kind = "tls_handshake"
	KindConnRefused    Kind = "connection_refused"
	KindConnReset      Kind = "connection_reset"
	KindPeer           Kind = "peer_finding" // what a peer agent (A2A) reported
	KindTimeout        Kind = "timeout"
	KindDNS            Kind = "dns_failure"
	KindDatabase       Kind = "database"
	KindDiskFull       Kind = "disk_full"
	KindThrottling     Kind = "throttling"
	KindAuth           Kind = "auth_failure"
	KindLogErrors      Kind = "log_errors"
	KindErrorRate      Kind = "error_rate"
	KindLatency        Kind = "latency"
	KindSaturation     Kind = "saturation"
	KindRestarts       Kind = "restarts"
	KindTargetDown     Kind = "target_down"
	KindDeploy         Kind = "deploy"
	KindConfigChange   Kind = "config_change"
	KindFeatureFlag    Kind = "feature_flag"
	KindInfraChange    Kind = "infra_change"
	KindResourceChange Kind = "resource_change" // limits/requests changed in a rollout
	KindFDExhaustion   Kind = "fd_exhaustion"   // too many open files: the process hit its file-descriptor limit
	KindWorkerPool     Kind = "worker_pool"     // all workers of an HTTP server busy (gunicorn, puma, php-fpm, thread pools)
	KindSlowQuery      Kind = "slow_query"      // database statements slow: seq scans, statement timeouts
	KindClockSkew      Kind = "clock_skew"      // a node's clock off (NTP unsynchronised): tokens "used before issued"
	KindScaledToZero   Kind = "scaled_to_zero"  // a Deployment scaled to 0 replicas
)

// Severities of a finding.
const (
	SevInfo     = 1
	SevWarning  = 2
	SevCritical = 3
)

// Sources of evidence, for counting independent corroboration.
const (
	SrcKubernetes = "kubernetes"
	SrcEvents     = "events"
	SrcLogs       = "logs"
	SrcMetrics    = "metrics"
	SrcChanges    = "changes"
	SrcCloudWatch = "cloudwatch"
	SrcPeer       = "peer agent"
)

// Finding is one observation a detector made over evidence.
type Finding struct {
	Kind Kind
	// Subject is what the finding is about: a workload or service name, a
	// node, or, for dependency failures, the dependency called.
	Subject string
	// Object is the concrete object, e.g. "pod shop/checkout-7d9f-x2" or
	// "node ip-10-0-1-7".
	Object    string
	Namespace string
	// Time is the onset: the first time the condition was observed.
	Time     time.Time
	Severity int
	// Summary is one line for the timeline and ruled-out lists.
	Summary string
	// Evidence holds concrete strings: names, counts, timestamps, quoted
	// log lines, metric values with units.
	Evidence []string
	// Weight is the detector's confidence in the finding, 0..1; the
	// hypothesis prior of its kind multiplies it.
	Weight float64
	Source string
	// Related names other subjects this finding bears on: the node a pod
	// ran on, the caller of a failing dependency, services selecting pods.
	Related []string
	// Facts carries details for descriptions and recommendations
	// (memory_limit, image, revision, exit_code, dependency, message...).
	Facts map[string]string
}

func (f *Finding) fact(k string) string {
	if f.Facts == nil {
		return ""
	}
	return f.Facts[k]
}

func (f *Finding) setFact(k, v string) {
	if v == "" {
		return
	}
	if f.Facts == nil {
		f.Facts = map[string]string{}
	}
	if _, ok := f.Facts[k]; !ok {
		f.Facts[k] = v
	}
}

func (f *Finding) relates(name string) bool {
	return name != "" && (f.Subject == name || slices.Contains(f.Related, name))
}

// kindInfo describes how a kind of finding takes part in reasoning.
type kindInfo struct {
	// prior is how strongly a finding of this kind, on its own, names a
	// root cause (0..1).
	prior float64
	// class: cause (a mechanism that explains symptoms), symptom (what a
	// cause produces), dependency (a failure of something called), change.
	class string
	label string // human label
}

const (
	classCause      = "cause"
	classSymptom    = "symptom"
	classDependency = "dependency"
	classChange     = "change"
)

var kinds = map[Kind]kindInfo{
	KindOOMKilled:     {prior: 0.78},
	KindImagePull:     {prior: 0.82},
	KindConfigError:   {prior: 0.82},
	KindNonRootImage:  {prior: 0.86},
	KindStartFailure:  {prior: 0.84},
	KindMountFailure:  {prior: 0.74},
	KindUnschedulable: {prior: 0.74},
	KindQuota:         {prior: 0.72},
	KindNodeNotReady:  {prior: 0.74},
	// A node NotReady for a while and Ready again since: over.
	KindNodeRecovered:   {prior: 0.9},
	KindNodePressure:    {prior: 0.74},
	KindCertificate:     {prior: 0.82},
	KindDiskFull:        {prior: 0.76},
	KindDatabase:        {prior: 0.64},
	KindDNS:             {prior: 0.62},
	KindDNSServer:       {prior: 0.8},
	KindLivenessKill:    {prior: 0.7},
	KindCPUThrottling:   {prior: 0.66},
	KindConnReset:       {prior: 0.34},
	KindPeer:            {0.4, classSymptom, "peer agent finding"},
	KindAuth:            {prior: 0.58},
	KindThrottling:      {prior: 0.52},
	KindHPAMax:          {prior: 0.76},
	KindBacklog:         {prior: 0.68},
	KindConsumerStall:   {prior: 0.42},
	KindJobOverlap:      {0.34, classSymptom, "overlapping CronJob runs"},
	KindLoadSurge:       {0.3, classSymptom, "load surge"},
	KindConnLeak:        {prior: 0.8},
	KindCacheFull:       {prior: 0.78},
	KindCertExpiring:    {prior: 0.7},
	KindCertNotServed:   {prior: 0.74},
	KindCacheKeyChurn:   {prior: 0.8},
	KindCacheMassExpiry: {prior: 0.82},
	KindSelector:        {prior: 0.84},
	KindConfigInvalid:   {prior: 0.8},
	KindEviction:        {prior: 0.56},
	KindTLS:             {prior: 0.56},
	// Mechanisms with their own home (mechanisms.go) take their class
	// and label from there; their priors stay here, tuned with the rest.
	KindFDExhaustion:      {prior: 0.8},
	KindWorkerPool:        {prior: 0.74},
	KindDeadlock:          {prior: 0.86},
	KindRetryStorm:        {prior: 0.84},
	KindScrapeFailing:     {prior: 0.84},
	KindMonitorUnselected: {prior: 0.84},
	KindPageMissed:        {prior: 0.9},
	KindScrapeBlocked:     {prior: 0.86},
	KindResolverTimeout:   {prior: 0.84},
	KindDNSUpstream:       {prior: 0.88},
	KindMetricsAPI:        {prior: 0.88},
	KindCRDMissing:        {prior: 0.86},
	KindDBSlotsTaken:      {prior: 0.86},
	KindPoolHeld:          {prior: 0.86},
	KindThreadsHeld:       {prior: 0.86},
	KindReleasePending:    {prior: 0.86},
	KindApplyRejected:     {prior: 0.84},
	KindTokenAudience:     {prior: 0.86},
	KindDeadlineCut:       {prior: 0.86},
	KindDBUserLoad:        {prior: 0.8},
	KindSlowQuery:         {prior: 0.72},
	KindIndexInvalid:      {prior: 0.86},
	KindIndexDropped:      {prior: 0.86},
	KindStatsStale:        {prior: 0.86},
	KindOrphanLock:        {prior: 0.86},
	KindBufferPoolSmall:   {prior: 0.86},
	KindVisibilityTimeout: {prior: 0.86},
	KindClockSkew:         {prior: 0.8},
	KindJobFailed:         {prior: 0.8},
	KindMissingEnv:        {prior: 0.84},
	// A server refused its privileged listening port (not root).
	KindPrivilegedPort:        {prior: 0.86},
	KindCreateRefused:         {prior: 0.8},
	KindVolumeProvision:       {prior: 0.82},
	KindLogMatch:              {prior: 0.6},
	KindKeepAliveRace:         {prior: 0.78},
	KindEphemeralPorts:        {prior: 0.8},
	KindDNSSlow:               {prior: 0.8},
	KindBlockingCommand:       {prior: 0.82},
	KindPoolRejected:          {prior: 0.82},
	KindLBHealthCheck:         {prior: 0.82},
	KindEdgeOriginCert:        {prior: 0.86},
	KindCORSRejected:          {prior: 0.86},
	KindFailoverCheckRedirect: {prior: 0.86},
	KindWAFBlocked:            {prior: 0.86},
	KindDiskClaim:             {prior: 0.8},
	KindOutcome:               {prior: 0.72},
	KindSlowOperation:         {prior: 0.62},
	KindFailoverWait:          {prior: 0.84},
	KindDBBlocked:             {prior: 0.8},
	KindMigrationLock:         {prior: 0.86},
	KindMigrationChecksum:     {prior: 0.86},
	KindResourceAlarm:         {prior: 0.82},
	KindSlowCall:              {prior: 0.5},
	KindSlowPeer:              {prior: 0.7},
	KindReadOnlyDB:            {prior: 0.8},
	KindDBMaintenance:         {prior: 0.86},
	KindPartitionMissing:      {prior: 0.86},
	KindShardLimit:            {prior: 0.86},
	KindRBACDenied:            {prior: 0.84},
	KindAskerForbidden:        {prior: 0.88},
	KindFaultInjection:        {prior: 0.84},
	KindCheckErrors:           {prior: 0.8},
	KindNoisyNeighbour:        {prior: 0.8},
	KindDrainBlocked:          {prior: 0.84},
	KindJobSidecar:            {prior: 0.84},
	KindCronSuspended:         {prior: 0.84},
	KindCronMissed:            {prior: 0.84},
	KindHelmOwnership:         {prior: 0.86},
	KindOrderedReady:          {prior: 0.84},
	KindSTSPartition:          {prior: 0.84},
	KindPrefetchCut:           {prior: 0.84},
	KindStaleImage:            {prior: 0.84},
	KindEtcdSlowDisk:          {prior: 0.84},
	KindCloudExhausted:        {prior: 0.84},
	KindCronTimeZone:          {prior: 0.84},
	KindBatchSizeCut:          {prior: 0.84},
	KindHPABlind:              {prior: 0.84},
	KindHPATargetMissing:      {prior: 0.84},
	KindDaemonSetTaint:        {prior: 0.84},
	KindIngressPort:           {prior: 0.84},
	KindEphemeralLimit:        {prior: 0.84},
	KindIngressPathExact:      {prior: 0.84},
	KindReadinessExecMissing:  {prior: 0.84},
	KindIngressService:        {prior: 0.84},
	KindScaledToZero:          {prior: 0.84},
	KindPortMismatch:          {prior: 0.84},
	KindGCPressure:            {prior: 0.74},
	KindMemoryClaim:           {prior: 0.7},
	KindVolumeClaim:           {prior: 0.7},
	KindConnRefused:           {prior: 0.5},
	KindTimeout:               {prior: 0.44},
	KindSaturation:            {0.44, classCause, "resource saturation"},
	KindAppCrash:              {prior: 0.5},
	KindCrashLoop:             {prior: 0.5},
	KindProbeFailure:          {prior: 0.42},
	KindRolloutStuck:          {prior: 0.46},
	KindNoEndpoints:           {prior: 0.4},
	KindTargetDown:            {0.4, classSymptom, "scrape target down"},
	KindLogErrors:             {prior: 0.32},
	KindErrorRate:             {0.32, classSymptom, "error rate increase"},
	KindLatency:               {0.3, classSymptom, "latency increase"},
	KindRestarts:              {0.3, classSymptom, "container restarts"},
	KindDeploy:                {0.36, classChange, "deploy"},
	KindConfigChange:          {0.4, classChange, "config change"},
	KindFeatureFlag:           {0.42, classChange, "feature flag change"},
	KindInfraChange:           {0.36, classChange, "infrastructure change"},
	KindResourceChange:        {0.4, classChange, "resource limit change"},

	// A balancer keeping idle connections longer than its backend does.
	KindLBIdleAboveKeepAlive: {prior: 0.86},
	// One availability zone degraded under the pods that run in it.
	KindZoneImpaired: {prior: 0.86},
	// A resolver serving a cached NXDOMAIN for a name that exists again.
	KindDNSNegativeCache: {prior: 0.88},

	// Pods that stop at once while the edge still routes to them.
	KindNoGracefulShutdown: {prior: 0.84},

	// An Ingress no controller serves; a webhook whose service is down.
	KindIngressClass:       {prior: 0.84},
	KindWebhookUnreachable: {prior: 0.84},

	// Requests past what the nodes hold with one node lost.
	KindRequestOvercommit: {prior: 0.8},

	// A route removed by a release that its caller still calls.
	KindRemovedRoute: {prior: 0.8},

	// Tokens signed with a key the validator's cached JWKS lacks.
	KindSigningKeyUnknown: {prior: 0.84},
	KindTLSMismatch:       {prior: 0.84},
	// Tokens signed with a key other than the one the validator holds.
	KindTokenSignatureInvalid: {prior: 0.84},
	// A server certificate without the name its client dials.
	KindCertNameMismatch:   {prior: 0.84},
	KindDecodeFailure:      {prior: 0.86},
	KindMetaspace:          {prior: 0.86},
	KindHandlerPanic:       {prior: 0.84},
	KindDependencyConflict: {prior: 0.86},
	// Idle keep-alive connections closed by the server or a proxy under
	// the client that reuses them.
	KindIdleConnClosed: {prior: 0.8},
	// Kafka partitions below min.insync.replicas (brokers' log dirs failed).
	KindKafkaMinISR: {prior: 0.8},
	// Publishes to a topic, exchange or queue that does not exist.
	KindTopicMissing: {prior: 0.84},
	// A consumer's window of unacknowledged messages full.
	KindAckPendingFull: {prior: 0.84},
	// A queue at its length limit, messages dropped.
	KindQueueLengthCap: {prior: 0.84},
	// Every message of a FIFO queue sent with one message group id.
	KindOneMessageGroup: {prior: 0.84},
	// A serverless function's executions taking a database's connections.
	KindFunctionScaleOut: {prior: 0.86},
	// A proxy's retries of a request that is not safe to send twice.
	KindRetriedNonIdempotent: {prior: 0.84},

	// Plaintext from outside the mesh to a namespace that requires mTLS.
	KindMeshMTLS: {prior: 0.86},

	// Pods evicted for pods of a higher PriorityClass.
	KindPreempted:    {prior: 0.84},
	KindCordonedOnly: {prior: 0.86},
	// A server bound to the loopback address inside its pod.
	KindLoopbackBind: {prior: 0.86},
	// A Lambda function's proxy response the gateway refuses (502).
	KindProxyResponseMalformed: {prior: 0.88},
	// A serverless function's invocations killed for their memory.
	KindLambdaOOM: {prior: 0.88},
	// Container tasks stopped before start: their secrets cannot be fetched.
	KindTaskSecretsUnavailable: {prior: 0.88},

	// Managed cloud services: a hot partition key throttled, a KMS key
	// pending deletion or disabled, a NAT gateway out of source ports.
	KindHotKey:         {prior: 0.84},
	KindIndexThrottled: {prior: 0.86},
	KindCacheBypassed:  {prior: 0.88},
	KindKMSKey:         {prior: 0.86},
	KindNATPorts:       {prior: 0.86},
	KindAPFStarved:     {prior: 0.86},
	// A cloud action denied by the caller's IAM policy.
	KindCloudDenied: {prior: 0.86},

	// Platform plumbing behind a stuck object or a slow service: a CSI
	// driver not registered on the node, an aggregated API down under a
	// namespace's deletion, a node's connection-tracking table full, an ACME
	// challenge the CA cannot reach.
	KindCSIDriver:      {prior: 0.86},
	KindNamespaceStuck: {prior: 0.86},
	KindACMEChallenge:  {prior: 0.86},
	KindConntrackFull:  {prior: 0.86},
	// A secret volume the cloud refuses to the pod's identity.
	KindSecretMountDenied: {prior: 0.86},
	// Nodes the cloud refused to add for pending pods.
	KindScaleUpRefused: {prior: 0.9},
	// Nodes an autoscaler may not add: its configured limit is reached.
	KindNodeLimit: {prior: 0.88},
	// New pods the pod network cannot set up (no pod IP left).
	KindPodNetwork: {prior: 0.9},
	// A node whose Service rules kube-proxy cannot write.
	KindProxyRules: {prior: 0.88},
	// A configuration reload its server rejects (old config served).
	KindReloadRejected: {prior: 0.88},

	// A client whose own certificate its mTLS peer rejects as expired.
	KindClientCertExpired: {prior: 0.86},
	// A TLS server sending its leaf certificate without the intermediate.
	KindChainIncomplete: {prior: 0.88},
	// A client's TLS-inspecting proxy re-signing a healthy server's chain.
	KindTLSIntercepted: {prior: 0.86},
	// In-cluster calls sent to the egress proxy (NO_PROXY lacks the cluster).
	KindNoProxyMissing: {prior: 0.88},
	// Clients refused after a rotation changed the credential they hold.
	KindCredentialRotated: {prior: 0.84},
	// Clients refused with a rotated credential the server never got.
	KindCredentialNotApplied: {prior: 0.84},
	// Google APIs refusing a GKE workload whose KSA lost its Workload Identity mapping.
	KindGKEWorkloadIdentity: {prior: 0.86},
	KindIRSATrust:           {prior: 0.88},
	KindMeshAuthzDenied:     {prior: 0.88},
	KindTZDataMissing:       {prior: 0.85},
	KindWeekBasedYear:       {prior: 0.85},
	// A runtime's new version (a base image moved) refusing what the old one allowed.
	KindRuntimeRefusal: {prior: 0.88},
	// A runtime sizing its heap from the host on cgroup v2 nodes.
	KindHeapFromHost: {prior: 0.88},
	// The resource use a question asks for, read from kubectl top.
	KindAskedUsage: {prior: 0.8},
	// A target group's targets failing its health check.
	KindTargetsUnhealthy: {prior: 0.86},
	// A telemetry store refusing writes at a limit, read from its own refusal.
	KindIngestRefused: {prior: 0.85},
	// A telemetry pipeline's agent saying where the data stops (a store's refusal, a parser, a protocol, a buffer).
	KindPipelineState: {prior: 0.84},
	// A database refusing connections after a smaller instance class lowered its limit.
	KindDBClassDownsized: {prior: 0.84},
	// A database refusing a client whose role's password validity ended.
	KindDBPasswordExpired: {prior: 0.88},
	KindValueOverflow:     {prior: 0.88},
	// A sending provider that paused the account (its bounce or complaint rate too high).
	KindSendingPaused: {prior: 0.88},
	// A payment provider's test-mode key used against live objects.
	KindTestModeKey: {prior: 0.88},
	// A process that did not find its configuration at start and runs on its defaults.
	KindConfigSourceMissing: {prior: 0.82},
	// A well-known environment variable set under a misspelled name, its library on its default.
	KindEnvNameMisspelled: {prior: 0.84},
	// A client refused by Consul because its ACL token no longer exists.
	KindACLTokenDeleted: {prior: 0.86},
	// A client refused a privilege on a database object (a GRANT lost when it was rebuilt).
	KindDBPrivilegeDenied: {prior: 0.86},
	// A database's disk filled by WAL an abandoned replication slot keeps.
	KindWALRetained: {prior: 0.86},

	// The platform under a workload: etcd at its space quota, a node's
	// kubelet with an expired client certificate, a node's container
	// runtime down, a node or pod out of PIDs.
	KindEtcdNoSpace:   {prior: 0.86},
	KindKubeletCert:   {prior: 0.86},
	KindRuntimeDown:   {prior: 0.86},
	KindPIDExhaustion: {prior: 0.8},
	// Pods held in Init by a wait loop for a Service nothing serves.
	KindInitWait: {prior: 0.86},
	// A database's disk filled by WAL its failing archiving keeps.
	KindArchiveFailing: {prior: 0.86},
	// One client whose requests drive a service's load.
	KindClientSurge: {prior: 0.84},
	// A setting whose value the software refuses (sslmode=required).
	KindSettingInvalid: {prior: 0.84},
	// A replica lagging while its applier runs a DDL from the primary.
	KindReplicaDDL: {prior: 0.86},
	// A read replica whose replication stopped on an error.
	KindReplicaStopped: {prior: 0.86},
	// Queries queued behind a schema change's table lock.
	KindTableLockQueue: {prior: 0.88},
	// Row-lock waits behind a transaction its client left idle.
	KindRowLockIdleHolder: {prior: 0.86},
	// Writers waiting for the row locks of one long bulk write.
	KindBulkWriteLocks: {prior: 0.86},
	// Deletes slowed by a foreign key check without an index.
	KindFKCascadeScan: {prior: 0.88},
	// Sorts and hashes spilling to disk under a small work_mem.
	KindWorkMemSpill: {prior: 0.87},
	// Serialization failures after the default isolation level was raised.
	KindIsolationRaised: {prior: 0.87},
	// PostgreSQL refusing writes to avoid transaction ID wraparound.
	KindXIDWraparound: {prior: 0.88},
	// A runtime out of its own heap.
	KindHeapExhausted: {prior: 0.85},
	// A file setting an environment variable overrides.
	KindEnvOverride: {prior: 0.9},
	// A JVM out of direct (off-heap) memory.
	KindDirectMemory: {prior: 0.86},
	// Native memory fragmented by glibc malloc (jemalloc lost).
	KindMallocFragmentation: {prior: 0.88},
	// An in-process cache growing without bound to the memory limit.
	KindUnboundedCache: {prior: 0.88},
	// A runtime's thread pool starved by threads blocked on async work.
	KindThreadPoolStarvation: {prior: 0.86},
	// A single-threaded store stalled by the fork of its snapshots.
	KindForkStall: {prior: 0.86},
	// A runtime's event loop blocked by synchronous work.
	KindEventLoopBlocked: {prior: 0.86},
	// A Go service leaking goroutines blocked forever in one frame.
	KindGoroutineLeak: {prior: 0.86},
	// A regular expression backtracking catastrophically on the CPU.
	KindRegexBacktrack: {prior: 0.86},
	// Code using a column or table its database lacks.
	KindSchemaMissing:     {prior: 0.86},
	KindSchemaDrift:       {prior: 0.88},
	KindConnectTaskFailed: {prior: 0.88},
	// A container's memory cgroup at its limit, from the kernel's OOM
	// reports.
	KindMemcgOOM: {prior: 0.86},
	// A node's inotify limit (fs.inotify sysctl) a file watcher hits.
	KindInotifyLimit: {prior: 0.86},
	// An Airflow pool whose slots another DAG holds.
	KindAirflowPoolFull: {prior: 0.86},
	// A job's process killed by its container's OOM killer, no restart.
	KindChildOOMKill: {prior: 0.88},
	// Argo workflows Pending on a lock another workflow holds.
	KindArgoLockHeld: {prior: 0.86},
	// An Airflow DAG run failed by one task's exception.
	KindAirflowTaskFailed: {prior: 0.8},
	// Objects deleted by the bucket's lifecycle expiration rule.
	KindS3LifecycleExpired: {prior: 0.88},
	// Decimal numbers parsed under a locale with the other decimal separator.
	KindLocaleNumberParse: {prior: 0.88},
	// A client's secondary reads served by a delayed member that is not hidden.
	KindDelayedMemberReads: {prior: 0.88},
	// A materialized view whose concurrent refresh fails.
	KindMatViewRefreshFailed: {prior: 0.88},
	// A table's generated key at its integer type's maximum.
	KindIDExhausted: {prior: 0.88},
	// A host's file system remounted read-only after I/O errors.
	KindFSReadOnly: {prior: 0.88},
	// A host's systemd unit left failed (a server down, or a job's run).
	KindHostUnitFailed: {prior: 0.84},
	// A host's kernel out of TCP socket memory.
	KindTCPMemory: {prior: 0.88},
	// Reads aborted on tombstones left by row-by-row deletes.
	KindTombstones: {prior: 0.86},
	// A volume's expansion refused, its workload's disk still full.
	KindVolumeResizeFailed: {prior: 0.88},
	// A filesystem out of inodes while its bytes are free.
	KindInodesExhausted: {prior: 0.88},
	// A pod's start waiting on the kubelet's fsGroup ownership walk.
	KindFSGroupChown: {prior: 0.88},
	// ClickHouse rejecting inserts for too many parts.
	KindTooManyParts: {prior: 0.86},
	// Mesh proxies refusing the configuration pushed to them.
	KindXDSRejected: {prior: 0.86},
	// Mesh proxies failing calls to a healthy callee: circuit breaker
	// overflow or outlier ejection.
	KindMeshCircuitBreak: {prior: 0.86},
	// A proxy's buffer too small for an upstream's response headers.
	KindHeaderTooBig: {prior: 0.86},
	// A proxy's route timeout shorter than the requests behind it.
	KindRouteTimeout: {prior: 0.86},
	// A caller calling a service many times per request since a change:
	// above the callee's saturation and autoscaler at its maximum.
	KindFanOut: {prior: 0.82},
	// An autoscaler pinned at a maximum a change cut: above the
	// autoscaler at its maximum and the backlog it leaves.
	KindAutoscalerCapCut: {prior: 0.86},
	// A server's request pool full at the maximum its settings set.
	KindPoolCapped: {prior: 0.84},
	// A client's connection pool smaller than the concurrency sharing it.
	KindPoolUndersized: {prior: 0.86},
	// A server working on requests its callers abandoned: above the
	// slow call and the backlog it shows.
	KindDeadlineIgnored: {prior: 0.86},
	// A per-pod rate limit whose total fell with the replicas.
	KindRateLimitPerPod: {prior: 0.86},
	// A caller's sidecar dropping calls to a host outside its registry.
	KindMeshEgressBlocked: {prior: 0.86},
	// A provider refusing the caller's source IP (not on its allowlist).
	KindSourceIPNotAllowed: {prior: 0.88},
	// An egress proxy refusing a host its allowlist lacks.
	KindProxyDenied: {prior: 0.88},
	// A provider quota shared with another workload, used up by it.
	KindQuotaNeighbour: {prior: 0.88},
	// A provider's API version retired under its caller.
	KindAPIRetired: {prior: 0.88},
	// A search cluster's primaries without a copy.
	KindShardsUnassigned: {prior: 0.86},
	// A consumer's offsets reset past records retention deleted.
	KindOffsetReset: {prior: 0.84},
	// A consumer started under a group with no committed offsets,
	// replaying its topic: above the lag it leaves.
	KindGroupReplay: {prior: 0.86},
	// A client's prepared statements lost behind a transaction-pooling
	// proxy: above the errors of the client they fail.
	KindPooledPrepared: {prior: 0.86},
	// A live search index with refresh disabled.
	KindRefreshDisabled: {prior: 0.86},
	// A broker cluster cut in two, a node paused.
	KindClusterPartition: {prior: 0.86},
	// A primary failed over again and again.
	KindFailoverLoop: {prior: 0.86},
	// Messages or requests refused for their size.
	KindPayloadTooLarge: {prior: 0.86},
	// A lag alert on a consumer group with no members, its successor caught up.
	KindStaleGroup: {prior: 0.86},
	// A thread spinning on the CPU, read from its CPU profile.
	KindBusyLoop: {prior: 0.86},
	// Files in a memory-backed volume filling a container's memory limit.
	KindTmpfsMemory: {prior: 0.88},
	// A VerticalPodAutoscaler that cut a workload's memory limit.
	KindVPAMemoryCut: {prior: 0.88},
	// A VerticalPodAutoscaler evicting a workload's pods in a loop.
	KindVPAEvictLoop: {prior: 0.86},
	// A NetworkPolicy that drops a Job's calls to a Service.
	KindNetpolBlocked:       {prior: 0.86},
	KindIPFamilyMismatch:    {prior: 0.88},
	KindNodeLocalDNSMissing: {prior: 0.88},
	// An egress NetworkPolicy that drops a namespace's DNS lookups.
	KindEgressDNSBlocked: {prior: 0.88},
	// A caller's egress NetworkPolicies that drop its calls to a Service.
	KindEgressCallBlocked: {prior: 0.88},
	// A caller's egress NetworkPolicies whose address blocks miss a provider's address.
	KindEgressAddressBlocked: {prior: 0.88},
	// A third-party provider answering a service's calls with server errors while its other providers answer.
	KindProviderOutage: {prior: 0.86},
	// A webhook receiver verifying signatures with a signing secret the sender no longer uses.
	KindWebhookSecret: {prior: 0.88},
	// A provider refusing a service's requests for invalid recipients while it accepts the others.
	KindProviderInputRejected: {prior: 0.8},
	// A CronJob's runs skipped behind a stuck run under concurrencyPolicy Forbid.
	KindCronJobHeld: {prior: 0.88},
	// An application writing to its container's read-only root file system.
	KindReadOnlyRootFS: {prior: 0.88},
	// A script entrypoint whose shebang ends in a carriage return.
	KindShebangCRLF: {prior: 0.9},
	// An HTTP readiness probe on a path the application does not serve.
	KindReadinessPathMissing: {prior: 0.88},
	KindCertNotYetValid:      {prior: 0.9},
	// A Kubernetes client whose pod has no service account token mounted.
	KindSATokenMissing: {prior: 0.88},
	KindVaultDenied:    {prior: 0.88},
	// A pod's RuntimeClass handler missing on the node it was placed on.
	KindRuntimeHandler: {prior: 0.88},
	// A change never applied because its GitOps object is suspended.
	KindGitOpsSuspended: {prior: 0.84},
	// A Secret its controller (External Secrets, sealed-secrets) cannot sync.
	KindSecretSyncFailed: {prior: 0.9},
	// An object whose status condition says it does not work (a route's
	// unresolved backend, a certificate not issued, an application degraded).
	KindObjectCondition: {prior: 0.8},
	// TLS verification failing after a CA changed on one side.
	KindCARotated: {prior: 0.88},
	// A rollout aborted because its analysis query returned no data.
	KindAnalysisNoData: {prior: 0.84},
	// An autoscaler's scale-ups reverted to a fixed replica count.
	KindHPAReverted:      {prior: 0.84},
	KindSelfHealReverted: {prior: 0.86},
	KindDeploymentPaused: {prior: 0.86},
	KindCanaryPaused:     {prior: 0.86},
	// An outage at a rollout whose strategy took every pod down at once.
	KindRolloutAllAtOnce: {prior: 0.86},
	// A canary analysis failed by its own load test.
	KindCanaryLoadTest: {prior: 0.86},
	// A Helm upgrade with --reuse-values missing the new chart's defaults.
	KindHelmReuseValues: {prior: 0.86},
	// An autoscaler disabled because its target has 0 replicas.
	KindHPATargetZero: {prior: 0.84},
	// An event-driven autoscaler watching a queue nobody writes to.
	KindScalerQueue: {prior: 0.84},
	// A ConfigMap or Secret change the running pods never see.
	KindConfigNotRefreshed: {prior: 0.84},
	// A Service whose selector also matches another workload's pods.
	KindSelectorOverlap: {prior: 0.84},
	// A service's circuit breaker held open by the dependency it guards.
	KindBreakerOpen: {prior: 0.86},

	// What users' browsers and apps refuse of what the servers send.
	KindCSPBlocked:              {prior: 0.86},
	KindSessionKeyMismatch:      {prior: 0.86},
	KindClientSyntaxUnsupported: {prior: 0.86},
	KindMixedContent:            {prior: 0.86},
	KindPinMismatch:             {prior: 0.86},
	KindClientResponseShape:     {prior: 0.86},

	// Questions answered from a query's result.
	KindQueryRanking: {prior: 0.86},
}

func infoOf(k Kind) kindInfo {
	if m := mechanismOf(k); m != nil {
		i := kinds[k]
		i.class, i.label = m.class, m.label
		return i
	}
	if i, ok := kinds[k]; ok {
		return i
	}
	return kindInfo{0.3, classSymptom, string(k)}
}

// ---- small formatting helpers shared by detectors ----

func ts(t time.Time) string {
	if t.IsZero() {
		return "unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

func hm(t time.Time) string { return t.UTC().Format("15:04 UTC") }

func quote(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case b.Before(a):
		return b
	}
	return a
}
