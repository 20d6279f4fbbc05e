package analyst

import (
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A CloudWatch log group named for a kind of workload, not for one
// ("/aws/batch/job": every AWS Batch job writes there; "/ecs/containers",
// "/aws/containerinsights/.../application") holds the logs of whatever ran:
// the job or container a line is of is the first part of its log stream's
// name ("thumbs-v3-backfill/default/c08be054...": job definition, container,
// task id, as the awslogs driver names streams). Such a group's subject is
// the workload its streams name, when one workload writes most of its
// lines; never the group's generic last word, which names no system.

// genericGroupNames are the last words of log groups shared by many
// workloads.
var genericGroupNames = map[string]bool{"job": true, "jobs": true, "batch": true, "containers": true, "container": true,
	"task": true, "tasks": true, "ecs": true, "default": true, "host": true, "dataplane": true, "performance": true}

// streamIDRE is a stream part that names no workload: a date (Lambda's
// "2026/11/19/[$LATEST]..."), a version marker, an id.
var streamIDRE = regexp.MustCompile(`^(?:\d+|\[.*\]\w*|[0-9a-f]{16,}|i-[0-9a-f]{8,}|[0-9a-f-]{36})$`)

// streamNameRE is a stream part that can name a workload.
var streamNameRE = regexp.MustCompile(`^[A-Za-z0-9][\w-]{1,62}$`)

// cloudWatchGroupSubject names the system a CloudWatch log group's lines
// are of: the group's own name ("/aws/lambda/orders" → "orders"), or,
// when that name is a generic word, the workload most of its streams
// name.
func cloudWatchGroupSubject(group string, lines []evidence.LogLine) string {
	subject := subjectOfSource(group)
	if !genericGroupNames[strings.ToLower(subject)] && !genericLogNames[strings.ToLower(subject)] {
		return subject
	}
	count := map[string]int{}
	n := 0
	prefix := strings.TrimRight(group, "/") + "/"
	for _, l := range lines {
		stream, ok := strings.CutPrefix(l.Source, prefix)
		if !ok || stream == "" {
			continue
		}
		n++
		first, _, _ := strings.Cut(stream, "/")
		if !matchLine(streamNameRE, first) || matchLine(streamIDRE, first) {
			continue
		}
		count[first]++
	}
	best := mostNamed(count)
	// One workload writes most of the lines: the group is its log.
	if best != "" && 5*count[best] >= 3*n {
		return best
	}
	return subject
}
