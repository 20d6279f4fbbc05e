package db

// Bucket names. Every bucket rootcause uses is declared here and created by
// migration 0001, so adding a service never needs a migration to add a
// bucket. Keys are big-endian where they are numbers; values are JSON.
var (
	// bucketMeta holds install-wide raw values: the HMAC key, the org name.
	bucketMeta = []byte("meta")
	// bucketMigrations: u64be migration number -> JSON migrationRecord.
	bucketMigrations = []byte("migrations")
	// bucketNodes: node name -> JSON Node.
	bucketNodes = []byte("nodes")
	// bucketConfigs: node name -> the node's own config document (JSON).
	bucketConfigs = []byte("configs")
	// bucketConfigVersions: node name ‖ u64be version -> JSON audit entry.
	bucketConfigVersions = []byte("config_versions")
	// bucketChangeRequests: change request id -> JSON change request.
	bucketChangeRequests = []byte("change_requests")
	// bucketChangeRequestsByNode: node name ‖ 0x00 ‖ id -> empty.
	bucketChangeRequestsByNode = []byte("change_requests_by_node")
	// bucketTokens: token id -> JSON tokenRecord.
	bucketTokens = []byte("tokens")
	// bucketTokensByHash: HMAC-SHA256(install key, secret) -> token id.
	bucketTokensByHash = []byte("tokens_by_hash")
	// bucketInvestigations: investigation id (or u64be seq) -> JSON investigation.
	bucketInvestigations = []byte("investigations")
	// bucketInvestigationsByTeam: team ‖ 0x00 ‖ u64be created-unix-nanos ‖ id -> empty.
	bucketInvestigationsByTeam = []byte("investigations_by_team")
	// bucketInvestigationEvents: investigation id ‖ 0x00 ‖ u64be seq -> JSON event.
	bucketInvestigationEvents = []byte("investigation_events")
	// bucketOutbox: u64be seq -> JSON outgoing webhook message.
	bucketOutbox = []byte("outbox")
	// bucketDeliveries: u64be seq (or message id ‖ attempt) -> JSON delivery attempt.
	bucketDeliveries = []byte("deliveries")
	// bucketWebhookSecrets: key id -> JSON webhook signing key reference.
	bucketWebhookSecrets = []byte("webhook_secrets")
)

// allBuckets lists every bucket, in the order migration 0001 creates them.
var allBuckets = [][]byte{
	bucketMeta,
	bucketMigrations,
	bucketNodes,
	bucketConfigs,
	bucketConfigVersions,
	bucketChangeRequests,
	bucketChangeRequestsByNode,
	bucketTokens,
	bucketTokensByHash,
	bucketInvestigations,
	bucketInvestigationsByTeam,
	bucketInvestigationEvents,
	bucketOutbox,
	bucketDeliveries,
	bucketWebhookSecrets,
}

// Keys of the meta bucket.
var (
	metaInstallKey = []byte("install_key") // 32 random bytes, the token HMAC key
	metaOrg        = []byte("org")         // the org root's node name
	metaCreatedAt  = []byte("created_at")  // RFC 3339 time the file was created
)
