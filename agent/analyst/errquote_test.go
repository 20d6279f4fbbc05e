package analyst

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

func TestClipMiddle(t *testing.T) {
	cases := []struct {
		name, in   string
		n          int
		head, tail string // the cut keeps both
	}{
		{"EBS CSI ProvisioningFailed keeps the KMS reason",
			`failed to provision volume with StorageClass "gp3-encrypted": rpc error: code = Internal desc = Could not create volume "pvc-7a1e3c5b-9d2f-4b8a-a6c4-e0f2d4b6a8c1": could not create volume in EC2: operation error EC2: CreateVolume, https response error StatusCode: 400, RequestID: 5c8e1f0a-3b7d-4e2c-9a6f-1d0b8c7e5a43, api error InvalidKMSKey.InvalidState: The KMS key provided is in an incorrect state`,
			240, `failed to provision volume with StorageClass "gp3-encrypted"`, "The KMS key provided is in an incorrect state"},
		{"KMS key pending deletion",
			`failed to provision volume with StorageClass "encrypted-gp3": rpc error: code = Internal desc = Could not create volume "pvc-0c1d": could not create volume in EC2: operation error EC2: CreateVolume, https response error StatusCode: 400, RequestID: 9f2e, api error KMSKeyNotAccessibleFault: arn:aws:kms:eu-west-1:111122223333:key/abcd is pending deletion`,
			160, "failed to provision volume", "is pending deletion"},
		{"multi-byte text is cut on rune boundaries",
			strings.Repeat("échec de la création du volume: ", 12) + "clé KMS désactivée",
			120, "échec", "clé KMS désactivée"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := clipMiddle(c.in, c.n)
			if !strings.HasPrefix(got, c.head) || !strings.HasSuffix(got, c.tail) || !strings.Contains(got, " … ") {
				t.Errorf("clipMiddle = %q", got)
			}
			if len(got) > c.n+len(" … ") || !utf8.ValidString(got) {
				t.Errorf("clipMiddle length %d (max %d) or invalid UTF-8: %q", len(got), c.n, got)
			}
		})
	}
	if got := clipMiddle("short error: reason", 240); got != "short error: reason" {
		t.Errorf("a short error is kept whole, got %q", got)
	}
}

func TestClaimKMSKey(t *testing.T) {
	cases := []struct {
		name, msg, problem string
	}{
		{"AWS EBS key in an incorrect state", `failed to provision volume with StorageClass "gp3-encrypted": rpc error: code = Internal desc = Could not create volume "pvc-7a": could not create volume in EC2: operation error EC2: CreateVolume, https response error StatusCode: 400, api error InvalidKMSKey.InvalidState: The KMS key provided is in an incorrect state`, "kms_key"},
		{"KMS key disabled", `failed to provision volume with StorageClass "enc": rpc error: code = Internal desc = Could not create volume "pvc-1": could not create volume in EC2: api error KMS.DisabledException: arn:aws:kms:us-east-1:1:key/2 is disabled.`, "kms_key"},
		{"capacity is no key problem", `failed to provision volume with StorageClass "gp3": rpc error: code = ResourceExhausted desc = Could not create volume "pvc-2": could not create volume in EC2: api error VolumeLimitExceeded: You have exceeded your maximum gp3 storage limit`, "provisioner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &corev1.Event{Reason: "ProvisioningFailed", Message: c.msg}
			problem, class := classifyClaimEvent(e)
			if problem != c.problem || class == "" {
				t.Fatalf("classifyClaimEvent = %q %q, want %q", problem, class, c.problem)
			}
			f := &Finding{Kind: KindVolumeProvision, Subject: "reports-db"}
			f.setFact("claim", "data-reports-db-0")
			f.setFact("problem", problem)
			f.setFact("storage_class", class)
			f.setFact("message", c.msg)
			d := volumeProvision.describe(&Hypothesis{Kind: KindVolumeProvision, Subject: "reports-db", Primary: []*Finding{f}}, Scope{})
			if tail := c.msg[len(c.msg)-20:]; !strings.Contains(d, tail) {
				t.Errorf("description lost the error's last clause %q: %s", tail, d)
			}
			if (problem == "kms_key") != strings.Contains(d, "KMS encryption key") {
				t.Errorf("description: %s", d)
			}
		})
	}
}

func TestJobLogStatusOnly(t *testing.T) {
	cases := []struct {
		lines     []string
		line      string // the line that says why
		stateOnly bool
		explained string
	}{
		{[]string{"2026-11-24 02:08:11,204 ERROR usage_export: reading warehouse credentials failed", "kubernetes.client.exceptions.ApiException: (403)", "Reason: Forbidden",
			`HTTP response body: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets \"warehouse-readonly\" is forbidden: User \"system:serviceaccount:data:usage-export\" cannot get resource \"secrets\" in API group \"\" in the namespace \"data\"","reason":"Forbidden","code":403}`},
			`secrets "warehouse-readonly" is forbidden: User "system:serviceaccount:data:usage-export" cannot get resource "secrets" in API group "" in the namespace "data"`, false, "rbac_denied"},
		{[]string{"kubernetes.client.exceptions.ApiException: (403)"}, "kubernetes.client.exceptions.ApiException: (403)", true, ""},
		{[]string{"psycopg2.OperationalError: FATAL:  password authentication failed for user \"export\""}, "psycopg2.OperationalError: FATAL:  password authentication failed for user \"export\"", false, ""},
	}
	for _, c := range cases {
		f := &Finding{Kind: KindJobFailed, Subject: "usage-export"}
		useLog(f, c.lines, "pod usage-export-1")
		if f.fact("line") != c.line || f.fact("explained_by") != c.explained {
			t.Errorf("useLog(%q): line %q explained_by %q", c.lines, f.fact("line"), f.fact("explained_by"))
		}
		if got := statusOnlyRE.MatchString(ReadableLine(f.fact("line"))); got != c.stateOnly {
			t.Errorf("statusOnly(%q) = %v", f.fact("line"), got)
		}
	}
}

func TestConfidenceStateOnly(t *testing.T) {
	for _, stateOnly := range []bool{false, true} {
		f := &Finding{Kind: KindJobFailed, Subject: "usage-export", Weight: 0.95}
		if stateOnly {
			f.setFact("state_only", "true")
		}
		c := confidence(&Analysis{Hypotheses: []*Hypothesis{{Kind: KindJobFailed, Subject: "usage-export", Score: 0.97, Primary: []*Finding{f}}}})
		if stateOnly && c > 70 || !stateOnly && c <= 70 {
			t.Errorf("state_only %v: confidence %v", stateOnly, c)
		}
	}
}
