// Package kubetext reads kubectl output as a terminal shows it: a line
// "$ kubectl ..." followed by that command's output, repeated. It turns
// describe pages, get tables (plain and -o wide), event tables, logs, top
// rows, rollout status and kubectl's NotFound answers into typed
// Kubernetes objects, events, log lines, usage samples and absences
// holding only what the text shows; what a text form does not show stays
// unset (never guessed). Output of get -o yaml|json inside a
// transcript is decoded as structured objects.
//
// The command line gives the kind, namespace and container (-n NS,
// --namespace=NS, -A, -c C, --previous/-p, "kind/name" and "kind name",
// the usual short names). Relative ages ("5m", "3h12m", "2d3h") are
// measured back from the capture time given to Parse.
//
// Parsing is bounded: lines longer than MaxLine are cut, and no more than
// MaxObjects objects, MaxEvents events and MaxLogLines log lines are kept;
// what is dropped is reported in Result.Skipped.
package kubetext

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Limits of one Parse call.
const (
	MaxLine     = 64 << 10 // bytes of one line; longer lines are cut
	MaxObjects  = 20000    // objects kept
	MaxEvents   = 50000    // events kept
	MaxLogLines = 200000   // log lines kept, over all logs
	MaxSkips    = 1000     // skipped commands reported
	MaxAbsent   = 1000     // NotFound answers kept
)

// SourceAnnotation is set on every object Parse returns; its value names the
// text form it came from ("describe", "get", "get-wide"), so a reader can
// prefer a structured copy of the same object and knows the object is
// partial. Objects decoded from -o yaml|json carry no such annotation.
const SourceAnnotation = "rootcause.dev/kubectl-text"

// Result is what a transcript holds.
type Result struct {
	// Objects are typed objects (*corev1.Pod, *appsv1.Deployment,
	// *appsv1.ReplicaSet, *appsv1.StatefulSet, *appsv1.DaemonSet,
	// *batchv1.Job, *batchv1.CronJob, *corev1.Node, *corev1.Service,
	// *corev1.PersistentVolumeClaim, *corev1.PersistentVolume,
	// *networkingv1.Ingress, *autoscalingv2.HorizontalPodAutoscaler,
	// *corev1.ConfigMap, *corev1.Secret (key names or counts only),
	// *corev1.ResourceQuota, *corev1.LimitRange, *corev1.Endpoints,
	// *corev1.Namespace, *storagev1.StorageClass, and anything decoded
	// from -o yaml|json) with TypeMeta set. Namespace
	// comes from the command line or the text. Objects that several
	// commands show are merged: a describe page completes a table row.
	Objects []runtime.Object
	// Generic are the objects of -o yaml|json outputs of kinds without a
	// Go type (custom resources), read generically: metadata, the objects
	// their spec names, status conditions.
	Generic []evidence.GenericObject
	// Events come from describe "Events:" sections, kubectl get events
	// and kubectl events tables. InvolvedObject is set from the object the
	// section belongs to or the table's OBJECT column; times from the
	// relative ages.
	Events []corev1.Event
	// Logs are the outputs of kubectl logs, one per command.
	Logs []Log
	// Usage are the rows of kubectl top pod|node.
	Usage []Usage
	// Rollouts are what kubectl rollout status commands stated; each is
	// also put on the transcript's copy of its workload, if any.
	Rollouts []Rollout
	// Absent are the objects kubectl answered NotFound for ("Error from
	// server (NotFound): secrets "x" not found"): evidence that they did
	// not exist when the command ran, as a live API's 404 is. No object is
	// made of them.
	Absent []Absence
	// Outputs are the outputs of commands that are not Kubernetes state:
	// kubectl exec (in a container), other programs, and kubectl commands
	// whose output is not read into objects, kept verbatim.
	Outputs []Output
	// Histories are what kubectl rollout history printed.
	Histories []History
	// Permissions are kubectl auth can-i answers.
	Permissions []Permission
	// Releases are the Helm release revisions helm history, helm list and
	// helm status printed (their output is kept in Outputs too).
	Releases []Release
	// Skipped lists what was not understood and why.
	Skipped []Skip
}

// Log is the output of one kubectl logs command.
type Log struct {
	Namespace string // from -n; empty when the command did not say
	Pod       string
	Container string // from -c; empty when the command did not say
	Previous  bool   // --previous / -p
	Line      int    // line number of the command in the transcript
	Lines     []string
}

// Usage is one row of kubectl top: a pod (or a pod's container with
// --containers) or a node. Percentages are -1 when not shown.
type Usage struct {
	Kind          string // "Pod" or "Node"
	Namespace     string
	Name          string
	Container     string
	CPU           resource.Quantity
	Memory        resource.Quantity
	CPUPercent    int
	MemoryPercent int
	Time          time.Time // the capture time
	Line          int       // 1-based line of the row
}

// Absence is one object kubectl answered NotFound for.
type Absence struct {
	Kind      string // "Secret", "Pod"...
	Namespace string // from -n; empty for cluster-scoped kinds or when the command did not say
	Name      string
	Line      int    // 1-based line of kubectl's error
	Command   string // the command line, without "$ "
	Message   string // kubectl's error line
}

// Skip is one command (or part of one) that was not understood.
type Skip struct {
	Line    int    // 1-based line of the command (or of the part skipped)
	Command string // the command line, without "$ "
	Reason  string
}

// Parse reads a terminal transcript. Text before the first "$ kubectl"
// line, and commands other than kubectl, are skipped and reported.
// capturedAt anchors relative ages; the zero time leaves times unset.
func Parse(data []byte, capturedAt time.Time) *Result {
	p := newParser(capturedAt)
	p.run(data)
	return p.result()
}
