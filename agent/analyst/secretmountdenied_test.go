package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The kubelet's FailedMount of a Secrets Store CSI volume whose provider
// was refused the secret, as each provider words it, is the pod's
// identity lacking the permission: the identity, the action and the
// secret are read; a FailedMount for another reason stays a mount failure.
func TestSecretMountDenied(t *testing.T) {
	cases := []struct {
		name, msg                         string
		want                              Kind
		secret, identity, action, provide string
	}{
		{"AWS Secrets Manager, IRSA role",
			`MountVolume.SetUp failed for volume "secrets-store" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod billing/invoicer-6d5f-abcde, err: rpc error: code = Unknown desc = us-east-1: Failed fetching secret prod/billing/stripe-key: AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/invoicer-irsa/secrets-store-csi-driver-provider-aws is not authorized to perform: secretsmanager:GetSecretValue on resource: prod/billing/stripe-key because no identity-based policy allows the secretsmanager:GetSecretValue action
	status code: 400, request id: 1c2e`,
			KindSecretMountDenied, "prod/billing/stripe-key", "IAM role invoicer-irsa", "secretsmanager:GetSecretValue", "AWS IAM"},
		{"AWS Parameter Store",
			`MountVolume.SetUp failed for volume "params" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod web/api-0, err: rpc error: code = Unknown desc = eu-west-1: Failed fetching parameters: AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/api-pod-role/eks-api is not authorized to perform: ssm:GetParameters on resource: arn:aws:ssm:eu-west-1:123456789012:parameter/web/api/token because no identity-based policy allows the ssm:GetParameters action`,
			KindSecretMountDenied, "", "IAM role api-pod-role", "ssm:GetParameters", "AWS IAM"},
		{"Google Secret Manager, Workload Identity",
			`MountVolume.SetUp failed for volume "mysecret" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod default/mypod, err: rpc error: code = Internal desc = failed to handle secret projects/my-project/secrets/db-pass/versions/latest: rpc error: code = PermissionDenied desc = Permission 'secretmanager.versions.access' denied for resource 'projects/my-project/secrets/db-pass/versions/latest' (or it may not exist).`,
			KindSecretMountDenied, "projects/my-project/secrets/db-pass/versions/latest", "", "secretmanager.versions.access", "Google Cloud IAM"},
		{"Azure Key Vault access policy",
			`MountVolume.SetUp failed for volume "secrets-store01-inline" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod default/busybox, err: rpc error: code = Unknown desc = failed to mount objects, error: failed to get objectType:secret, objectName:db-password, objectVersion:: keyvault.BaseClient#GetSecret: Failure responding to request: StatusCode=403 -- Original Error: autorest/azure: Service returned an error. Status=403 Code="Forbidden" Message="The user, group or application 'appid=3f1c2b7a-0000-4d6e-9f00-2b1c3d4e5f60;oid=8a7b;iss=https://sts.windows.net/72f988bf/' does not have secrets get permission on key vault 'kv-prod;location=westeurope'." InnerError={"code":"AccessDenied"}`,
			KindSecretMountDenied, "db-password", "Azure identity appid=3f1c2b7a-0000-4d6e-9f00-2b1c3d4e5f60", "secrets get", "Azure Key Vault"},
		{"Azure Key Vault RBAC",
			`MountVolume.SetUp failed for volume "kv" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod app/web-1, err: rpc error: code = Unknown desc = failed to mount objects, error: failed to get objectType:secret, objectName:api-key, objectVersion:: keyvault.BaseClient#GetSecret: Failure responding to request: StatusCode=403 -- Original Error: autorest/azure: Service returned an error. Status=403 Code="Forbidden" Message="Caller is not authorized to perform action on resource.\r\nCaller: appid=11111111-2222-3333-4444-555555555555;oid=x\r\nAction: 'Microsoft.KeyVault/vaults/secrets/getSecret/action'\r\nResource: '/subscriptions/x/resourcegroups/rg/providers/microsoft.keyvault/vaults/kv-web/secrets/api-key'" InnerError={"code":"ForbiddenByRbac"}`,
			KindSecretMountDenied, "api-key", "Azure identity appid=11111111-2222-3333-4444-555555555555", "Microsoft.KeyVault/vaults/secrets/getSecret/action", "Azure Key Vault"},
		{"HashiCorp Vault provider",
			`MountVolume.SetUp failed for volume "vault-db" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod app/web-0, err: rpc error: code = Unknown desc = error making mount request: couldn't read secret "db-password": Error making API request. URL: GET http://vault.vault:8200/v1/secret/data/db-pass Code: 403. Errors: * 1 error occurred: * permission denied`,
			KindSecretMountDenied, "db-password", "", "", "Vault"},
		{"a secrets store driver not installed is no denial",
			`MountVolume.SetUp failed for volume "secrets-store" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name secrets-store.csi.k8s.io not found in the list of registered CSI drivers`,
			"", "", "", "", ""},
		{"a volume attached elsewhere is no denial",
			`Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data kube-api-access-x]: timed out waiting for the condition`,
			KindMountFailure, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := corev1.Event{Reason: "FailedMount", Type: "Warning", Message: c.msg, Count: 12,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "app", Name: "web-7d9f4c6b88-b2f7p"},
				FirstTimestamp: metav1.NewTime(win.Start.Add(5 * time.Minute)), LastTimestamp: metav1.NewTime(win.End.Add(-time.Minute))}
			fs := DetectEvents([]corev1.Event{e}, nil, win)
			if c.want == "" {
				if len(fs) == 1 && fs[0].Kind == KindSecretMountDenied {
					t.Fatalf("not a denial: %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != c.want {
				t.Fatalf("want one %s finding, got %+v", c.want, fs)
			}
			f := fs[0]
			if c.want != KindSecretMountDenied {
				return
			}
			if c.secret != "" && f.fact("secret") != c.secret || f.fact("identity") != c.identity || f.fact("action") != c.action || f.fact("provider") != c.provide {
				t.Errorf("secret %q identity %q action %q provider %q; want %q %q %q %q", f.fact("secret"), f.fact("identity"), f.fact("action"), f.fact("provider"), c.secret, c.identity, c.action, c.provide)
			}
			if f.fact("why") == "" {
				t.Error("the provider's refusal is the why of the mount failure")
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
			d := secretMountDeniedM.describe(h, Scope{})
			for _, want := range []string{"ContainerCreating", c.provide, orWord(c.action, "denied")} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
		})
	}
}

// The role's policy, as the aws CLI prints it, says what it grants
// instead; a change that adds the refused secret triggers the refusal, one
// that says nothing of it does not.
func TestSecretMountGrantsAndTrigger(t *testing.T) {
	msg := `MountVolume.SetUp failed for volume "secrets-store" : rpc error: code = Unknown desc = failed to mount secrets store objects for pod pricing/worker-7d9f-b2f7p, err: rpc error: code = Unknown desc = eu-west-1: Failed fetching secret prod/pricing/fx-key: AccessDeniedException: User: arn:aws:sts::210987654321:assumed-role/worker-irsa/secrets-store-csi-driver-provider-aws is not authorized to perform: secretsmanager:GetSecretValue on resource: prod/pricing/fx-key because no identity-based policy allows the secretsmanager:GetSecretValue action`
	f := Finding{Kind: KindSecretMountDenied, Subject: "worker", Source: SrcEvents, Time: win.Start}
	secretMountFacts(&f, msg)
	policy := evidence.CommandOutput{Command: "aws iam get-role-policy --role-name worker-irsa --policy-name secrets-read", Lines: strings.Split(`{
    "RoleName": "worker-irsa",
    "PolicyName": "secrets-read",
    "PolicyDocument": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": "arn:aws:secretsmanager:eu-west-1:210987654321:secret:prod/pricing/db-credentials-*"
            }
        ]
    }
}`, "\n")}
	fs := detectSecretMountGrants(&Gathered{Commands: []evidence.CommandOutput{policy}}, []Finding{f})
	if len(fs) != 1 || !strings.Contains(fs[0].fact("granted"), "secrets-read grants it only on arn:aws:secretsmanager:eu-west-1:210987654321:secret:prod/pricing/db-credentials-*") {
		t.Fatalf("want the policy's grant read, got %+v", fs)
	}
	// A policy that covers the secret says nothing against it.
	policy.Lines = []string{`{"PolicyName": "all", "PolicyDocument": {"Statement": {"Effect": "Allow", "Action": "secretsmanager:*", "Resource": "arn:aws:secretsmanager:eu-west-1:210987654321:secret:prod/pricing/*"}}}`}
	if fs := detectSecretMountGrants(&Gathered{Commands: []evidence.CommandOutput{policy}}, []Finding{f}); len(fs) != 0 {
		t.Errorf("a policy that grants the secret is no evidence against it: %+v", fs)
	}
	h := &Hypothesis{Kind: KindSecretMountDenied, Subject: "worker", Primary: []*Finding{&f}}
	adds := &Finding{Kind: KindDeploy, Subject: "worker", Facts: map[string]string{"description": "worker 2.3.0: SecretProviderClass gains prod/pricing/fx-key"}}
	other := &Finding{Kind: KindDeploy, Subject: "worker", Facts: map[string]string{"description": "worker 2.3.1: faster rounding"}}
	if !secretMountDeniedM.fitsChange(h, adds) || secretMountDeniedM.fitsChange(h, other) {
		t.Error("the change adding the refused secret triggers the refusal; an unrelated deploy does not")
	}
}
