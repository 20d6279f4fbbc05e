package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDetectTargetsUnhealthy(t *testing.T) {
	jsonOut := []string{`{`, `    "TargetHealthDescriptions": [`, `        {`, `            "Target": {`, `                "Id": "i-0a1b2c3d4e5f60718",`, `                "Port": 8080`, `            },`,
		`            "TargetHealth": {`, `                "State": "unhealthy",`, `                "Reason": "Target.ResponseCodeMismatch",`, `                "Description": "Health checks failed with these codes: [404]"`, `            }`, `        },`,
		`        {`, `            "Target": {`, `                "Id": "i-0b2c3d4e5f6071829",`, `                "Port": 8080`, `            },`,
		`            "TargetHealth": {`, `                "State": "healthy"`, `            }`, `        }`, `    ]`, `}`}
	groups := []string{`{`, `    "TargetGroupName": "web-tg",`, `    "HealthCheckPath": "/health/ready",`, `    "HealthCheckPort": "traffic-port",`, `    "Matcher": {`, `        "HttpCode": "200"`, `    },`, `}`}
	table := []string{
		`|  i-0a1f2e3d4c5b6a798  |  8443  |  healthy    |  None                             |  8443  |`,
		`|  i-0a3d4c5b6a7981029  |  8443  |  draining   |  Target.DeregistrationInProgress  |  8443  |`,
		`|  i-0b3c4b5a697880112  |  8443  |  initial    |  Elb.RegistrationInProgress       |  8443  |`,
		`|  i-0c1a2b3c4d5e6f708  |  8443  |  unhealthy  |  Target.Timeout                   |  8443  |`,
		`|  i-0c2b3c4d5e6f70819  |  8443  |  unhealthy  |  Target.Timeout                   |  8443  |`}
	instances := []string{`|  i-0a1f2e3d4c5b6a798  |  eu-west-1a  |  10.80.16.21   |`, `|  i-0c1a2b3c4d5e6f708  |  eu-west-1c  |  10.80.48.12   |`, `|  i-0c2b3c4d5e6f70819  |  eu-west-1c  |  10.80.49.95   |`}
	text := []string{"TARGETHEALTHDESCRIPTIONS\t80", "TARGET\t10.1.2.3\t80", "TARGETHEALTH\tRequest timed out\tTarget.Timeout\tunhealthy", "TARGETHEALTHDESCRIPTIONS\t80", "TARGET\t10.1.2.4\t80", "TARGETHEALTH\thealthy"}
	tests := []struct {
		name    string
		cmds    []evidence.CommandOutput
		want    []string
		nothing bool
	}{
		{name: "JSON with the health check path and curl", cmds: []evidence.CommandOutput{
			{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web-tg/6d0e", Lines: jsonOut},
			{Command: "aws elbv2 describe-target-groups --names web-tg", Lines: groups},
			{Command: "curl -s -o /dev/null -w '%{http_code}' http://10.0.0.1:8080/health/ready", Lines: []string{"404"}},
		}, want: []string{"1 of 2 targets", "ResponseCodeMismatch", "/health/ready", "answers 404"}},
		{name: "table with draining and initial, zones from instances", cmds: []evidence.CommandOutput{
			{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/api-tg/a41c --output table", Lines: table},
			{Command: "aws ec2 describe-instances --output table", Lines: instances},
		}, want: []string{"2 of 5 targets", "all in eu-west-1c", "draining", "initial", "Target.Timeout"}},
		{name: "text output of IP targets", cmds: []evidence.CommandOutput{
			{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/ip-tg/77 --output text", Lines: text},
		}, want: []string{"1 of 2 targets", "10.1.2.3", "Target.Timeout"}},
		{name: "all healthy", cmds: []evidence.CommandOutput{
			{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/ok-tg/77", Lines: text[3:]},
		}, nothing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectTargetsUnhealthy(&Gathered{Commands: tc.cmds}, nil)
			if tc.nothing {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %v", fs[0].Summary)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %d", len(fs))
			}
			h := &Hypothesis{Kind: KindTargetsUnhealthy, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := describeTargetsUnhealthy(h, Scope{}) + " " + strings.Join(fs[0].Evidence, " ")
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("%q missing from %q", w, d)
				}
			}
		})
	}
}
