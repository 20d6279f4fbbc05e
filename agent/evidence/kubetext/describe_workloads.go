package kubetext

import (
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// selector reads "app=checkout,tier=web" (equality terms only; set-based
// terms are left out).
func selector(s string) *metav1.LabelSelector {
	m := labelMap([]string{s})
	if m == nil {
		return nil
	}
	for k := range m {
		if strings.ContainsAny(k, " ()!") {
			delete(m, k)
		}
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// podTemplate reads a "Pod Template:" section.
func (p *parser) podTemplate(n *dnode) corev1.PodTemplateSpec {
	var t corev1.PodTemplateSpec
	if n == nil {
		return t
	}
	t.Labels = labelMap(n.child("Labels").values())
	t.Annotations = annotationMap(annotationItems(n.child("Annotations")))
	t.Spec.ServiceAccountName = n.get("Service Account")
	t.Spec.InitContainers, _ = p.containers(n.child("Init Containers"))
	t.Spec.Containers, _ = p.containers(n.child("Containers"))
	t.Spec.Volumes = volumes(n.child("Volumes"))
	t.Spec.NodeSelector = labelMap(n.child("Node-Selectors").values())
	t.Spec.Tolerations = tolerations(n.child("Tolerations").values())
	t.Spec.PriorityClassName = n.get("Priority Class Name")
	return t
}

// replicaCounts reads "3 desired | 1 updated | 4 total | 3 available | 1
// unavailable" and "1 current / 1 desired" into a map by word.
func replicaCounts(s string) map[string]int32 {
	m := map[string]int32{}
	for _, part := range regexp.MustCompile(`\s*[|/]\s*`).Split(s, -1) {
		f := strings.Fields(part)
		if len(f) < 2 {
			continue
		}
		if n, ok := atoi32(f[0]); ok {
			m[strings.ToLower(f[1])] = n
		}
	}
	return m
}

// conditionRows reads a Conditions table as Type/Status/Reason/Message.
func conditionRows(n *dnode) []map[string]string {
	t := n.table(100)
	if t == nil {
		return nil
	}
	var out []map[string]string
	for _, row := range t.rows {
		c := map[string]string{}
		for i, col := range t.cols {
			if i < len(row) {
				c[col] = row[i]
			}
		}
		if c["Type"] != "" {
			out = append(out, c)
		}
	}
	return out
}

func describeDeployment(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	d := &appsv1.Deployment{TypeMeta: typeMeta("Deployment"), ObjectMeta: meta}
	d.Spec.Selector = selector(root.get("Selector"))
	if r := replicaCounts(root.get("Replicas")); len(r) > 0 {
		d.Spec.Replicas = ptr(r["desired"])
		d.Status.UpdatedReplicas, d.Status.Replicas = r["updated"], r["total"]
		d.Status.AvailableReplicas, d.Status.UnavailableReplicas = r["available"], r["unavailable"]
	}
	d.Spec.Strategy.Type = appsv1.DeploymentStrategyType(root.get("StrategyType"))
	if n, ok := atoi32(root.get("MinReadySeconds")); ok {
		d.Spec.MinReadySeconds = n
	}
	if rus := root.get("RollingUpdateStrategy"); rus != "" {
		ru := &appsv1.RollingUpdateDeployment{}
		for _, part := range strings.Split(rus, ",") {
			f := strings.Fields(part)
			if len(f) < 3 {
				continue
			}
			v := intstr.Parse(f[0])
			switch f[2] {
			case "unavailable":
				ru.MaxUnavailable = &v
			case "surge":
				ru.MaxSurge = &v
			}
		}
		d.Spec.Strategy.RollingUpdate = ru
	}
	d.Spec.Template = p.podTemplate(root.child("Pod Template"))
	for _, c := range conditionRows(root.child("Conditions")) {
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentConditionType(c["Type"]),
			Status: corev1.ConditionStatus(c["Status"]), Reason: c["Reason"]})
	}
	return d, true
}

func describeReplicaSet(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	rs := &appsv1.ReplicaSet{TypeMeta: typeMeta("ReplicaSet"), ObjectMeta: meta}
	rs.Spec.Selector = selector(root.get("Selector"))
	if r := replicaCounts(root.get("Replicas")); len(r) > 0 {
		rs.Spec.Replicas = ptr(r["desired"])
		rs.Status.Replicas = r["current"]
	}
	rs.Spec.Template = p.podTemplate(root.child("Pod Template"))
	return rs, true
}

func describeStatefulSet(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	s := &appsv1.StatefulSet{TypeMeta: typeMeta("StatefulSet"), ObjectMeta: meta}
	s.Spec.Selector = selector(root.get("Selector"))
	if r := replicaCounts(root.get("Replicas")); len(r) > 0 {
		s.Spec.Replicas = ptr(r["desired"])
		s.Status.Replicas = r["total"]
	}
	s.Spec.UpdateStrategy.Type = appsv1.StatefulSetUpdateStrategyType(root.get("Update Strategy"))
	s.Spec.Template = p.podTemplate(root.child("Pod Template"))
	return s, true
}

func describeDaemonSet(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	d := &appsv1.DaemonSet{TypeMeta: typeMeta("DaemonSet"), ObjectMeta: meta}
	d.Spec.Selector = selector(root.get("Selector"))
	n := func(k string) int32 { v, _ := atoi32(root.get(k)); return v }
	d.Status.DesiredNumberScheduled = n("Desired Number of Nodes Scheduled")
	d.Status.CurrentNumberScheduled = n("Current Number of Nodes Scheduled")
	d.Status.UpdatedNumberScheduled = n("Number of Nodes Scheduled with Up-to-date Pods")
	d.Status.NumberAvailable = n("Number of Nodes Scheduled with Available Pods")
	d.Status.NumberMisscheduled = n("Number of Nodes Misscheduled")
	d.Status.NumberUnavailable = d.Status.DesiredNumberScheduled - d.Status.NumberAvailable
	d.Spec.Template = p.podTemplate(root.child("Pod Template"))
	return d, true
}

var jobPodsRe = regexp.MustCompile(`^(\d+) (?:Active \((\d+) Ready\)|Running) / (\d+) Succeeded / (\d+) Failed`)

func describeJob(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	j := &batchv1.Job{TypeMeta: typeMeta("Job"), ObjectMeta: meta}
	j.Spec.Selector = selector(root.get("Selector"))
	if n, ok := atoi32(root.get("Parallelism")); ok {
		j.Spec.Parallelism = &n
	}
	if n, ok := atoi32(root.get("Completions")); ok {
		j.Spec.Completions = &n
	}
	if m := root.get("Completion Mode"); m != "" {
		j.Spec.CompletionMode = ptr(batchv1.CompletionMode(m))
	}
	if s := root.get("Suspend"); s != "" {
		j.Spec.Suspend = ptr(strings.EqualFold(s, "true"))
	}
	if n, ok := atoi32(root.get("Backoff Limit")); ok {
		j.Spec.BackoffLimit = &n
	}
	if s := strings.TrimSuffix(root.get("Active Deadline Seconds"), "s"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			j.Spec.ActiveDeadlineSeconds = &n
		}
	}
	if t, ok := parseDescribeTime(root.get("Start Time")); ok {
		j.Status.StartTime = &t
	}
	if t, ok := parseDescribeTime(root.get("Completed At")); ok {
		j.Status.CompletionTime = &t
	}
	if m := jobPodsRe.FindStringSubmatch(root.get("Pods Statuses")); m != nil {
		a, _ := atoi32(m[1])
		s, _ := atoi32(m[3])
		f, _ := atoi32(m[4])
		j.Status.Active, j.Status.Succeeded, j.Status.Failed = a, s, f
		if m[2] != "" {
			r, _ := atoi32(m[2])
			j.Status.Ready = &r
		}
	}
	j.Spec.Template = p.podTemplate(root.child("Pod Template"))
	for _, c := range conditionRows(root.child("Conditions")) {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobConditionType(c["Type"]),
			Status: corev1.ConditionStatus(c["Status"]), Reason: c["Reason"], Message: c["Message"]})
	}
	return j, true
}

func describeCronJob(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	cj := &batchv1.CronJob{TypeMeta: typeMeta("CronJob"), ObjectMeta: meta}
	cj.Spec.Schedule = root.get("Schedule")
	cj.Spec.TimeZone = nil
	if tz := root.get("TimeZone"); tz != "" {
		cj.Spec.TimeZone = &tz
	}
	cj.Spec.ConcurrencyPolicy = batchv1.ConcurrencyPolicy(root.get("Concurrency Policy"))
	if s := root.get("Suspend"); s != "" {
		cj.Spec.Suspend = ptr(strings.EqualFold(s, "true"))
	}
	if n, ok := atoi32(root.get("Successful Job History Limit")); ok {
		cj.Spec.SuccessfulJobsHistoryLimit = &n
	}
	if n, ok := atoi32(root.get("Failed Job History Limit")); ok {
		cj.Spec.FailedJobsHistoryLimit = &n
	}
	if s := strings.TrimSuffix(root.get("Starting Deadline Seconds"), "s"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			cj.Spec.StartingDeadlineSeconds = &n
		}
	}
	cj.Spec.JobTemplate.Spec.Template = p.podTemplate(root.child("Pod Template"))
	if t, ok := parseDescribeTime(root.get("Last Schedule Time")); ok {
		cj.Status.LastScheduleTime = &t
	}
	for _, a := range strings.Split(root.get("Active Jobs"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: meta.Namespace, Name: a})
		}
	}
	return cj, true
}
