package kubetext

import (
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: apiVersions[kind]}
}

func describePod(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	pod := &corev1.Pod{TypeMeta: typeMeta("Pod"), ObjectMeta: meta}
	if pod.Name == "" {
		return nil, false
	}
	pod.Spec.ServiceAccountName = root.get("Service Account")
	if n := root.get("Node"); n != "" {
		node, ip, _ := strings.Cut(n, "/")
		pod.Spec.NodeName, pod.Status.HostIP = node, ip
	}
	if t, ok := parseDescribeTime(root.get("Start Time")); ok {
		pod.Status.StartTime = &t
	}
	if n, ok := atoi32(root.get("Priority")); ok {
		pod.Spec.Priority = &n
	}
	pod.Spec.PriorityClassName = root.get("Priority Class Name")
	status := root.get("Status")
	if rest, ok := strings.CutPrefix(status, "Terminating"); ok {
		// "Terminating (lasts 2m)": deleted that long ago; the phase is not shown.
		if d, ok := parseAge(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(rest), "(lasts "), ")")); ok && !p.ref.IsZero() {
			t := p.before(d)
			pod.DeletionTimestamp = &t
		}
	} else if status != "" {
		pod.Status.Phase = corev1.PodPhase(status)
	}
	pod.Status.Reason = root.get("Reason")
	pod.Status.Message = root.get("Message")
	pod.Status.PodIP = root.get("IP")
	// IPs:
	//   IP:  10.244.1.17
	for _, ip := range root.child("IPs").children() {
		if v := strings.TrimSpace(ip.val); ip.key == "IP" && v != "" {
			pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: v})
		}
	}
	if len(pod.Status.PodIPs) == 0 && pod.Status.PodIP != "" {
		pod.Status.PodIPs = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	pod.Spec.InitContainers, pod.Status.InitContainerStatuses = p.containers(root.child("Init Containers"))
	pod.Spec.Containers, pod.Status.ContainerStatuses = p.containers(root.child("Containers"))
	for _, row := range tableRows(root.child("Conditions")) {
		if len(row) >= 2 && row[0] != "" {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(row[0]), Status: corev1.ConditionStatus(row[1])})
		}
	}
	pod.Spec.Volumes = volumes(root.child("Volumes"))
	pod.Status.QOSClass = corev1.PodQOSClass(root.get("QoS Class"))
	pod.Spec.NodeSelector = labelMap(root.child("Node-Selectors").values())
	pod.Spec.Tolerations = tolerations(root.child("Tolerations").values())
	return pod, true
}

// tableRows returns the rows of a describe table (the header dropped).
func tableRows(n *dnode) [][]string {
	t := n.table(1000)
	if t == nil {
		return nil
	}
	return t.rows
}

// containers reads "Containers:" (or "Init Containers:"): one child per
// container. Statuses are returned only for containers whose state the
// page shows.
func (p *parser) containers(n *dnode) ([]corev1.Container, []corev1.ContainerStatus) {
	if n == nil {
		return nil, nil
	}
	var cs []corev1.Container
	var sts []corev1.ContainerStatus
	for _, k := range n.kids {
		if !k.hasKey || k.val != "" {
			continue
		}
		c := corev1.Container{Name: k.key, Image: k.get("Image")}
		c.Ports = ports(k)
		c.Command = listItems(k.child("Command"))
		c.Args = listItems(k.child("Args"))
		c.Resources.Limits = resources(k.child("Limits"))
		c.Resources.Requests = resources(k.child("Requests"))
		c.LivenessProbe = probe(k.get("Liveness"))
		c.ReadinessProbe = probe(k.get("Readiness"))
		c.StartupProbe = probe(k.get("Startup"))
		c.EnvFrom = envFrom(k.child("Environment Variables from"))
		c.Env = env(k.child("Environment"))
		c.VolumeMounts = mounts(k.child("Mounts"))
		cs = append(cs, c)
		if k.child("State") == nil && k.child("Ready") == nil && k.child("Restart Count") == nil {
			continue
		}
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: k.get("Image ID"), ContainerID: k.get("Container ID")}
		st.State = p.state(k.child("State"))
		st.LastTerminationState = p.state(k.child("Last State"))
		st.Ready = k.get("Ready") == "True"
		if n, ok := atoi32(k.get("Restart Count")); ok {
			st.RestartCount = n
		}
		if st.State.Running != nil {
			st.Started = ptr(true)
		}
		sts = append(sts, st)
	}
	return cs, sts
}

// state reads "State:  Waiting" and its Reason, Message, Exit Code,
// Signal, Started and Finished lines.
func (p *parser) state(n *dnode) corev1.ContainerState {
	var s corev1.ContainerState
	if n == nil {
		return s
	}
	started, _ := parseDescribeTime(n.get("Started"))
	finished, _ := parseDescribeTime(n.get("Finished"))
	switch strings.TrimSpace(n.val) {
	case "Waiting":
		s.Waiting = &corev1.ContainerStateWaiting{Reason: n.get("Reason"), Message: n.get("Message")}
	case "Running":
		s.Running = &corev1.ContainerStateRunning{StartedAt: started}
	case "Terminated":
		t := &corev1.ContainerStateTerminated{Reason: n.get("Reason"), Message: n.get("Message"), StartedAt: started, FinishedAt: finished}
		if c, ok := atoi32(n.get("Exit Code")); ok {
			t.ExitCode = c
		}
		if c, ok := atoi32(n.get("Signal")); ok {
			t.Signal = c
		}
		s.Terminated = t
	}
	return s
}

// ports reads "Port:  8080/TCP" or "Ports:  8080/TCP, 9090/TCP" (with
// "Host Port(s)").
func ports(k *dnode) []corev1.ContainerPort {
	v := k.get("Port")
	if v == "" {
		v = k.get("Ports")
	}
	hv := k.get("Host Port")
	if hv == "" {
		hv = k.get("Host Ports")
	}
	hosts := strings.Split(hv, ",")
	var out []corev1.ContainerPort
	for i, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		num, proto, _ := strings.Cut(s, "/")
		n, err := strconv.ParseInt(num, 10, 32)
		if err != nil || n <= 0 {
			continue
		}
		cp := corev1.ContainerPort{ContainerPort: int32(n), Protocol: corev1.Protocol(proto)}
		if i < len(hosts) {
			h, _, _ := strings.Cut(strings.TrimSpace(hosts[i]), "/")
			if hn, err := strconv.ParseInt(h, 10, 32); err == nil {
				cp.HostPort = int32(hn)
			}
		}
		out = append(out, cp)
	}
	return out
}

func listItems(n *dnode) []string {
	if n == nil {
		return nil
	}
	var out []string
	if v := strings.TrimSpace(n.val); v != "" {
		out = append(out, v)
	}
	for _, k := range n.kids {
		out = append(out, strings.TrimSpace(k.raw))
	}
	return out
}

// resources reads "cpu:  100m" lines.
func resources(n *dnode) corev1.ResourceList {
	if n == nil {
		return nil
	}
	var rl corev1.ResourceList
	for _, k := range n.kids {
		if !k.hasKey {
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(k.val))
		if err != nil {
			continue
		}
		if rl == nil {
			rl = corev1.ResourceList{}
		}
		rl[corev1.ResourceName(k.key)] = q
	}
	return rl
}

var (
	secretRefRe    = regexp.MustCompile(`^<set to the key '([^']*)' in secret '([^']*)'>(?:\s+Optional: (true|false))?`)
	configMapRefRe = regexp.MustCompile(`^<set to the key '([^']*)' of config map '([^']*)'>(?:\s+Optional: (true|false))?`)
	fieldRefRe     = regexp.MustCompile(`\((v1|[a-z0-9.]+/v[a-z0-9]+):([^)]+)\)$`)
	resourceRefRe  = regexp.MustCompile(`\(((?:limits|requests)\.[a-z0-9.\-/]+)\)$`)
)

// env reads "Environment:" lines: literal values, secret and config map
// keys, field and resource references. Values of secrets are never shown
// by kubectl, and never kept here.
func env(n *dnode) []corev1.EnvVar {
	if n == nil {
		return nil
	}
	var out []corev1.EnvVar
	for _, k := range n.kids {
		if !k.hasKey {
			continue
		}
		e := corev1.EnvVar{Name: k.key}
		v := strings.TrimSpace(k.val)
		switch {
		case secretRefRe.MatchString(v):
			m := secretRefRe.FindStringSubmatch(v)
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: m[1], LocalObjectReference: corev1.LocalObjectReference{Name: m[2]}}}
			if m[3] != "" {
				e.ValueFrom.SecretKeyRef.Optional = ptr(m[3] == "true")
			}
		case configMapRefRe.MatchString(v):
			m := configMapRefRe.FindStringSubmatch(v)
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: m[1], LocalObjectReference: corev1.LocalObjectReference{Name: m[2]}}}
			if m[3] != "" {
				e.ValueFrom.ConfigMapKeyRef.Optional = ptr(m[3] == "true")
			}
		case fieldRefRe.MatchString(v):
			m := fieldRefRe.FindStringSubmatch(v)
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: m[1], FieldPath: m[2]}}
		case resourceRefRe.MatchString(v):
			m := resourceRefRe.FindStringSubmatch(v)
			e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: m[1]}}
		default:
			e.Value = strings.Join(append([]string{v}, k.more...), "\n")
		}
		out = append(out, e)
	}
	return out
}

// envFrom reads "Environment Variables from:" lines:
// "NAME  ConfigMap|Secret  [Prefix: P]  Optional: false".
func envFrom(n *dnode) []corev1.EnvFromSource {
	if n == nil {
		return nil
	}
	var out []corev1.EnvFromSource
	for _, k := range n.kids {
		f := splitRuns(k.raw)
		if len(f) < 2 {
			continue
		}
		var src corev1.EnvFromSource
		for _, x := range f[2:] {
			if pfx, ok := strings.CutPrefix(x, "Prefix: "); ok {
				src.Prefix = pfx
			}
		}
		opt := strings.HasSuffix(k.raw, "Optional: true")
		switch f[1] {
		case "ConfigMap":
			src.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: f[0]}, Optional: ptr(opt)}
		case "Secret":
			src.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: f[0]}, Optional: ptr(opt)}
		default:
			continue
		}
		out = append(out, src)
	}
	return out
}

var mountRe = regexp.MustCompile(`^(\S+) from (\S+) \((r[ow])(?:,path="([^"]*)")?\)`)

// mounts reads "/data from data (rw)" lines.
func mounts(n *dnode) []corev1.VolumeMount {
	if n == nil {
		return nil
	}
	var out []corev1.VolumeMount
	for _, k := range n.kids {
		m := mountRe.FindStringSubmatch(strings.TrimSpace(k.raw))
		if m == nil {
			continue
		}
		out = append(out, corev1.VolumeMount{MountPath: m[1], Name: m[2], ReadOnly: m[3] == "ro", SubPath: m[4]})
	}
	return out
}

// volumes reads "Volumes:": one child per volume with its Type line.
func volumes(n *dnode) []corev1.Volume {
	if n == nil {
		return nil
	}
	var out []corev1.Volume
	for _, k := range n.kids {
		if !k.hasKey || k.val != "" {
			continue
		}
		v := corev1.Volume{Name: k.key}
		typ, _, _ := strings.Cut(k.get("Type"), " ")
		switch typ {
		case "PersistentVolumeClaim":
			v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.get("ClaimName"), ReadOnly: k.get("ReadOnly") == "true"}
		case "ConfigMap":
			v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: k.get("Name")}}
			if o := k.get("Optional"); o != "" {
				v.ConfigMap.Optional = ptr(o == "true")
			}
		case "Secret":
			v.Secret = &corev1.SecretVolumeSource{SecretName: k.get("SecretName")}
			if o := k.get("Optional"); o != "" {
				v.Secret.Optional = ptr(o == "true")
			}
		case "EmptyDir":
			v.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(k.get("Medium"))}
			if q, err := resource.ParseQuantity(k.get("SizeLimit")); err == nil {
				v.EmptyDir.SizeLimit = &q
			}
		case "HostPath":
			v.HostPath = &corev1.HostPathVolumeSource{Path: k.get("Path")}
		case "Projected":
			v.Projected = &corev1.ProjectedVolumeSource{}
		default:
			continue
		}
		out = append(out, v)
	}
	return out
}

var tolRe = regexp.MustCompile(`^([^=:\s]*)(?:=([^:\s]*))?(?::(\w+))?(?:\s+op=(\w+))?(?:\s+for (\d+)s)?$`)

// tolerations reads "key=value:Effect op=Exists for 300s" items.
func tolerations(items []string) []corev1.Toleration {
	var out []corev1.Toleration
	for _, it := range items {
		m := tolRe.FindStringSubmatch(strings.TrimSpace(it))
		if m == nil {
			continue
		}
		t := corev1.Toleration{Key: m[1], Value: m[2], Effect: corev1.TaintEffect(m[3]), Operator: corev1.TolerationOperator(m[4])}
		if t.Operator == "" {
			t.Operator = corev1.TolerationOpEqual
		}
		if m[5] != "" {
			s, _ := strconv.ParseInt(m[5], 10, 64)
			t.TolerationSeconds = &s
		}
		out = append(out, t)
	}
	return out
}

var probeRe = regexp.MustCompile(`^(http-get|tcp-socket|exec|grpc)\s+(.*?)\s*delay=(\d+)s timeout=(\d+)s period=(\d+)s #success=(\d+) #failure=(\d+)`)

// probe reads "http-get http://:8080/healthz delay=0s timeout=1s period=10s
// #success=1 #failure=3": the handler kind, its target and the timings.
// kubectl prints the handler as "http-get <scheme>://<host>:<port><path>",
// "tcp-socket <host>:<port>", "grpc <pod>:<port> <service>" or
// "exec [cmd ...]"; a port may be a number or a named container port.
func probe(s string) *corev1.Probe {
	m := probeRe.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	n := func(i int) int32 { v, _ := strconv.ParseInt(m[i], 10, 32); return int32(v) }
	pr := &corev1.Probe{InitialDelaySeconds: n(3), TimeoutSeconds: n(4), PeriodSeconds: n(5), SuccessThreshold: n(6), FailureThreshold: n(7)}
	switch m[1] {
	case "http-get":
		scheme, host, port, path := probeURL(m[2])
		pr.HTTPGet = &corev1.HTTPGetAction{Scheme: scheme, Host: host, Port: port, Path: path}
	case "tcp-socket":
		host, port := probeHostPort(m[2])
		pr.TCPSocket = &corev1.TCPSocketAction{Host: host, Port: port}
	case "exec":
		pr.Exec = &corev1.ExecAction{Command: strings.Fields(strings.Trim(m[2], "[]"))}
	case "grpc":
		target, service, _ := strings.Cut(m[2], " ")
		_, port := probeHostPort(target)
		pr.GRPC = &corev1.GRPCAction{Port: port.IntVal}
		if service = strings.TrimSpace(service); service != "" && service != "<service>" {
			pr.GRPC.Service = &service
		}
	}
	return pr
}

// probeURL splits kubectl's "http://host:8080/healthz" (host often empty)
// into the HTTPGetAction's parts.
func probeURL(u string) (scheme corev1.URIScheme, host string, port intstr.IntOrString, path string) {
	rest := u
	if i := strings.Index(u, "://"); i >= 0 {
		scheme = corev1.URIScheme(strings.ToUpper(u[:i]))
		rest = u[i+3:]
	} else {
		return "", "", intstr.IntOrString{}, u
	}
	hostPort := rest
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		hostPort, path = rest[:j], rest[j:]
	}
	host, port = probeHostPort(hostPort)
	return scheme, host, port, path
}

// probeHostPort reads "host:port", ":8080", ":http" or "[::1]:8080"; the
// port is a number when it parses as one and a port name otherwise.
func probeHostPort(hp string) (string, intstr.IntOrString) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return hp, intstr.IntOrString{}
	}
	host, p := strings.Trim(hp[:i], "[]"), hp[i+1:]
	if p == "" {
		return host, intstr.IntOrString{}
	}
	return host, intstr.Parse(p)
}
