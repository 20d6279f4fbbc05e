package analyst

// mechanisms lists every cause with its own home (one file each). The
// causes not yet moved here are still described by the kinds table
// (types.go), the log rules (logs.go) and the playbook's switches
// (playbook.go), which remain the fallback until they are empty.
var mechanisms = []*mechanism{
	fdExhaustion,
	clockSkew,
	workerPool,
	slowQuery,
	jobFailed,
	missingEnv,
	cpuThrottling,
	createRefused,
	volumeProvision,
	logMatch,
	slowOperation,
	imagePull,
	configError,
	startFailureM,
	configInvalid,
	hpaMax,
	mountFailure,
	unschedulableM,
	quotaExceeded,
	nodeNotReady,
	livenessKill,
	diskFull,
	tlsHandshake,
	certificateExpired,
	dnsServer,
	dnsResolution,
	connReset,
	cacheFull,
	certExpiring,
	selectorM,
	connLeak,
	databaseErrors,
	authFailure,
}
