package kubetext

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// getTable reads kubectl get tables (the API server's columns). A get of
// several kinds prints one table per kind, separated by blank lines, with
// "kind/name" in the NAME column.
func (p *parser) getTable(c *command, out []string, first int) {
	ts := c.targets()
	defKind := ""
	if len(ts) == 1 || (len(ts) > 1 && ts[0].kind == ts[len(ts)-1].kind) {
		defKind = ts[0].kind
	}
	form := "get"
	if c.wide {
		form = "get-wide"
	}
	start := 0
	for start < len(out) {
		for start < len(out) && strings.TrimSpace(out[start]) == "" {
			start++
		}
		end := start
		for end < len(out) && strings.TrimSpace(out[end]) != "" {
			end++
		}
		if start >= len(out) {
			break
		}
		t := parseTable(out[start:end], first+start, MaxObjects)
		if (t == nil || t.col("NAME") < 0) && defKind != "" {
			// a header lost to a pipe: put back for the fixed tables
			if ht := headerless(c, defKind, out[start:end], first+start, MaxObjects); ht != nil {
				t = ht
				if c.piped {
					p.skip(first+start, c.text, "the table header was filtered out: the columns of kubectl's "+strings.ToLower(defKind)+" table are assumed")
				}
			}
		}
		sec, secLine := out[start:end], first+start
		start = end
		if t == nil || t.col("NAME") < 0 {
			if p.keepUnknown(c, sec, secLine-1) {
				p.skip(secLine, c.text, "no NAME column: a table header is missing (was the output filtered?); kept as text")
				continue
			}
			p.skip(first+start-1, c.text, "no NAME column: a table header is missing (was the output filtered?)")
			continue
		}
		if t.cut {
			p.skip(first-1, c.text, fmt.Sprintf("more than %d rows: the rest are dropped", MaxObjects))
		}
		for i, row := range t.rows {
			kind, name := defKind, t.get(row, "NAME")
			if k, n, ok := strings.Cut(name, "/"); ok {
				kind, name = kindOf(strings.SplitN(k, ".", 2)[0]), n
			}
			if kind == "" {
				p.skip(t.lines[i], c.text, "rows of an unknown kind")
				break
			}
			if kind == "Event" {
				continue
			}
			ns := c.ns()
			if v := t.get(row, "NAMESPACE"); v != "" {
				ns = v
			}
			if clusterScoped[kind] {
				ns = ""
			}
			fn := rowReaders[kind]
			if fn == nil {
				p.skip(t.lines[i], c.text, "get "+strings.ToLower(kind)+" tables are not read")
				break
			}
			meta := metav1.ObjectMeta{Name: name, Namespace: ns}
			if age, ok := parseAge(t.get(row, "AGE")); ok && !p.ref.IsZero() {
				meta.CreationTimestamp = p.before(age)
			}
			if l := t.get(row, "LABELS"); !unset(l) {
				meta.Labels = labelMap([]string{l})
			}
			labelColumns(t, row, &meta, c.labelColumns())
			obj := fn(p, t, row, meta)
			if obj == nil {
				p.skip(t.lines[i], c.text, "row not understood")
				continue
			}
			p.add(kind, ns, name, form, obj)
		}
	}
}

type rowReader func(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object

var rowReaders map[string]rowReader

func init() {
	rowReaders = map[string]rowReader{
		"Pod": podRow, "Deployment": deploymentRow, "ReplicaSet": replicaSetRow, "StatefulSet": statefulSetRow,
		"DaemonSet": daemonSetRow, "Job": jobRow, "CronJob": cronJobRow, "Node": nodeRow, "Service": serviceRow,
		"PersistentVolumeClaim": pvcRow, "PersistentVolume": pvRow, "Ingress": ingressRow,
		"HorizontalPodAutoscaler": hpaRow, "Endpoints": endpointsRow, "StorageClass": storageClassRow,
		"Namespace": namespaceRow, "ConfigMap": configMapRow, "Secret": secretRow, "ResourceQuota": quotaRow,
		"NetworkPolicy": netpolRow, "PodDisruptionBudget": pdbRow, "ServiceAccount": serviceAccountRow,
		"Role": roleRow("Role"), "ClusterRole": roleRow("ClusterRole"),
		"RoleBinding": bindingRow("RoleBinding"), "ClusterRoleBinding": bindingRow("ClusterRoleBinding"),
	}
}

// LabelColumnsAnnotation lists the label keys a table printed as columns
// (kubectl get -L key1,key2), comma-separated: the object carries those of
// them its Labels hold and none of the others (kubectl leaves the cell
// empty), which a table without -L cannot tell.
const LabelColumnsAnnotation = "rootcause.dev/kubectl-label-columns"

// labelColumns reads the columns kubectl get -L adds, one per label key,
// headed by the key's last path segment in upper case
// (karpenter.sh/capacity-type prints as CAPACITY-TYPE), after the table's
// own columns.
func labelColumns(t *table, row []string, meta *metav1.ObjectMeta, keys []string) {
	if len(keys) == 0 {
		return
	}
	var shown []string
	for _, k := range keys {
		head := strings.ToUpper(k[strings.LastIndexByte(k, '/')+1:])
		i := -1
		for j := len(t.cols) - 1; j >= 0; j-- {
			if strings.EqualFold(t.cols[j], head) {
				i = j
				break
			}
		}
		if i < 0 {
			continue
		}
		shown = append(shown, k)
		if i < len(row) && !unset(row[i]) {
			if meta.Labels == nil {
				meta.Labels = map[string]string{}
			}
			meta.Labels[k] = row[i]
		}
	}
	if len(shown) > 0 {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[LabelColumnsAnnotation] = strings.Join(shown, ",")
	}
}

// DataCountAnnotation holds the DATA column of a config map or secret table
// row: how many keys it has. The row shows neither the keys nor their
// values, so Data stays empty; a describe page or -o yaml of the same
// object fills it.
const DataCountAnnotation = "rootcause.dev/kubectl-data-count"

func dataCount(t *table, row []string, meta *metav1.ObjectMeta) bool {
	n, err := strconv.Atoi(cell(t, row, "DATA"))
	if err != nil || n < 0 {
		return false
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[DataCountAnnotation] = strconv.Itoa(n)
	return true
}

// configMapRow reads NAME DATA AGE.
func configMapRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	if !dataCount(t, row, &meta) {
		return nil
	}
	return &corev1.ConfigMap{TypeMeta: typeMeta("ConfigMap"), ObjectMeta: meta}
}

// secretRow reads NAME TYPE DATA AGE (values are never shown).
func secretRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	if !dataCount(t, row, &meta) {
		return nil
	}
	return &corev1.Secret{TypeMeta: typeMeta("Secret"), ObjectMeta: meta, Type: corev1.SecretType(cell(t, row, "TYPE"))}
}

// ratio reads "2/3".
func ratio(s string) (a, b int32, ok bool) {
	x, y, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	a, ok1 := atoi32(x)
	b, ok2 := atoi32(y)
	return a, b, ok1 && ok2
}

func cell(t *table, row []string, names ...string) string {
	v := t.get(row, names...)
	if unset(v) {
		return ""
	}
	return v
}

var restartsRe = regexp.MustCompile(`^(\d+)(?: \((\S+) ago\))?$`)

var waitingReasons = map[string]bool{"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "ContainerCreating": true, "InvalidImageName": true,
	"RunContainerError": true, "PodInitializing": true, "ErrImageNeverPull": true, "PreCreateHookError": true, "PostStartHookError": true}

var terminatedReasons = map[string]bool{"OOMKilled": true, "Error": true, "Completed": true, "ContainerCannotRun": true,
	"DeadlineExceeded": true, "StartError": true, "ContainerStatusUnknown": true}

// podRow reads NAME READY STATUS RESTARTS AGE [IP NODE NOMINATED NODE
// READINESS GATES]. STATUS is what kubectl derives: a phase, a container's
// waiting or terminated reason ("Init:" and an init container's for a pod
// that has not got past its init containers: Init:CrashLoopBackOff,
// Init:0/2 while the first of two runs), or the pod's reason. A pod of one
// container gets that container's state; a pod of several gets the state
// on the one container whose reason STATUS shows, its name unknown until
// the transcript's logs of the pod name it (nameRowContainers). RESTARTS
// counts every container's restarts. READY x/y says whether the pod is
// ready.
func podRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	pod := &corev1.Pod{TypeMeta: typeMeta("Pod"), ObjectMeta: meta}
	status := cell(t, row, "STATUS")
	ready, total, okReady := ratio(cell(t, row, "READY"))
	var st *corev1.ContainerStatus
	if okReady && total >= 1 {
		st = &corev1.ContainerStatus{Ready: total == 1 && ready == 1}
		if m := restartsRe.FindStringSubmatch(cell(t, row, "RESTARTS")); m != nil {
			n, _ := atoi32(m[1])
			st.RestartCount = n
			if d, ok := parseAge(m[2]); ok && !p.ref.IsZero() {
				st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: p.before(d)}
			}
		}
	}
	multi := okReady && total > 1
	init := false
	switch {
	case status == "Running" || status == "Pending" || status == "Succeeded" || status == "Failed" || status == "Unknown":
		pod.Status.Phase = corev1.PodPhase(status)
		if st != nil && status == "Running" {
			st.State.Running = &corev1.ContainerStateRunning{}
		}
		if multi {
			st = nil // which container restarted is not shown
		}
	case status == "Terminating":
		t := metav1.NewTime(p.ref)
		if !p.ref.IsZero() {
			pod.DeletionTimestamp = &t
		}
		st = nil
	case strings.HasPrefix(status, "Init:"):
		// An init container has not finished: Init:0/1 (it runs),
		// Init:CrashLoopBackOff, Init:Error, Init:ExitCode:1...
		pod.Status.Phase = corev1.PodPending
		init = true
		if st != nil {
			st.Ready = false
			if _, _, ok := ratio(status[len("Init:"):]); ok {
				st.State.Running = &corev1.ContainerStateRunning{}
			} else {
				containerReason(st, status[len("Init:"):])
			}
		}
	default:
		if st == nil || !containerReason(st, status) {
			st = nil
			if status != "" {
				pod.Status.Reason = status // Evicted, NodeLost, OutOfpods...
				if status == "Evicted" {
					pod.Status.Phase = corev1.PodFailed
				}
			}
		}
	}
	// A status is kept only when the row tells the container's state.
	if st != nil && (st.State.Running != nil || st.State.Waiting != nil || st.State.Terminated != nil) {
		if init {
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{*st}
		} else {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{*st}
		}
	}
	if multi {
		// The pod's readiness, which no container status of the row says.
		c := corev1.ConditionFalse
		if ready == total && pod.Status.Phase == corev1.PodRunning {
			c = corev1.ConditionTrue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: c}, {Type: corev1.PodReady, Status: c}}
	}
	pod.Status.PodIP = cell(t, row, "IP")
	if pod.Status.PodIP != "" {
		pod.Status.PodIPs = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	pod.Spec.NodeName = cell(t, row, "NODE")
	pod.Status.NominatedNodeName = cell(t, row, "NOMINATED NODE")
	return pod
}

// containerReason sets a container's state from the reason kubectl shows
// for it (CrashLoopBackOff, OOMKilled, Signal:9, ExitCode:1), and reports
// whether reason is one.
func containerReason(st *corev1.ContainerStatus, reason string) bool {
	switch {
	case waitingReasons[reason]:
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
	case terminatedReasons[reason]:
		// "Completed" is a container's reason: a job's pod has Succeeded,
		// a deployment's is about to restart it; the phase stays unknown.
		st.State.Terminated = &corev1.ContainerStateTerminated{Reason: reason}
	case strings.HasPrefix(reason, "Signal:") || strings.HasPrefix(reason, "ExitCode:"):
		n, _ := atoi32(reason[strings.IndexByte(reason, ':')+1:])
		if strings.HasPrefix(reason, "Signal:") {
			st.State.Terminated = &corev1.ContainerStateTerminated{Signal: n}
		} else {
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: n}
		}
	default:
		return false
	}
	return true
}

// containersImages reads the -o wide CONTAINERS and IMAGES columns.
func containersImages(t *table, row []string) []corev1.Container {
	names := strings.Split(cell(t, row, "CONTAINERS"), ",")
	images := strings.Split(cell(t, row, "IMAGES"), ",")
	var out []corev1.Container
	for i, n := range names {
		if n == "" {
			continue
		}
		c := corev1.Container{Name: n}
		if i < len(images) {
			c.Image = images[i]
		}
		out = append(out, c)
	}
	return out
}

func wideSelector(t *table, row []string) *metav1.LabelSelector {
	return selector(cell(t, row, "SELECTOR"))
}

func deploymentRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	d := &appsv1.Deployment{TypeMeta: typeMeta("Deployment"), ObjectMeta: meta}
	if r, want, ok := ratio(cell(t, row, "READY")); ok {
		d.Status.ReadyReplicas, d.Spec.Replicas = r, ptr(want)
	}
	d.Status.UpdatedReplicas, _ = atoi32(cell(t, row, "UP-TO-DATE"))
	d.Status.AvailableReplicas, _ = atoi32(cell(t, row, "AVAILABLE"))
	d.Spec.Template.Spec.Containers = containersImages(t, row)
	d.Spec.Selector = wideSelector(t, row)
	return d
}

func replicaSetRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	rs := &appsv1.ReplicaSet{TypeMeta: typeMeta("ReplicaSet"), ObjectMeta: meta}
	if n, ok := atoi32(cell(t, row, "DESIRED")); ok {
		rs.Spec.Replicas = &n
	}
	rs.Status.Replicas, _ = atoi32(cell(t, row, "CURRENT"))
	rs.Status.ReadyReplicas, _ = atoi32(cell(t, row, "READY"))
	rs.Spec.Template.Spec.Containers = containersImages(t, row)
	rs.Spec.Selector = wideSelector(t, row)
	return rs
}

func statefulSetRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	s := &appsv1.StatefulSet{TypeMeta: typeMeta("StatefulSet"), ObjectMeta: meta}
	if r, want, ok := ratio(cell(t, row, "READY")); ok {
		s.Status.ReadyReplicas, s.Spec.Replicas = r, ptr(want)
	}
	s.Spec.Template.Spec.Containers = containersImages(t, row)
	return s
}

func daemonSetRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	d := &appsv1.DaemonSet{TypeMeta: typeMeta("DaemonSet"), ObjectMeta: meta}
	d.Status.DesiredNumberScheduled, _ = atoi32(cell(t, row, "DESIRED"))
	d.Status.CurrentNumberScheduled, _ = atoi32(cell(t, row, "CURRENT"))
	d.Status.NumberReady, _ = atoi32(cell(t, row, "READY"))
	d.Status.UpdatedNumberScheduled, _ = atoi32(cell(t, row, "UP-TO-DATE"))
	d.Status.NumberAvailable, _ = atoi32(cell(t, row, "AVAILABLE"))
	d.Status.NumberUnavailable = d.Status.DesiredNumberScheduled - d.Status.NumberAvailable
	d.Spec.Template.Spec.NodeSelector = labelMap([]string{cell(t, row, "NODE SELECTOR")})
	d.Spec.Template.Spec.Containers = containersImages(t, row)
	return d
}

// jobRow reads NAME [STATUS] COMPLETIONS DURATION AGE [CONTAINERS IMAGES
// SELECTOR]. DURATION is what kubectl derives from the start: to its
// completion for a Job that completed, to now for one that did not (still
// running, or failed: only STATUS, printed since kubectl 1.28, tells them
// apart).
func jobRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	j := &batchv1.Job{TypeMeta: typeMeta("Job"), ObjectMeta: meta}
	done, want, okDone := ratio(cell(t, row, "COMPLETIONS"))
	if okDone {
		j.Status.Succeeded, j.Spec.Completions = done, ptr(want)
	}
	// STATUS (kubectl 1.28+): Running, Complete, Failed, Suspended...
	status := cell(t, row, "STATUS")
	cond := map[string]batchv1.JobConditionType{"Complete": batchv1.JobComplete, "Failed": batchv1.JobFailed, "Suspended": batchv1.JobSuspended}
	if ct, ok := cond[status]; ok {
		j.Status.Conditions = []batchv1.JobCondition{{Type: ct, Status: corev1.ConditionTrue}}
	}
	if status == "Running" {
		j.Status.Active = 1 // at least one of its pods runs
	}
	if d, ok := parseAge(cell(t, row, "DURATION")); ok && !meta.CreationTimestamp.IsZero() {
		start := meta.CreationTimestamp
		j.Status.StartTime = &start
		if okDone && want > 0 && done >= want || status == "Complete" {
			end := metav1.NewTime(start.Add(d))
			j.Status.CompletionTime = &end
		}
	}
	j.Spec.Template.Spec.Containers = containersImages(t, row)
	return j
}

func cronJobRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	cj := &batchv1.CronJob{TypeMeta: typeMeta("CronJob"), ObjectMeta: meta}
	cj.Spec.Schedule = cell(t, row, "SCHEDULE")
	if s := cell(t, row, "SUSPEND"); s != "" {
		cj.Spec.Suspend = ptr(s == "True" || s == "true")
	}
	if d, ok := parseAge(cell(t, row, "LAST SCHEDULE")); ok && !p.ref.IsZero() {
		ls := p.before(d)
		cj.Status.LastScheduleTime = &ls
	}
	if tz := cell(t, row, "TIMEZONE"); tz != "" {
		cj.Spec.TimeZone = &tz
	}
	// ACTIVE counts the runs active now; the table does not name them, so
	// the references are to Jobs whose names are not known.
	if n, ok := atoi32(cell(t, row, "ACTIVE")); ok && n >= 0 {
		cj.Status.Active = make([]corev1.ObjectReference, min(n, 100))
		for i := range cj.Status.Active {
			cj.Status.Active[i] = corev1.ObjectReference{Kind: "Job", Namespace: meta.Namespace}
		}
	}
	cj.Spec.JobTemplate.Spec.Template.Spec.Containers = containersImages(t, row)
	return cj
}

func nodeRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	n := &corev1.Node{TypeMeta: typeMeta("Node"), ObjectMeta: meta}
	for _, s := range strings.Split(cell(t, row, "STATUS"), ",") {
		switch s {
		case "Ready":
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
		case "NotReady":
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse})
		case "Unknown":
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown})
		case "SchedulingDisabled":
			n.Spec.Unschedulable = true
		}
	}
	n.Status.NodeInfo.KubeletVersion = cell(t, row, "VERSION")
	n.Status.NodeInfo.OSImage = cell(t, row, "OS-IMAGE")
	n.Status.NodeInfo.KernelVersion = cell(t, row, "KERNEL-VERSION")
	n.Status.NodeInfo.ContainerRuntimeVersion = cell(t, row, "CONTAINER-RUNTIME")
	if ip := cell(t, row, "INTERNAL-IP"); ip != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	if ip := cell(t, row, "EXTERNAL-IP"); ip != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip})
	}
	if r := cell(t, row, "ROLES"); r != "" {
		for _, role := range strings.Split(r, ",") {
			if meta.Labels == nil {
				n.Labels = map[string]string{}
				meta.Labels = n.Labels
			}
			n.Labels["node-role.kubernetes.io/"+role] = ""
		}
	}
	return n
}

// servicePorts reads "80/TCP,443:30443/TCP".
func servicePorts(s string) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, ps := range strings.Split(s, ",") {
		num, proto, _ := strings.Cut(ps, "/")
		port, node, _ := strings.Cut(num, ":")
		n, err := strconv.ParseInt(port, 10, 32)
		if err != nil {
			continue
		}
		sp := corev1.ServicePort{Port: int32(n), Protocol: corev1.Protocol(proto)}
		if nn, err := strconv.ParseInt(node, 10, 32); err == nil {
			sp.NodePort = int32(nn)
		}
		out = append(out, sp)
	}
	return out
}

func serviceRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	s := &corev1.Service{TypeMeta: typeMeta("Service"), ObjectMeta: meta}
	s.Spec.Type = corev1.ServiceType(cell(t, row, "TYPE"))
	s.Spec.ClusterIP = cell(t, row, "CLUSTER-IP")
	if ext := cell(t, row, "EXTERNAL-IP"); ext != "" && ext != "<pending>" {
		for _, ip := range strings.Split(ext, ",") {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
			} else if s.Spec.Type == corev1.ServiceTypeExternalName {
				s.Spec.ExternalName = ip
			} else {
				s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, ip)
			}
		}
	}
	s.Spec.Ports = servicePorts(cell(t, row, "PORT(S)"))
	s.Spec.Selector = labelMap([]string{cell(t, row, "SELECTOR")})
	return s
}

func pvcRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	c := &corev1.PersistentVolumeClaim{TypeMeta: typeMeta("PersistentVolumeClaim"), ObjectMeta: meta}
	c.Status.Phase = corev1.PersistentVolumeClaimPhase(cell(t, row, "STATUS"))
	c.Spec.VolumeName = cell(t, row, "VOLUME")
	if q, err := resource.ParseQuantity(cell(t, row, "CAPACITY")); err == nil {
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
	}
	c.Status.AccessModes = accessModes(cell(t, row, "ACCESS MODES"))
	if sc := cell(t, row, "STORAGECLASS"); sc != "" {
		c.Spec.StorageClassName = &sc
	}
	if vm := cell(t, row, "VOLUMEMODE"); vm != "" {
		c.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode(vm))
	}
	return c
}

func pvRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	v := &corev1.PersistentVolume{TypeMeta: typeMeta("PersistentVolume"), ObjectMeta: meta}
	if q, err := resource.ParseQuantity(cell(t, row, "CAPACITY")); err == nil {
		v.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
	}
	v.Spec.AccessModes = accessModes(cell(t, row, "ACCESS MODES"))
	v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(cell(t, row, "RECLAIM POLICY"))
	v.Status.Phase = corev1.PersistentVolumePhase(cell(t, row, "STATUS"))
	if ns, name, ok := strings.Cut(cell(t, row, "CLAIM"), "/"); ok {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name}
	}
	v.Spec.StorageClassName = cell(t, row, "STORAGECLASS")
	v.Status.Reason = cell(t, row, "REASON")
	return v
}

// storageClassRow reads NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE
// ALLOWVOLUMEEXPANSION AGE; kubectl marks the default class "NAME (default)".
func storageClassRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	if name, ok := strings.CutSuffix(meta.Name, " (default)"); ok {
		meta.Name = name
		meta.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	sc := &storagev1.StorageClass{TypeMeta: typeMeta("StorageClass"), ObjectMeta: meta}
	sc.Provisioner = cell(t, row, "PROVISIONER")
	if v := cell(t, row, "RECLAIMPOLICY"); v != "" {
		rp := corev1.PersistentVolumeReclaimPolicy(v)
		sc.ReclaimPolicy = &rp
	}
	if v := cell(t, row, "VOLUMEBINDINGMODE"); v != "" {
		m := storagev1.VolumeBindingMode(v)
		sc.VolumeBindingMode = &m
	}
	if v := cell(t, row, "ALLOWVOLUMEEXPANSION"); v == "true" || v == "false" {
		b := v == "true"
		sc.AllowVolumeExpansion = &b
	}
	return sc
}

// namespaceRow reads NAME STATUS AGE.
func namespaceRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	ns := &corev1.Namespace{TypeMeta: typeMeta("Namespace"), ObjectMeta: meta}
	ns.Status.Phase = corev1.NamespacePhase(cell(t, row, "STATUS"))
	return ns
}

func ingressRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	ing := &networkingv1.Ingress{TypeMeta: typeMeta("Ingress"), ObjectMeta: meta}
	if c := cell(t, row, "CLASS"); c != "" {
		ing.Spec.IngressClassName = &c
	}
	for _, h := range strings.Split(cell(t, row, "HOSTS"), ",") {
		if h != "" && !strings.HasPrefix(h, "+ ") {
			if h == "*" {
				h = ""
			}
			ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h})
		}
	}
	for _, a := range strings.Split(cell(t, row, "ADDRESS"), ",") {
		if a != "" {
			ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a})
		}
	}
	return ing
}

var hpaTargetRe = regexp.MustCompile(`^(?:(\S+): )?(<unknown>|\S+?)/(\S+)$`)

// hpaRow reads NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE.
// TARGETS is "91%/70%" or, since kubectl 1.30, "cpu: 91%/70%"; several
// metrics are separated by ", ".
func hpaRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	h := &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: typeMeta("HorizontalPodAutoscaler"), ObjectMeta: meta}
	if k, n, ok := strings.Cut(cell(t, row, "REFERENCE"), "/"); ok {
		h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: k, Name: n, APIVersion: apiVersions[k]}
	}
	if n, ok := atoi32(cell(t, row, "MINPODS")); ok {
		h.Spec.MinReplicas = &n
	}
	h.Spec.MaxReplicas, _ = atoi32(cell(t, row, "MAXPODS"))
	h.Status.CurrentReplicas, _ = atoi32(cell(t, row, "REPLICAS"))
	for _, tg := range strings.Split(cell(t, row, "TARGETS"), ", ") {
		m := hpaTargetRe.FindStringSubmatch(strings.TrimSpace(tg))
		if m == nil || !strings.HasSuffix(m[3], "%") {
			continue
		}
		// Before kubectl 1.30 the column does not name the metric: the name stays unknown.
		name := corev1.ResourceName(m[1])
		target, _ := strconv.ParseInt(strings.TrimSuffix(m[3], "%"), 10, 32)
		h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: name, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(target))}}})
		if cur, err := strconv.ParseInt(strings.TrimSuffix(m[2], "%"), 10, 32); err == nil {
			h.Status.CurrentMetrics = append(h.Status.CurrentMetrics, autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricStatus{Name: name, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(cur))}}})
		}
	}
	return h
}

// endpointsRow reads NAME ENDPOINTS AGE: "10.0.0.1:8080,10.0.0.2:8080 + 1
// more..." or "<none>" (no ready address). Only the shown addresses are
// kept.
func endpointsRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	ep := &corev1.Endpoints{TypeMeta: typeMeta("Endpoints"), ObjectMeta: meta}
	v := cell(t, row, "ENDPOINTS")
	v, _, _ = strings.Cut(v, " + ")
	for _, a := range strings.Split(v, ",") {
		host, port, ok := strings.Cut(strings.TrimSpace(a), ":")
		n, err := strconv.ParseInt(port, 10, 32)
		if !ok || err != nil {
			continue
		}
		ep.Subsets = append(ep.Subsets, corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: host}}, Ports: []corev1.EndpointPort{{Port: int32(n)}}})
	}
	return ep
}

// quotaRow reads NAME AGE REQUEST LIMIT, whose cells list
// "resource: used/hard" (kube-apiserver's printer): the quota's status.
func quotaRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	q := &corev1.ResourceQuota{TypeMeta: typeMeta("ResourceQuota"), ObjectMeta: meta}
	for _, col := range []string{"REQUEST", "LIMIT"} {
		for _, item := range strings.Split(cell(t, row, col), ", ") {
			name, uh, ok := strings.Cut(strings.TrimSpace(item), ": ")
			if !ok {
				continue
			}
			u, h, ok := strings.Cut(uh, "/")
			if !ok {
				return nil
			}
			used, ok1 := quantity(u)
			hard, ok2 := quantity(h)
			if !ok1 || !ok2 {
				return nil
			}
			if q.Status.Hard == nil {
				q.Status.Hard, q.Status.Used = corev1.ResourceList{}, corev1.ResourceList{}
			}
			q.Status.Hard[corev1.ResourceName(name)], q.Status.Used[corev1.ResourceName(name)] = hard, used
		}
	}
	return q
}
