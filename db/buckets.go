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
	// bucketInvestigations: investigation id -> JSON Investigation.
	bucketInvestigations = []byte("investigations")
	// bucketInvestigationsByTeam: team ‖ 0x00 ‖ u64be created-unix-nanos ‖ id
	// -> the investigation's status (so lists filter and count without
	// decoding records; see investigations.go).
	bucketInvestigationsByTeam = []byte("investigations_by_team")
	// bucketInvestigationEvents: investigation id ‖ 0x00 ‖ u64be seq -> JSON event.
	bucketInvestigationEvents = []byte("investigation_events")
	// bucketOutbox: u64be seq -> JSON OutboxEntry (a webhook or chat delivery).
	bucketOutbox = []byte("outbox")
	// bucketDeliveries: the delivery log and the outbox's indexes, each under
	// a one-byte key prefix (attempts, id index, due queue, team index,
	// targets disabled by 410); see outbox.go.
	bucketDeliveries = []byte("deliveries")
	// bucketWebhookSecrets: team name -> JSON signing keys, sealed with a key
	// derived from the install key (see outbox.go).
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
