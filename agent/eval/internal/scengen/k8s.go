package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// World is one bundle under construction.
type World struct {
	Name  string
	Now   time.Time
	R     *rand.Rand
	Nodes []*corev1.Node
	NS    []*NS
	Files map[string][]byte // bundle-relative path -> content
	// Stuck marks deployments whose rollout exceeded its progress deadline.
	Stuck map[types.UID]bool
	// UnavailableSince dates a deployment's Available=False condition.
	UnavailableSince map[types.UID]time.Time
	rv               int64
}

// NS is one namespace of the dump.
type NS struct {
	Name string
	// NewEvents writes events.json as an events.k8s.io/v1 EventList.
	NewEvents bool
	Pods      []*corev1.Pod
	Events    []*corev1.Event
	Deps      []*appsv1.Deployment
	RSs       []*appsv1.ReplicaSet
	Svcs      []*corev1.Service
	DSs       []*appsv1.DaemonSet
	Logs      map[string][]section         // pod -> container sections
	Prev      map[string]map[string]string // pod -> container -> previous log
}

type section struct {
	container string
	text      string
}

func newWorld(name string, now time.Time, seed uint64) *World {
	return &World{Name: name, Now: now.UTC(), R: rand.New(rand.NewPCG(seed, seed*7919+13)), Files: map[string][]byte{}, Stuck: map[types.UID]bool{}, UnavailableSince: map[types.UID]time.Time{}, rv: 4_200_000 + int64(seed%97)*10_000}
}

func (w *World) ns(name string) *NS {
	for _, n := range w.NS {
		if n.Name == name {
			return n
		}
	}
	n := &NS{Name: name, Logs: map[string][]section{}, Prev: map[string]map[string]string{}}
	w.NS = append(w.NS, n)
	return n
}

func (w *World) nextRV() string {
	w.rv += int64(1 + w.R.IntN(900))
	return fmt.Sprint(w.rv)
}

func (w *World) uid() types.UID {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(w.R.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (w *World) suffix(n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(safeAlphabet[w.R.IntN(len(safeAlphabet))])
	}
	return sb.String()
}

func (w *World) hex(n int) string {
	const h = "0123456789abcdef"
	var sb strings.Builder
	for range n {
		sb.WriteByte(h[w.R.IntN(16)])
	}
	return sb.String()
}

func mt(t time.Time) metav1.Time { return metav1.NewTime(t.UTC().Truncate(time.Second)) }

func q(s string) resource.Quantity { return resource.MustParse(s) }

func (w *World) ago(d time.Duration) time.Time { return w.Now.Add(-d) }

// jit returns d plus or minus up to frac of it.
func (w *World) jit(d time.Duration, frac float64) time.Duration {
	return d + time.Duration((w.R.Float64()*2-1)*frac*float64(d))
}

// ---- nodes ----

type nodeSpec struct {
	Name, IP, Zone, Instance, PodCIDR string
	CPU, Mem, Pods, Disk              string
	Created                           time.Time
	DiskPressure, MemPressure         *time.Time // when the condition became true
	NotReady                          *time.Time
	Taints                            []corev1.Taint
	Provider                          string // aws, gce
}

func (w *World) addNode(s nodeSpec) *corev1.Node {
	if s.CPU == "" {
		s.CPU = "4"
	}
	if s.Mem == "" {
		s.Mem = "16203904Ki"
	}
	if s.Pods == "" {
		s.Pods = "58"
	}
	if s.Disk == "" {
		s.Disk = "83873772Ki"
	}
	allocCPU := map[string]string{"2": "1930m", "4": "3920m", "8": "7910m", "16": "15890m"}[s.CPU]
	hb := w.Now.Add(-time.Duration(5+w.R.IntN(40)) * time.Second)
	cond := func(typ corev1.NodeConditionType, since *time.Time, trueReason, trueMsg, falseReason, falseMsg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: typ, Status: corev1.ConditionFalse, LastHeartbeatTime: mt(hb), LastTransitionTime: mt(s.Created.Add(40 * time.Second)), Reason: falseReason, Message: falseMsg}
		if since != nil {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionTrue, trueReason, trueMsg, mt(*since)
		}
		return c
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: mt(hb), LastTransitionTime: mt(s.Created.Add(55 * time.Second)), Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if s.NotReady != nil {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastHeartbeatTime: mt(*s.NotReady), LastTransitionTime: mt(s.NotReady.Add(40 * time.Second)), Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}
	}
	providerID := fmt.Sprintf("aws:///%s/i-0%s", s.Zone, w.hex(16))
	labels := map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": s.Name,
		"node.kubernetes.io/instance-type": s.Instance, "topology.kubernetes.io/zone": s.Zone,
		"topology.kubernetes.io/region": s.Zone[:len(s.Zone)-1],
	}
	kubelet := "v1.31.4-eks-aeac579"
	osImage := "Amazon Linux 2023.6.20250107"
	kernel := "6.1.119-129.201.amzn2023.x86_64"
	if s.Provider == "gce" {
		providerID = fmt.Sprintf("gce://acme-prod/%s/%s", s.Zone, s.Name)
		labels["cloud.google.com/gke-nodepool"] = "default-pool"
		kubelet = "v1.31.5-gke.1023000"
		osImage = "Container-Optimized OS from Google"
		kernel = "6.1.112+"
	} else {
		labels["eks.amazonaws.com/nodegroup"] = "general-" + s.Instance[:2]
		labels["eks.amazonaws.com/capacityType"] = "ON_DEMAND"
	}
	n := &corev1.Node{
		TypeMeta: metav1.TypeMeta{},
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, UID: w.uid(), ResourceVersion: w.nextRV(), CreationTimestamp: mt(s.Created), Labels: labels,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec: corev1.NodeSpec{PodCIDR: s.PodCIDR, PodCIDRs: []string{s.PodCIDR}, ProviderID: providerID, Taints: s.Taints},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: q(s.CPU), corev1.ResourceMemory: q(s.Mem), corev1.ResourcePods: q(s.Pods), corev1.ResourceEphemeralStorage: q(s.Disk)},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: q(allocCPU), corev1.ResourceMemory: q("15186048Ki"), corev1.ResourcePods: q(s.Pods),
				corev1.ResourceEphemeralStorage: q("76224326324")},
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, s.MemPressure, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, s.DiskPressure, "KubeletHasDiskPressure", "kubelet has disk pressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, nil, "", "", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				ready,
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: s.IP}, {Type: corev1.NodeHostName, Address: s.Name}, {Type: corev1.NodeInternalDNS, Address: s.Name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: w.hex(32), SystemUUID: "ec2" + w.hex(5) + "-" + w.hex(4) + "-" + w.hex(4) + "-" + w.hex(4) + "-" + w.hex(12), BootID: string(w.uid()),
				KernelVersion: kernel, OSImage: osImage, ContainerRuntimeVersion: "containerd://1.7.25",
				KubeletVersion: kubelet, KubeProxyVersion: "", OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: []corev1.ContainerImage{
				{Names: []string{"registry.k8s.io/coredns/coredns@sha256:" + w.hex(64), "registry.k8s.io/coredns/coredns:v1.11.3"}, SizeBytes: 18562039},
				{Names: []string{"registry.k8s.io/kube-proxy@sha256:" + w.hex(64), "registry.k8s.io/kube-proxy:v1.31.4"}, SizeBytes: 30581372},
				{Names: []string{"registry.k8s.io/pause@sha256:" + w.hex(64), "registry.k8s.io/pause:3.10"}, SizeBytes: 320368},
			},
		},
	}
	w.Nodes = append(w.Nodes, n)
	return n
}

// standardNodes adds three healthy worker nodes and returns their names.
func (w *World) standardNodes(region string, cpu string) []string {
	var names []string
	zones := []string{"a", "b", "c"}
	for i := range 3 {
		ip := fmt.Sprintf("10.0.%d.%d", 1+i*16, 20+w.R.IntN(200))
		name := fmt.Sprintf("ip-%s.%s.compute.internal", strings.ReplaceAll(ip, ".", "-"), region)
		inst := map[string]string{"2": "m6i.large", "4": "m6i.xlarge", "8": "m6i.2xlarge"}[cpu]
		w.addNode(nodeSpec{Name: name, IP: ip, Zone: region + zones[i], Instance: inst, CPU: cpu, PodCIDR: fmt.Sprintf("10.42.%d.0/24", i),
			Created: w.ago(time.Duration(9+w.R.IntN(30))*24*time.Hour + time.Duration(w.R.IntN(3600))*time.Second)})
		names = append(names, name)
	}
	return names
}

func (w *World) nodeIP(node string) string {
	for _, n := range w.Nodes {
		if n.Name == node {
			return n.Status.Addresses[0].Address
		}
	}
	return "10.0.0.1"
}

func (w *World) nodeIndex(node string) int {
	for i, n := range w.Nodes {
		if n.Name == node {
			return i
		}
	}
	return 0
}

// ---- workloads ----

// Rev is one revision of a deployment (one ReplicaSet).
type Rev struct {
	Image   string
	At      time.Time // when the ReplicaSet was created
	Env     []corev1.EnvVar
	MemLim  string
	Port    int32
	Cause   string // kubernetes.io/change-cause
	Restart bool   // a rollout restart (kubectl.kubernetes.io/restartedAt)
}

// AppSpec describes a Deployment with its ReplicaSets and pods.
type AppSpec struct {
	NS, Name  string
	Container string
	Revs      []Rev // oldest first; the last is current
	Replicas  int32
	// OldPods keeps this many pods on the previous ReplicaSet (a rollout in progress).
	OldPods    int32
	NewPods    int32 // pods of the current RS; default Replicas-OldPods
	Port       int32
	CPUReq     string
	MemReq     string
	CPULim     string
	MemLim     string
	Env        []corev1.EnvVar
	EnvFrom    []corev1.EnvFromSource
	ProbePath  string
	ProbePort  int32
	Liveness   bool
	Nodes      []string
	Labels     map[string]string
	Stuck      bool // Progressing=False ProgressDeadlineExceeded
	Args       []string
	Team       string
	NoService  bool
	SvcPort    int32
	Annotation map[string]string
}

// App is a generated Deployment.
type App struct {
	Spec AppSpec
	Dep  *appsv1.Deployment
	RSs  []*appsv1.ReplicaSet
	Pods []*corev1.Pod // current RS pods first, then old RS pods
	Svc  *corev1.Service
}

func (w *World) podTemplate(s AppSpec, rev Rev, hash string) corev1.PodTemplateSpec {
	port := s.Port
	if rev.Port != 0 {
		port = rev.Port
	}
	memLim := s.MemLim
	if rev.MemLim != "" {
		memLim = rev.MemLim
	}
	env := s.Env
	if rev.Env != nil {
		env = rev.Env
	}
	c := corev1.Container{
		Name: s.Container, Image: rev.Image, Args: s.Args,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		Env:   env, EnvFrom: s.EnvFrom,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q(s.CPUReq), corev1.ResourceMemory: q(s.MemReq)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q(memLim)},
		},
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
	if s.CPULim != "" {
		c.Resources.Limits[corev1.ResourceCPU] = q(s.CPULim)
	}
	if s.ProbePath != "" {
		pp := s.ProbePort
		if pp == 0 {
			pp = port
		}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: s.ProbePath, Port: intstr.FromInt32(pp), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
		if s.Liveness {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(pp), Scheme: corev1.URISchemeHTTP}},
				InitialDelaySeconds: 15, TimeoutSeconds: 1, PeriodSeconds: 20, SuccessThreshold: 1, FailureThreshold: 3}
		}
	}
	labels := map[string]string{"app": s.Name, "app.kubernetes.io/name": s.Name}
	if hash != "" {
		labels["pod-template-hash"] = hash
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	ann := map[string]string{}
	if rev.Restart {
		ann["kubectl.kubernetes.io/restartedAt"] = rev.At.UTC().Format(time.RFC3339)
	}
	if len(ann) == 0 {
		ann = nil
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(30)), DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: s.Name, DeprecatedServiceAccount: s.Name, SecurityContext: &corev1.PodSecurityContext{},
			SchedulerName: "default-scheduler",
		},
	}
}

func ptr[T any](v T) *T { return &v }

func (w *World) addApp(s AppSpec) *App {
	if s.Container == "" {
		s.Container = s.Name
	}
	if s.CPUReq == "" {
		s.CPUReq = "250m"
	}
	if s.MemReq == "" {
		s.MemReq = "256Mi"
	}
	if s.MemLim == "" {
		s.MemLim = "512Mi"
	}
	if s.Port == 0 {
		s.Port = 8080
	}
	if s.NewPods == 0 && s.Replicas > 0 {
		s.NewPods = s.Replicas - s.OldPods
	}
	ns := w.ns(s.NS)
	a := &App{Spec: s}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": s.Name}}
	cur := s.Revs[len(s.Revs)-1]
	depCreated := s.Revs[0].At.Add(-time.Duration(30+w.R.IntN(200)) * 24 * time.Hour)
	revBase := int64(len(s.Revs))
	if len(s.Revs) > 0 {
		revBase = int64(3 + w.R.IntN(20) + len(s.Revs))
	}
	firstRev := revBase - int64(len(s.Revs)) + 1
	depUID := w.uid()
	depLabels := map[string]string{"app": s.Name, "app.kubernetes.io/name": s.Name, "app.kubernetes.io/managed-by": "Helm"}
	if s.Team != "" {
		depLabels["team"] = s.Team
	}
	dep := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.NS, UID: depUID, ResourceVersion: w.nextRV(), Generation: revBase + int64(w.R.IntN(4)),
			CreationTimestamp: mt(depCreated), Labels: depLabels,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(revBase), "meta.helm.sh/release-name": s.Name, "meta.helm.sh/release-namespace": s.NS}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(s.Replicas), Selector: selector,
			Template: w.podTemplate(s, cur, ""),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600)),
		},
	}
	for k, v := range s.Annotation {
		dep.Annotations[k] = v
	}
	dep.Status.ObservedGeneration = dep.Generation
	w.Stuck[depUID] = s.Stuck
	a.Dep = dep
	ns.Deps = append(ns.Deps, dep)
	for i, rev := range s.Revs {
		hash := w.suffix(10)
		tmpl := w.podTemplate(s, rev, hash)
		rsReplicas := int32(0)
		switch i {
		case len(s.Revs) - 1:
			rsReplicas = s.NewPods
		case len(s.Revs) - 2:
			rsReplicas = s.OldPods
		}
		ann := map[string]string{
			"deployment.kubernetes.io/desired-replicas": fmt.Sprint(s.Replicas),
			"deployment.kubernetes.io/max-replicas":     fmt.Sprint(s.Replicas + (s.Replicas+3)/4),
			"deployment.kubernetes.io/revision":         fmt.Sprint(firstRev + int64(i)),
			"meta.helm.sh/release-name":                 s.Name, "meta.helm.sh/release-namespace": s.NS,
		}
		if rev.Cause != "" {
			ann["kubernetes.io/change-cause"] = rev.Cause
		}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name + "-" + hash, Namespace: s.NS, UID: w.uid(), ResourceVersion: w.nextRV(), Generation: int64(2 + w.R.IntN(3)),
				CreationTimestamp: mt(rev.At), Labels: tmpl.Labels, Annotations: ann,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: s.Name, UID: depUID, Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(rsReplicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": s.Name, "pod-template-hash": hash}}, Template: tmpl},
		}
		rs.Status.ObservedGeneration = rs.Generation
		a.RSs = append(a.RSs, rs)
		ns.RSs = append(ns.RSs, rs)
	}
	mk := func(rs *appsv1.ReplicaSet, n int32, rev Rev) {
		for j := range n {
			node := s.Nodes[(int(j)+len(a.Pods))%len(s.Nodes)]
			start := rev.At.Add(time.Duration(2+w.R.IntN(40)) * time.Second)
			p := w.newPod(s.NS, rs.Name+"-"+w.suffix(5), rs.Spec.Template, node, start)
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
			p.GenerateName = rs.Name + "-"
			a.Pods = append(a.Pods, p)
			ns.Pods = append(ns.Pods, p)
		}
	}
	mk(a.RSs[len(a.RSs)-1], s.NewPods, cur)
	if len(a.RSs) > 1 && s.OldPods > 0 {
		mk(a.RSs[len(a.RSs)-2], s.OldPods, s.Revs[len(s.Revs)-2])
	}
	if !s.NoService {
		sp := s.SvcPort
		if sp == 0 {
			sp = 80
		}
		a.Svc = w.addService(s.NS, s.Name, map[string]string{"app": s.Name}, sp, intstr.FromString("http"), depCreated)
	}
	return a
}

func (w *World) addService(ns, name string, sel map[string]string, port int32, target intstr.IntOrString, created time.Time) *corev1.Service {
	ip := fmt.Sprintf("172.20.%d.%d", w.R.IntN(250)+1, w.R.IntN(250)+1)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: w.uid(), ResourceVersion: w.nextRV(), CreationTimestamp: mt(created),
			Labels: map[string]string{"app": name, "app.kubernetes.io/name": name}},
		Spec: corev1.ServiceSpec{
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: target}},
			Selector: sel, ClusterIP: ip, ClusterIPs: []string{ip}, Type: corev1.ServiceTypeClusterIP,
			SessionAffinity: corev1.ServiceAffinityNone, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack), InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
	n := w.ns(ns)
	n.Svcs = append(n.Svcs, svc)
	return svc
}

func (w *World) newPod(ns, name string, tmpl corev1.PodTemplateSpec, node string, start time.Time) *corev1.Pod {
	spec := *tmpl.Spec.DeepCopy()
	spec.NodeName = node
	spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
	}
	spec.Priority = ptr(int32(0))
	spec.EnableServiceLinks = ptr(true)
	spec.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
	vol := "kube-api-access-" + w.suffix(5)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(420)),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}})
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: vol, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	ni := w.nodeIndex(node)
	podIP := fmt.Sprintf("10.42.%d.%d", ni, 2+w.R.IntN(250))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: w.uid(), ResourceVersion: w.nextRV(), CreationTimestamp: mt(start.Add(-2 * time.Second)),
			Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec: spec,
	}
	var cs []corev1.ContainerStatus
	for _, c := range spec.Containers {
		img := c.Image
		cs = append(cs, corev1.ContainerStatus{
			Name: c.Name, Image: img, ImageID: imageRepo(img) + "@sha256:" + w.hex(64), ContainerID: "containerd://" + w.hex(64),
			Ready: true, Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(start.Add(3 * time.Second))}},
		})
	}
	qos := corev1.PodQOSBurstable
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: w.nodeIP(node), HostIPs: []corev1.HostIP{{IP: w.nodeIP(node)}}, PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: ptr(mt(start)), ContainerStatuses: cs, QOSClass: qos,
	}
	setPodConditions(p, start, start.Add(time.Duration(8+w.R.IntN(20))*time.Second))
	return p
}

func imageRepo(img string) string {
	if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
		return img[:i]
	}
	return img
}

// setPodConditions sets the five standard conditions from container readiness.
func setPodConditions(p *corev1.Pod, start, readyAt time.Time) {
	ready := len(p.Status.ContainerStatuses) > 0
	for _, c := range p.Status.ContainerStatuses {
		ready = ready && c.Ready
	}
	st := func(b bool) corev1.ConditionStatus {
		if b {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	running := p.Status.Phase == corev1.PodRunning
	c := []corev1.PodCondition{
		{Type: "PodReadyToStartContainers", Status: st(running), LastTransitionTime: mt(start.Add(2 * time.Second))},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: mt(start)},
		{Type: corev1.PodReady, Status: st(ready), LastTransitionTime: mt(readyAt)},
		{Type: corev1.ContainersReady, Status: st(ready), LastTransitionTime: mt(readyAt)},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: mt(start.Add(-time.Second))},
	}
	if !ready {
		var names []string
		for _, cs := range p.Status.ContainerStatuses {
			if !cs.Ready {
				names = append(names, cs.Name)
			}
		}
		msg := fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
		c[2].Reason, c[2].Message = "ContainersNotReady", msg
		c[3].Reason, c[3].Message = "ContainersNotReady", msg
	}
	p.Status.Conditions = c
}

// crashLoop puts container 0 of p in CrashLoopBackOff after its last
// termination.
func crashLoop(p *corev1.Pod, restarts int32, lastStart, lastEnd time.Time, reason string, exit int32, backoff string) {
	cs := &p.Status.ContainerStatuses[0]
	cs.Ready, cs.Started, cs.RestartCount = false, ptr(false), restarts
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, cs.Name, p.Name, p.Namespace, p.UID)}}
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason,
		StartedAt: mt(lastStart), FinishedAt: mt(lastEnd), ContainerID: cs.ContainerID}}
	setPodConditions(p, p.Status.StartTime.Time, lastEnd)
}

// restartedRunning marks container 0 as running again after a termination.
func restartedRunning(p *corev1.Pod, restarts int32, lastStart, lastEnd, runningSince time.Time, reason string, exit int32, ready bool) {
	cs := &p.Status.ContainerStatuses[0]
	cs.RestartCount, cs.Ready, cs.Started = restarts, ready, ptr(true)
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason,
		StartedAt: mt(lastStart), FinishedAt: mt(lastEnd), ContainerID: cs.ContainerID}}
	cs.ContainerID = "containerd://" + restartID(cs.ContainerID)
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(runningSince)}}
	setPodConditions(p, p.Status.StartTime.Time, runningSince.Add(9*time.Second))
}

// ---- events ----

type evSpec struct {
	NS, Kind, Name string
	UID            types.UID
	APIVersion     string
	FieldPath      string
	Type           string // Normal, Warning
	Reason, Msg    string
	First, Last    time.Time
	Count          int32
	Component      string // kubelet, default-scheduler, deployment-controller...
	Host           string
}

func (w *World) event(e evSpec) *corev1.Event {
	if e.Type == "" {
		e.Type = corev1.EventTypeNormal
	}
	if e.Count == 0 {
		e.Count = 1
	}
	if e.Last.IsZero() {
		e.Last = e.First
	}
	if e.APIVersion == "" {
		e.APIVersion = "v1"
		if e.Kind == "Deployment" || e.Kind == "ReplicaSet" || e.Kind == "DaemonSet" {
			e.APIVersion = "apps/v1"
		}
		if e.Kind == "Job" {
			e.APIVersion = "batch/v1"
		}
	}
	ns := e.NS
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", e.Name, e.First.UnixNano()+int64(w.R.IntN(1e6))), Namespace: ns, UID: w.uid(),
			ResourceVersion: w.nextRV(), CreationTimestamp: mt(e.First)},
		InvolvedObject: corev1.ObjectReference{Kind: e.Kind, Namespace: ns, Name: e.Name, UID: e.UID, APIVersion: e.APIVersion, FieldPath: e.FieldPath,
			ResourceVersion: fmt.Sprint(w.rv - int64(w.R.IntN(50000)))},
		Reason: e.Reason, Message: e.Msg, Source: corev1.EventSource{Component: e.Component, Host: e.Host},
		FirstTimestamp: mt(e.First), LastTimestamp: mt(e.Last), Count: e.Count, Type: e.Type,
		EventTime: metav1.MicroTime{}, ReportingController: reportingController(e.Component), ReportingInstance: e.Host,
	}
	if e.Kind == "Node" {
		ev.Namespace = "default"
		ev.ObjectMeta.Namespace = "default"
		ev.InvolvedObject.Namespace = ""
		ev.InvolvedObject.UID = types.UID(e.Name)
	}
	n := w.ns(ev.Namespace)
	n.Events = append(n.Events, ev)
	return ev
}

func reportingController(component string) string {
	switch component {
	case "":
		return ""
	case "kubelet":
		return "kubelet"
	}
	return component
}

// podEvent is a shorthand for an event about a pod's container.
func (w *World) podEvent(p *corev1.Pod, typ, reason, msg string, first, last time.Time, count int32) *corev1.Event {
	comp, host, fp := "kubelet", p.Spec.NodeName, "spec.containers{"+p.Spec.Containers[0].Name+"}"
	if reason == "Scheduled" || reason == "FailedScheduling" {
		comp, host, fp = "default-scheduler", "", ""
	}
	return w.event(evSpec{NS: p.Namespace, Kind: "Pod", Name: p.Name, UID: p.UID, FieldPath: fp, Type: typ, Reason: reason, Msg: msg,
		First: first, Last: last, Count: count, Component: comp, Host: host})
}

// startupEvents adds the usual Scheduled/Pulling/Pulled/Created/Started events of a pod.
func (w *World) startupEvents(p *corev1.Pod) {
	t := p.Status.StartTime.Time
	img := p.Spec.Containers[0].Image
	w.podEvent(p, "Normal", "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", p.Namespace, p.Name, p.Spec.NodeName), t.Add(-time.Second), time.Time{}, 1)
	w.podEvent(p, "Normal", "Pulling", fmt.Sprintf("Pulling image %q", img), t, time.Time{}, 1)
	w.podEvent(p, "Normal", "Pulled", fmt.Sprintf("Successfully pulled image %q in %.3fs (%.3fs including waiting). Image size: %d bytes.", img, 1.2+w.R.Float64()*3, 1.3+w.R.Float64()*3, 40_000_000+w.R.IntN(90_000_000)), t.Add(2*time.Second), time.Time{}, 1)
	w.podEvent(p, "Normal", "Created", "Created container: "+p.Spec.Containers[0].Name, t.Add(3*time.Second), time.Time{}, 1)
	w.podEvent(p, "Normal", "Started", "Started container "+p.Spec.Containers[0].Name, t.Add(3*time.Second), time.Time{}, 1)
}

func (w *World) scalingEvent(a *App, rs *appsv1.ReplicaSet, at time.Time, msg string) {
	w.event(evSpec{NS: a.Spec.NS, Kind: "Deployment", Name: a.Dep.Name, UID: a.Dep.UID, Reason: "ScalingReplicaSet", Msg: msg, First: at, Component: "deployment-controller"})
	_ = rs
}

func (w *World) rsCreateEvent(rs *appsv1.ReplicaSet, pod *corev1.Pod) {
	w.event(evSpec{NS: rs.Namespace, Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Reason: "SuccessfulCreate", Msg: "Created pod: " + pod.Name,
		First: pod.CreationTimestamp.Time, Component: "replicaset-controller"})
}

// ---- status derivation ----

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *World) finalize() {
	for _, ns := range w.NS {
		for _, rs := range ns.RSs {
			var n, ready int32
			for _, p := range ns.Pods {
				if len(p.OwnerReferences) > 0 && p.OwnerReferences[0].UID == rs.UID && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
					n++
					if podReady(p) {
						ready++
					}
				}
			}
			rs.Status.Replicas, rs.Status.FullyLabeledReplicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = n, n, ready, ready
			if rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0 {
				rs.Status.FullyLabeledReplicas = n
			}
		}
		for _, d := range ns.Deps {
			var total, updated, ready int32
			var newest *appsv1.ReplicaSet
			for _, rs := range ns.RSs {
				if len(rs.OwnerReferences) == 0 || rs.OwnerReferences[0].UID != d.UID {
					continue
				}
				if newest == nil || rs.CreationTimestamp.After(newest.CreationTimestamp.Time) {
					newest = rs
				}
				total += rs.Status.Replicas
				ready += rs.Status.ReadyReplicas
			}
			if newest != nil {
				updated = newest.Status.Replicas
			}
			want := *d.Spec.Replicas
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = total, updated, ready, ready
			if want-ready > 0 {
				d.Status.UnavailableReplicas = want - ready
			}
			maxUnav := want / 4
			avail := ready >= want-maxUnav
			newestAt := d.CreationTimestamp.Time
			if newest != nil {
				newestAt = newest.CreationTimestamp.Time
			}
			ac := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: "Deployment has minimum availability.", LastUpdateTime: mt(newestAt.Add(40 * time.Second)), LastTransitionTime: mt(newestAt.Add(40 * time.Second))}
			if !avail {
				ac.Status, ac.Reason, ac.Message = corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
				ac.LastUpdateTime, ac.LastTransitionTime = mt(w.unavailableSince(d, newestAt)), mt(w.unavailableSince(d, newestAt))
			}
			pc := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				LastUpdateTime: mt(newestAt.Add(45 * time.Second)), LastTransitionTime: mt(d.CreationTimestamp.Add(time.Minute))}
			if newest != nil {
				pc.Message = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newest.Name)
				complete := updated == want && ready == total && total == want
				stuck := w.Stuck[d.UID]
				if !complete || stuck {
					if stuck || w.Now.Sub(newestAt) > 10*time.Minute {
						pc.Status, pc.Reason, pc.Message = corev1.ConditionFalse, "ProgressDeadlineExceeded", fmt.Sprintf("ReplicaSet %q has timed out progressing.", newest.Name)
						pc.LastUpdateTime, pc.LastTransitionTime = mt(newestAt.Add(10*time.Minute)), mt(newestAt.Add(10*time.Minute))
					} else {
						pc.Reason, pc.Message = "ReplicaSetUpdated", fmt.Sprintf("ReplicaSet %q is progressing.", newest.Name)
						pc.LastUpdateTime = mt(newestAt.Add(5 * time.Second))
					}
				}
			}
			d.Status.Conditions = []appsv1.DeploymentCondition{ac, pc}
		}
		for _, ds := range ns.DSs {
			var n, ready int32
			for _, p := range ns.Pods {
				if len(p.OwnerReferences) > 0 && p.OwnerReferences[0].UID == ds.UID {
					n++
					if podReady(p) {
						ready++
					}
				}
			}
			ds.Status = appsv1.DaemonSetStatus{CurrentNumberScheduled: n, DesiredNumberScheduled: n, NumberReady: ready, NumberAvailable: ready,
				UpdatedNumberScheduled: n, ObservedGeneration: ds.Generation}
			if n-ready > 0 {
				ds.Status.NumberUnavailable = n - ready
			}
		}
	}
}

func (w *World) unavailableSince(d *appsv1.Deployment, fallback time.Time) time.Time {
	if t, ok := w.UnavailableSince[d.UID]; ok {
		return t
	}
	return fallback.Add(2 * time.Minute)
}

// ---- system namespaces (noise) ----

// systemPods adds kube-system (coredns, kube-proxy, aws-node, metrics-server)
// and empty default namespaces, all healthy.
func (w *World) systemPods(nodes []string) {
	for _, n := range []string{"default", "kube-node-lease", "kube-public"} {
		w.ns(n)
	}
	created := w.Nodes[0].CreationTimestamp.Time
	w.addService("default", "kubernetes", nil, 443, intstr.FromInt32(443), created.Add(-time.Hour))
	def := w.ns("default")
	def.Svcs[len(def.Svcs)-1].Spec.Ports[0].Name = "https"
	def.Svcs[len(def.Svcs)-1].Labels = map[string]string{"component": "apiserver", "provider": "kubernetes"}
	def.Svcs[len(def.Svcs)-1].Spec.Selector = nil

	coredns := w.addApp(AppSpec{NS: "kube-system", Name: "coredns", Replicas: 2, Port: 53, CPUReq: "100m", MemReq: "70Mi", MemLim: "170Mi", NoService: true,
		Revs: []Rev{{Image: "registry.k8s.io/coredns/coredns:v1.11.3", At: created.Add(10 * time.Minute)}}, Nodes: nodes[1:], Labels: map[string]string{"k8s-app": "kube-dns"}})
	coredns.Pods[0].Spec.Containers[0].Args = []string{"-conf", "/etc/coredns/Corefile"}
	w.addService("kube-system", "kube-dns", map[string]string{"k8s-app": "kube-dns"}, 53, intstr.FromInt32(53), created)
	w.addApp(AppSpec{NS: "kube-system", Name: "metrics-server", Replicas: 1, Port: 10250, CPUReq: "100m", MemReq: "200Mi", MemLim: "400Mi", SvcPort: 443,
		Revs: []Rev{{Image: "registry.k8s.io/metrics-server/metrics-server:v0.7.2", At: created.Add(15 * time.Minute)}}, Nodes: nodes, ProbePath: "/readyz", ProbePort: 10250})
	w.addDaemonSet("kube-system", "kube-proxy", "602401143452.dkr.ecr.eu-west-1.amazonaws.com/eks/kube-proxy:v1.31.3-minimal-eksbuild.2", nodes, created)
	w.addDaemonSet("kube-system", "aws-node", "602401143452.dkr.ecr.eu-west-1.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1", nodes, created)
	for _, p := range w.ns("kube-system").Pods {
		switch {
		case strings.HasPrefix(p.Name, "coredns"):
			w.podLog(p, "", w.corednsLog(p.Status.StartTime.Time))
		case strings.HasPrefix(p.Name, "kube-proxy"):
			w.podLog(p, "", fmt.Sprintf("I%s       1 server_linux.go:66] \"Using iptables proxy\"\nI%s       1 server.go:677] \"Successfully retrieved node IP(s)\" IPs=[\"%s\"]\nI%s       1 shared_informer.go:320] Caches are synced for service config\n",
				klogTime(p.Status.StartTime.Add(time.Second)), klogTime(p.Status.StartTime.Add(time.Second)), p.Status.HostIP, klogTime(p.Status.StartTime.Add(2*time.Second))))
		case strings.HasPrefix(p.Name, "aws-node"):
			w.podLog(p, "", fmt.Sprintf("{\"level\":\"info\",\"ts\":\"%s\",\"caller\":\"entrypoint.sh\",\"msg\":\"Checking for IPAM connectivity ... \"}\n{\"level\":\"info\",\"ts\":\"%s\",\"caller\":\"entrypoint.sh\",\"msg\":\"Copying config file ... \"}\n{\"level\":\"info\",\"ts\":\"%s\",\"caller\":\"entrypoint.sh\",\"msg\":\"Successfully copied CNI plugin binary and config file.\"}\n",
				p.Status.StartTime.Add(2*time.Second).Format("2006-01-02T15:04:05.000Z"), p.Status.StartTime.Add(3*time.Second).Format("2006-01-02T15:04:05.000Z"), p.Status.StartTime.Add(4*time.Second).Format("2006-01-02T15:04:05.000Z")))
		case strings.HasPrefix(p.Name, "metrics-server"):
			w.podLog(p, "", fmt.Sprintf("I%s       1 serving.go:374] Generated self-signed cert (/tmp/apiserver.crt, /tmp/apiserver.key)\nI%s       1 secure_serving.go:213] Serving securely on [::]:10250\nE%s       1 scraper.go:149] \"Failed to scrape node\" err=\"Get \\\"https://%s:10250/metrics/resource\\\": context deadline exceeded\" node=%q\n",
				klogTime(p.Status.StartTime.Add(time.Second)), klogTime(p.Status.StartTime.Add(2*time.Second)), klogTime(w.ago(time.Duration(26+w.R.IntN(20))*time.Hour)), w.nodeIP(nodes[2]), nodes[2]))
		}
	}
}

func klogTime(t time.Time) string { return t.UTC().Format("0102 15:04:05.000000") }

func (w *World) corednsLog(start time.Time) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, ".:53\n[INFO] plugin/reload: Running configuration SHA512 = %s\nCoreDNS-1.11.3\nlinux/amd64, go1.21.11, a6338e9\n", w.hex(128))
	fmt.Fprintf(&sb, "[ERROR] plugin/errors: 2 %d.%d.%d.%d.in-addr.arpa. PTR: read udp 10.42.1.8:48211->10.0.0.2:53: i/o timeout\n", 10+w.R.IntN(5), w.R.IntN(250), w.R.IntN(250), w.R.IntN(250))
	return sb.String()
}

func (w *World) addDaemonSet(ns, name, image string, nodes []string, created time.Time) *appsv1.DaemonSet {
	n := w.ns(ns)
	uid := w.uid()
	hash := w.suffix(10)[:9]
	labels := map[string]string{"k8s-app": name}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: name, Image: image, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("25m"), corev1.ResourceMemory: q("40Mi")}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}},
		RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, HostNetwork: true, PriorityClassName: "system-node-critical",
		ServiceAccountName: name, TerminationGracePeriodSeconds: ptr(int64(30)), SchedulerName: "default-scheduler",
	}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, ResourceVersion: w.nextRV(), Generation: 2, CreationTimestamp: mt(created),
			Labels: labels, Annotations: map[string]string{"deprecated.daemonset.template.generation": "2"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl,
			UpdateStrategy:       appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromString("10%")), MaxSurge: ptr(intstr.FromInt32(0))}},
			RevisionHistoryLimit: ptr(int32(10))},
	}
	n.DSs = append(n.DSs, ds)
	for _, node := range nodes {
		t := tmpl
		t.Labels = map[string]string{"k8s-app": name, "controller-revision-hash": hash, "pod-template-generation": "2"}
		nodeCreated := created
		for _, nn := range w.Nodes {
			if nn.Name == node {
				nodeCreated = nn.CreationTimestamp.Time
			}
		}
		p := w.newPod(ns, name+"-"+w.suffix(5), t, node, nodeCreated.Add(time.Duration(20+w.R.IntN(30))*time.Second))
		p.GenerateName = name + "-"
		p.Status.PodIP, p.Status.PodIPs = p.Status.HostIP, []corev1.PodIP{{IP: p.Status.HostIP}}
		p.Spec.Priority = ptr(int32(2000001000))
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: uid, Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
		n.Pods = append(n.Pods, p)
	}
	return ds
}

// ---- logs ----

// podLog appends a container section to the pod's logs.txt; container ""
// means the pod's first container.
func (w *World) podLog(p *corev1.Pod, container, text string) {
	if container == "" {
		container = p.Spec.Containers[0].Name
	}
	n := w.ns(p.Namespace)
	n.Logs[p.Name] = append(n.Logs[p.Name], section{container, text})
}

func (w *World) prevLog(p *corev1.Pod, text string) {
	n := w.ns(p.Namespace)
	if n.Prev[p.Name] == nil {
		n.Prev[p.Name] = map[string]string{}
	}
	n.Prev[p.Name][p.Spec.Containers[0].Name] = text
}

// ---- conversion to events.k8s.io ----

func toNewEvent(e *corev1.Event) eventsv1.Event {
	ne := eventsv1.Event{
		ObjectMeta: e.ObjectMeta, EventTime: metav1.NewMicroTime(e.FirstTimestamp.Time), ReportingController: e.ReportingController,
		ReportingInstance: e.ReportingInstance, Action: actionFor(e.Reason), Reason: e.Reason, Regarding: e.InvolvedObject, Note: e.Message, Type: e.Type,
	}
	if ne.ReportingController == "" {
		ne.ReportingController = e.Source.Component
	}
	if ne.ReportingInstance == "" {
		ne.ReportingInstance = e.Source.Component + "-" + "ip-10-0-0-10"
	}
	if e.Count > 1 {
		ne.Series = &eventsv1.EventSeries{Count: e.Count, LastObservedTime: metav1.NewMicroTime(e.LastTimestamp.Time)}
	}
	if e.Source.Component == "kubelet" {
		ne.DeprecatedSource = e.Source
	}
	return ne
}

func actionFor(reason string) string {
	switch reason {
	case "Scheduled", "FailedScheduling":
		return "Scheduling"
	case "Unhealthy":
		return "Probe"
	case "BackOff":
		return "BackOff"
	case "Pulling", "Pulled", "Failed":
		return "Pull"
	case "Killing":
		return "Kill"
	case "ScalingReplicaSet":
		return "Scale"
	}
	return "Update"
}

func sortEvents(evs []*corev1.Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].LastTimestamp.Before(&evs[j].LastTimestamp) })
}

// restartID derives a new container ID for a restarted container.
func restartID(id string) string {
	id = strings.TrimPrefix(id, "containerd://")
	b := []byte(id)
	for i := range b {
		switch {
		case b[i] >= '0' && b[i] < '9', b[i] >= 'a' && b[i] < 'f':
			b[i]++
		case b[i] == '9':
			b[i] = 'a'
		case b[i] == 'f':
			b[i] = '0'
		}
	}
	return string(b)
}
