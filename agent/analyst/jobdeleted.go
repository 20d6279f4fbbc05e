package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Job that is gone: "kubectl get jobs" shows nothing and the question
// asks whether it ran, whether someone deleted it. The API server's audit
// log answers with the delete and who made it. Most often no one did:
// Kubernetes deletes a finished Job itself, with its pods and their logs,
// ttlSecondsAfterFinished after it completed or failed (the
// TTL-after-finished controller); otherwise a person or a tool did, by
// name. Any answer about the Job's workload says so, beside why the run
// failed.

// jobDelete is one delete of a Job the audit log recorded.
type jobDelete struct {
	Namespace, Job string
	By             string // the user or service account that deleted it
	At             time.Time
}

// ttlController is the TTL-after-finished controller's service account.
const ttlController = "system:serviceaccount:kube-system:ttl-after-finished-controller"

var (
	// auditJobRE: the Job deleted, from a request URI or a resource name.
	auditJobRE = regexp.MustCompile(`namespaces/([a-z0-9-]+)/jobs/([a-z0-9][a-z0-9.-]*[a-z0-9])$`)
	// ttlSettingRE: a Job's or a job template's TTL, in YAML or JSON.
	ttlSettingRE = regexp.MustCompile(`"?ttlSecondsAfterFinished"?\s*:\s*(\d+)`)
	// cronRunRE: the scheduled-time suffix of a CronJob's Job.
	cronRunRE = regexp.MustCompile(`-\d{8,}$`)
)

// auditJobDeletes reads the deletes of Jobs among the lines of an API
// server's audit log, in the forms it is shipped: the audit.k8s.io Event
// (EKS and AKS control plane logs, a log file's lines), and GKE's Cloud
// Audit Log entry (protoPayload with methodName
// io.k8s.batch.v1.jobs.delete).
func auditJobDeletes(lines []evidence.LogLine) []jobDelete {
	var out []jobDelete
	for _, l := range lines {
		if !strings.Contains(l.Text, "jobs") || !strings.Contains(l.Text, "delete") {
			continue
		}
		var ev struct {
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			User       struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource, Namespace, Name, Subresource string
			} `json:"objectRef"`
			Received     string `json:"requestReceivedTimestamp"`
			ProtoPayload struct {
				MethodName   string `json:"methodName"`
				ResourceName string `json:"resourceName"`
				AuthInfo     struct {
					PrincipalEmail string `json:"principalEmail"`
				} `json:"authenticationInfo"`
			} `json:"protoPayload"`
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(l.Text)), &ev) != nil {
			continue
		}
		d := jobDelete{At: l.Time}
		switch {
		case ev.Verb == "delete" && ev.ObjectRef.Resource == "jobs" && ev.ObjectRef.Subresource == "" && ev.ObjectRef.Name != "":
			d.Namespace, d.Job, d.By = ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.User.Username
			if t, err := time.Parse(time.RFC3339Nano, ev.Received); err == nil {
				d.At = t
			}
		case strings.HasPrefix(ev.ProtoPayload.MethodName, "io.k8s.batch.") && strings.HasSuffix(ev.ProtoPayload.MethodName, ".jobs.delete"):
			m := findSubmatch(auditJobRE, ev.ProtoPayload.ResourceName)
			if m == nil {
				continue
			}
			d.Namespace, d.Job, d.By = m[1], m[2], ev.ProtoPayload.AuthInfo.PrincipalEmail
			if t, err := time.Parse(time.RFC3339Nano, ev.Timestamp); err == nil {
				d.At = t
			}
		default:
			continue
		}
		out = append(out, d)
	}
	return out
}

// removedJobs is the sentence an answer adds when a Job of a subject of
// the question was deleted: by the TTL-after-finished controller (after
// which TTL), or by whom; "" when the audit log shows no such delete.
func removedJobs(ev *Gathered, sc Scope) string {
	var out []string
	seen := map[string]bool{}
	for _, d := range ev.JobDeletes {
		if seen[d.Namespace+"/"+d.Job] || !jobOfSubject(d.Job, sc) {
			continue
		}
		seen[d.Namespace+"/"+d.Job] = true
		var s string
		if d.By == ttlController {
			s = fmt.Sprintf("The Job %s/%s is gone because Kubernetes deleted it itself, not a person: the TTL-after-finished controller removed it", d.Namespace, d.Job)
			if !d.At.IsZero() {
				s += " at " + ts(d.At)
			}
			if ttl := jobTTL(ev, d.Namespace, d.Job); ttl > 0 {
				s += fmt.Sprintf(", %s after it finished (ttlSecondsAfterFinished: %d)", durationWords(time.Duration(ttl)*time.Second), ttl)
			} else {
				s += ", its ttlSecondsAfterFinished after it finished"
			}
			s += ", with its pods and their logs"
		} else {
			s = fmt.Sprintf("The Job %s/%s was deleted", d.Namespace, d.Job)
			if !d.At.IsZero() {
				s += " at " + ts(d.At)
			}
			s += " by " + orWord(d.By, "an unnamed user") + " (the API server's audit log)"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, ". ") + "."
}

// jobOfSubject reports whether a Job is a run of a subject of the
// question (the Job itself or its CronJob: name-<schedule index>).
func jobOfSubject(job string, sc Scope) bool {
	for _, s := range sc.Subjects() {
		if strings.EqualFold(job, s) || strings.HasPrefix(strings.ToLower(job), strings.ToLower(s)+"-") {
			return true
		}
	}
	return false
}

// jobTTL is the ttlSecondsAfterFinished of a Job: its own, its CronJob's
// job template's, or what a command's output of the Job or CronJob shows;
// 0 when unknown.
func jobTTL(ev *Gathered, ns, job string) int {
	ttlOf := func(s *batchv1.JobSpec) int {
		if s.TTLSecondsAfterFinished != nil {
			return int(*s.TTLSecondsAfterFinished)
		}
		return 0
	}
	for i := range ev.K8s.Jobs {
		if j := &ev.K8s.Jobs[i]; j.Name == job && (j.Namespace == "" || j.Namespace == ns) {
			if n := ttlOf(&j.Spec); n > 0 {
				return n
			}
		}
	}
	// A CronJob's run is named after it and its scheduled time, in
	// minutes.
	cronJob := cronRunRE.ReplaceAllString(job, "")
	for i := range ev.K8s.CronJobs {
		c := &ev.K8s.CronJobs[i]
		if strings.HasPrefix(job, c.Name+"-") && (c.Namespace == "" || c.Namespace == ns) {
			cronJob = c.Name
			if n := ttlOf(&c.Spec.JobTemplate.Spec); n > 0 {
				return n
			}
		}
	}
	// The spec printed by a command not read into an object (a get -o
	// yaml cut with sed).
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, job) && (cronJob == job || !strings.Contains(c.Command, cronJob)) {
			continue
		}
		if m := findSubmatch(ttlSettingRE, strings.Join(c.Lines, "\n")); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return n
			}
		}
	}
	return 0
}
