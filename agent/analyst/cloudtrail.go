package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// CloudTrail records every call to a cloud provider's API; a trail
// delivered to a CloudWatch log group is a log whose lines are events
// (one JSON object each). The calls that change something — a key
// scheduled for deletion, a bucket policy put, a role deleted, a
// security group rule revoked — are changes like a deploy, made by a
// person, a pipeline or a job: they are read as changes, and may trigger
// what follows them.

// cloudTrailEvent is the part of a CloudTrail event read.
type cloudTrailEvent struct {
	EventTime    time.Time      `json:"eventTime"`
	EventSource  string         `json:"eventSource"`
	EventName    string         `json:"eventName"`
	ErrorCode    string         `json:"errorCode"`
	ReadOnly     *bool          `json:"readOnly"`
	EventID      string         `json:"eventID"`
	Request      map[string]any `json:"requestParameters"`
	UserIdentity struct {
		Type      string `json:"type"`
		ARN       string `json:"arn"`
		InvokedBy string `json:"invokedBy"`
		UserName  string `json:"userName"`
	} `json:"userIdentity"`
	Resources []struct {
		ARN string `json:"ARN"`
	} `json:"resources"`
}

var (
	cloudTrailEventRE = regexp.MustCompile(`"eventVersion"\s*:.*"eventSource"\s*:`)
	// mutatingCallRE is an API call that changes something.
	mutatingCallRE = regexp.MustCompile(`^(Create|Delete|Put|Update|Modify|Schedule|Disable|Enable|Attach|Detach|Revoke|Authorize|Associate|Disassociate|Remove|Add|Set|Replace|Rotate|Cancel|Stop|Terminate|Reboot|Restore|Change|Deregister|Register|Reset|Tag|Untag)`)
)

// parseCloudTrail reads a CloudTrail event from a log line (nil when it
// is not one).
func parseCloudTrail(line string) *cloudTrailEvent {
	if !matchLine(cloudTrailEventRE, line) {
		return nil
	}
	i := strings.Index(line, "{")
	if i < 0 {
		return nil
	}
	var e cloudTrailEvent
	if err := json.Unmarshal([]byte(line[i:]), &e); err != nil || e.EventName == "" {
		return nil
	}
	return &e
}

// actor names who made the call: the role session or user, else the
// identity's ARN.
func (e *cloudTrailEvent) actor() string {
	u := e.UserIdentity
	switch {
	case u.ARN != "":
		if i := strings.LastIndex(u.ARN, ":"); i >= 0 {
			return u.ARN[i+1:]
		}
		return u.ARN
	case u.UserName != "":
		return u.UserName
	case u.InvokedBy != "":
		return u.InvokedBy
	}
	return orWord(u.Type, "unknown")
}

// target names what the call changed: the first resource's ARN tail or
// the request's identifying parameter.
func (e *cloudTrailEvent) target() string {
	for _, r := range e.Resources {
		if r.ARN != "" {
			return arnName(r.ARN)
		}
	}
	for _, k := range []string{"keyId", "bucketName", "roleName", "functionName", "groupId", "dBInstanceIdentifier", "tableName", "secretId", "name"} {
		if v, ok := e.Request[k].(string); ok && v != "" {
			return arnName(v)
		}
	}
	return strings.TrimSuffix(e.EventSource, ".amazonaws.com")
}

// arnName is the resource part of an ARN ("key/1234", "role/x"), or the
// string itself.
func arnName(s string) string {
	if !strings.HasPrefix(s, "arn:") {
		return s
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) == 6 {
		return parts[5]
	}
	return s
}

// cloudTrailChanges reads the calls that changed something from a trail's
// lines (successful, not read-only, made by a principal rather than by a
// service on its own behalf) as changes.
func cloudTrailChanges(lines []evidence.LogLine) []evidence.Change {
	var out []evidence.Change
	for _, l := range lines {
		e := parseCloudTrail(l.Text)
		if e == nil || e.ErrorCode != "" || e.ReadOnly != nil && *e.ReadOnly || !matchLine(mutatingCallRE, e.EventName) || e.UserIdentity.Type == "AWSService" {
			continue
		}
		at := e.EventTime
		if at.IsZero() {
			at = l.Time
		}
		svc := strings.TrimSuffix(e.EventSource, ".amazonaws.com")
		out = append(out, evidence.Change{Timestamp: at, Service: svc, Kind: "infra",
			Description: fmt.Sprintf("CloudTrail %s %s on %s by %s", svc, e.EventName, e.target(), e.actor()),
			Revision:    e.EventID, Author: e.actor(), Source: "cloudtrail"})
	}
	return out
}
