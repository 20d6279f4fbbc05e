package analyst

import "testing"

func TestClockSkewLines(t *testing.T) {
	testLines(t, clockSkew, []lineCase{
		{`{"level":"warn","msg":"token validation failed","err":"Token used before issued"}`, KindClockSkew},
		{"jwt not yet valid", KindClockSkew},
		{"chronyd[812]: System clock wrong by 96.214 seconds", KindClockSkew},
		{"chronyd[812]: Can't synchronise: no selectable sources (2 unreachable)", KindClockSkew},
		{"systemd-timesyncd: time not synchronized, retrying", KindClockSkew},
		{"botocore.exceptions.ClientError: An error occurred (RequestTimeTooSkewed) when calling the PutObject operation: The difference between the request time and the current time is too large.", KindClockSkew},
		{`<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time and the current time is too large.</Message></Error>`, KindClockSkew},
		{"com.amazonaws.services.dynamodbv2.model.AmazonDynamoDBException: Signature expired: 20261124T104501Z is now earlier than 20261124T105001Z (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: InvalidSignatureException)", KindClockSkew},
		{"ERROR upload failed: AccessDenied: Access Denied (Service: S3, Status Code: 403)", ""},
		{"INFO session token refreshed, valid for 3600s", ""},
		{"WARN session expired, please log in again", ""},
	})
}

// TestClockSkewSignedRequests: a cloud API's refusal of signed requests
// is described as such, not as tokens used before issued.
func TestClockSkewSignedRequests(t *testing.T) {
	f := Finding{Kind: KindClockSkew, Subject: "uploader", Weight: 0.9}
	f.setFact("line", "error=An error occurred (RequestTimeTooSkewed) when calling the PutObject operation")
	h := &Hypothesis{Kind: KindClockSkew, Subject: "uploader", Primary: []*Finding{&f}}
	wantDescribed(t, h, Scope{}, "refuses its signed requests", "RequestTimeTooSkewed", "chrony")
}
