package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A cloud action denied by the caller's IAM policy, as AWS, Google Cloud
// and Azure SDKs log it: the action, the principal and the resource are
// read, the change to the role's policies found (even the day before, as
// a denial at start waits for the next restart), and a generic 403 or an
// expired token is not taken for it.
func TestDetectCloudDenied(t *testing.T) {
	vault := `2026-07-08T10:26:51.968Z [WARN]  failed to unseal core: error="fetching stored unseal keys failed: failed to decrypt keys for storage: error decrypting data encryption key: AccessDeniedException: User: arn:aws:sts::481516234200:assumed-role/vault-server/aws-go-sdk-1720434231812 is not authorized to perform: kms:Decrypt on resource: arn:aws:kms:eu-west-1:481516234200:key/5e0f3c2a-7d41-4b8e-9c6a-2f1d0e8b7a94 because no identity-based policy allows the kms:Decrypt action\n\tstatus code: 400, request id: 2b7c91e4"`
	eso := `{"level":"error","ts":1751968000.1,"msg":"could not get secret data from provider","ExternalSecret":"payments/ledger-db","error":"AccessDeniedException: User: arn:aws:sts::210987654321:assumed-role/eso-payments/external-secrets is not authorized to perform: secretsmanager:GetSecretValue on resource: prod/payments/ledger-db because no identity-based policy allows the secretsmanager:GetSecretValue action"}`
	gcp := `{"severity":"ERROR","message":"rpc error: code = PermissionDenied desc = Permission 'cloudkms.cryptoKeyVersions.useToDecrypt' denied on resource 'projects/acme/locations/europe-west1/keyRings/vault/cryptoKeys/unseal' (or it may not exist). (ref: docs-sa@acme-prod.iam.gserviceaccount.com)"}`
	azure := `2026-07-08 10:30:02 ERROR Status=403 Code="AuthorizationFailed" Message="The client 'f3c2a1b0-1111-2222-3333-444455556666' with object id 'f3c2a1b0-1111-2222-3333-444455556666' does not have authorization to perform action 'Microsoft.Storage/storageAccounts/listKeys/action' over scope '/subscriptions/0000/resourceGroups/rg-prod/providers/Microsoft.Storage/storageAccounts/acmedocs' or the scope is invalid."`
	// Key Vault's RBAC refusal: the .NET SDK's RequestFailedException
	// content, and the Python SDK's HttpResponseError logged as JSON.
	kvDotnet := `{"error":{"code":"Forbidden","message":"Caller is not authorized to perform action on resource.\r\nIf role assignments, deny assignments or role definitions were changed recently, please observe propagation time.\r\nCaller: appid=0b5e7a21-4c9d-4f1e-8a36-2d7f9c1e5b40;oid=7e2c4a19-1d3b-4f58-9a60-b8c1e3f5d7a2;iss=https://sts.windows.net/11111111-2222-3333-4444-555555555555/\r\nAction: 'Microsoft.KeyVault/vaults/secrets/getSecret/action'\r\nResource: '/subscriptions/0000/resourcegroups/rg-shop/providers/microsoft.keyvault/vaults/kv-shop-prod/secrets/db-password'\r\nAssignment: (not found)\r\nDenyAssignmentId: null\r\nDecisionReason: null \r\nVault: kv-shop-prod;location=northeurope\r\n","innererror":{"code":"ForbiddenByRbac"}}}`
	kvPython := `{"levelname":"ERROR","name":"app.secrets","message":"(Forbidden) Caller is not authorized to perform action on resource. If role assignments, deny assignments or role definitions were changed recently, please observe propagation time. Caller: appid=3f9a0c5e-6b1d-4e27-8c43-a5d9e1f7b302;oid=9c1e5b40-2d7f-4f1e-8a36-0b5e7a214c9d;iss=https://sts.windows.net/1111/ Action: 'Microsoft.KeyVault/vaults/keys/unwrap/action' Resource: '/subscriptions/0000/resourcegroups/rg-shop/providers/microsoft.keyvault/vaults/kv-shop-keys/keys/cmk' Assignment: (not found) DenyAssignmentId: null DecisionReason: null Vault: kv-shop-keys;location=northeurope Code: Forbidden Inner error: {\"code\": \"ForbiddenByRbac\"}"}`
	newIdentity := evidence.Change{Timestamp: win.Start.Add(-40 * time.Minute), Service: "vault", Kind: "deploy",
		Description: "vault 1.4.0: move from pod identity to Azure Workload Identity (new managed identity id-vault-prod)"}
	expired := `2026-07-08T10:30:02Z ERROR upload failed: ExpiredToken: The security token included in the request is expired`
	plain403 := `2026-07-08T10:30:02Z ERROR GET https://api.partner.example/v1/rates -> 403 Forbidden`
	iamChange := evidence.Change{Timestamp: win.Start.Add(-18 * time.Hour), Service: "vault", Kind: "infra",
		Description: "terraform apply iam/vault: merge vault-server-kms and vault-server-snapshots into vault-server-base (policy v7), detach old policies (PR #812)"}
	unrelated := evidence.Change{Timestamp: win.Start.Add(-2 * time.Hour), Service: "checkout", Kind: "infra", Description: "rotate IAM policy of checkout-role"}
	cases := []struct {
		name                      string
		line                      string
		earlier                   []evidence.Change
		action, principal, change string // action "": no finding
	}{
		{"Vault awskms seal, IAM change the day before", vault, []evidence.Change{iamChange, unrelated}, "kms:Decrypt", "arn:aws:sts::481516234200:assumed-role/vault-server/aws-go-sdk-1720434231812", "terraform apply iam/vault"},
		{"external-secrets, Secrets Manager", eso, []evidence.Change{unrelated}, "secretsmanager:GetSecretValue", "arn:aws:sts::210987654321:assumed-role/eso-payments/external-secrets", ""},
		{"Google Cloud KMS permission", gcp, nil, "cloudkms.cryptoKeyVersions.useToDecrypt", "docs-sa@acme-prod.iam.gserviceaccount.com", ""},
		{"Azure RBAC", azure, nil, "Microsoft.Storage/storageAccounts/listKeys/action", "f3c2a1b0-1111-2222-3333-444455556666", ""},
		{"Key Vault RBAC, .NET SDK, workload moved to a new identity", kvDotnet, []evidence.Change{newIdentity}, "Microsoft.KeyVault/vaults/secrets/getSecret/action", "appid=0b5e7a21-4c9d-4f1e-8a36-2d7f9c1e5b40", "move from pod identity"},
		{"Key Vault RBAC, Python SDK", kvPython, nil, "Microsoft.KeyVault/vaults/keys/unwrap/action", "appid=3f9a0c5e-6b1d-4e27-8c43-a5d9e1f7b302", ""},
		{"expired token is not a policy denial", expired, nil, "", "", ""},
		{"a partner's 403 is not a policy denial", plain403, nil, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("vault", false, 0, c.line, c.line)}, Earlier: c.earlier, Window: win}
			fs := detectCloudDenied(ev, nil)
			if c.action == "" {
				if len(fs) != 0 {
					t.Fatalf("finding for %q: %+v", c.line, fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v", fs)
			}
			f := fs[0]
			if f.fact("action") != c.action || f.fact("principal") != c.principal {
				t.Errorf("action %q principal %q", f.fact("action"), f.fact("principal"))
			}
			if !strings.Contains(f.fact("iam_change"), c.change) || c.change == "" && f.fact("iam_change") != "" {
				t.Errorf("iam change %q, want %q", f.fact("iam_change"), c.change)
			}
			h := &Hypothesis{Kind: KindCloudDenied, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.action, "IAM", "access denied")
			if strings.Contains(c.line, "Assignment: (not found)") {
				wantDescribed(t, h, Scope{}, "no role assignment", deniedResourceName(f.fact("resource")))
			}
			if c.change != "" && matchLine(newIdentityRE, c.change+" "+f.fact("iam_change")) {
				wantDescribed(t, h, Scope{}, "new identity")
			}
			if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[0].Action, c.action) {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
	// The log rule takes the denial before the generic authentication
	// failure, and leaves the others to it.
	if k, _ := classifyForTest(vault); k != KindCloudDenied {
		t.Errorf("vault line classified %q", k)
	}
	if k, _ := classifyForTest(plain403); k == KindCloudDenied {
		t.Errorf("plain 403 classified as a policy denial")
	}
}

func classifyForTest(line string) (Kind, bool) {
	for _, r := range logRules {
		if r.re.MatchString(line) {
			return r.kind, true
		}
	}
	return "", false
}

// A scaler refused the queue it scales on: the denial names the queue, so
// the autoscaler that cannot read its external metric and the queue's
// backlog are its consequences, and the service it scales is related.
func TestCloudDeniedScaler(t *testing.T) {
	keda := `2026-11-25T09:00:00Z	ERROR	scale_handler	error getting scale decision	{"scaledobject.Name": "invoice-worker", "scaledObject.Namespace": "billing", "scaleTarget.Name": "invoice-worker", "error": "operation error SQS: GetQueueAttributes, https response error StatusCode: 403, RequestID: 62694646, api error AccessDenied: User: arn:aws:sts::418273645091:assumed-role/keda-operator-prod/aws-go-sdk-1795593431 is not authorized to perform: sqs:getqueueattributes on resource: arn:aws:sqs:eu-west-1:418273645091:invoice-jobs because no identity-based policy allows the sqs:getqueueattributes action"}`
	// KEDA's Google Pub/Sub scaler, refused by IAM.
	pubsub := `2026-11-25T09:00:00Z	ERROR	scale_handler	error getting scale decision	{"scaledobject.Name": "report-builder", "scaleTarget.Name": "report-builder", "error": "rpc error: code = PermissionDenied desc = Permission 'monitoring.timeSeries.list' denied on resource 'projects/acme/subscriptions/report-jobs' (or it may not exist)."}`
	iam := evidence.Change{Timestamp: win.Start.Add(-5 * time.Minute), Service: "iam", Kind: "infra", Description: "terraform: least-privilege for keda-operator-prod: sqs:GetQueueAttributes limited to keda-*"}
	cases := []struct {
		name, line, service, queue string
		change                     []evidence.Change
		wantChange                 bool
	}{
		{"KEDA aws-sqs-queue scaler", keda, "invoice-worker", "invoice-jobs", []evidence.Change{iam}, true},
		{"KEDA gcp-pubsub scaler", pubsub, "report-builder", "report-jobs", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("keda-operator", false, 0, c.line, c.line)}, Changes: c.change, Window: win, Scope: Scope{Service: c.service}}
			f := onlyFinding(t, detectCloudDenied(ev, nil), "keda-operator")
			if !slices.Contains(f.Related, c.service) {
				t.Errorf("related %v, want %s", f.Related, c.service)
			}
			if (f.fact("iam_change") != "") != c.wantChange {
				t.Errorf("iam change %q", f.fact("iam_change"))
			}
			h := &Hypothesis{Kind: KindCloudDenied, Subject: f.Subject, Primary: []*Finding{f}}
			blind := &Finding{Kind: KindHPABlind, Subject: "keda-hpa-" + c.service, Evidence: []string{"FailedGetExternalMetric: unable to get external metric billing/s0-queue-" + c.queue}}
			backlog := &Finding{Kind: KindBacklog, Subject: c.queue}
			other := &Finding{Kind: KindBacklog, Subject: "emails"}
			if !cloudDenied.related(h, blind) || !cloudDenied.related(h, backlog) || cloudDenied.related(h, other) {
				t.Errorf("related: autoscaler %v, backlog %v, another queue %v", cloudDenied.related(h, blind), cloudDenied.related(h, backlog), cloudDenied.related(h, other))
			}
			h.Support = []*Finding{blind, backlog}
			wantDescribed(t, h, Scope{Service: c.service}, "does not scale "+c.service, "backlog of "+c.queue)
		})
	}
}
