package kubetext

import (
	"regexp"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func describeNode(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	n := &corev1.Node{TypeMeta: typeMeta("Node"), ObjectMeta: meta}
	for _, t := range root.child("Taints").values() {
		kv, effect, _ := strings.Cut(t, ":")
		k, v, _ := strings.Cut(kv, "=")
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	n.Spec.Unschedulable = root.get("Unschedulable") == "true"
	n.Spec.PodCIDR = root.get("PodCIDR")
	n.Spec.ProviderID = root.get("ProviderID")
	t := root.child("Conditions").table(100)
	if t != nil {
		for _, row := range t.rows {
			c := corev1.NodeCondition{Type: corev1.NodeConditionType(t.get(row, "Type")), Status: corev1.ConditionStatus(t.get(row, "Status")),
				Reason: t.get(row, "Reason"), Message: t.get(row, "Message")}
			if c.Type == "" {
				continue
			}
			c.LastHeartbeatTime, _ = parseDescribeTime(t.get(row, "LastHeartbeatTime"))
			c.LastTransitionTime, _ = parseDescribeTime(t.get(row, "LastTransitionTime"))
			n.Status.Conditions = append(n.Status.Conditions, c)
		}
	}
	for _, a := range root.child("Addresses").children() {
		if a.hasKey && strings.TrimSpace(a.val) != "" {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.key), Address: strings.TrimSpace(a.val)})
		}
	}
	n.Status.Capacity = resources(root.child("Capacity"))
	n.Status.Allocatable = resources(root.child("Allocatable"))
	si := root.child("System Info")
	n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: si.get("Machine ID"), SystemUUID: si.get("System UUID"), BootID: si.get("Boot ID"),
		KernelVersion: si.get("Kernel Version"), OSImage: si.get("OS Image"), OperatingSystem: si.get("Operating System"),
		Architecture: si.get("Architecture"), ContainerRuntimeVersion: si.get("Container Runtime Version"),
		KubeletVersion: si.get("Kubelet Version"), KubeProxyVersion: si.get("Kube-Proxy Version")}
	return n, true
}

// accessModes reads "RWO,RWX".
func accessModes(s string) []corev1.PersistentVolumeAccessMode {
	full := map[string]corev1.PersistentVolumeAccessMode{"RWO": corev1.ReadWriteOnce, "ROX": corev1.ReadOnlyMany,
		"RWX": corev1.ReadWriteMany, "RWOP": corev1.ReadWriteOncePod}
	var out []corev1.PersistentVolumeAccessMode
	for _, m := range strings.Split(s, ",") {
		if a, ok := full[strings.TrimSpace(m)]; ok {
			out = append(out, a)
		}
	}
	return out
}

func describePVC(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	c := &corev1.PersistentVolumeClaim{TypeMeta: typeMeta("PersistentVolumeClaim"), ObjectMeta: meta}
	if sc := root.get("StorageClass"); sc != "" {
		c.Spec.StorageClassName = &sc
	}
	c.Status.Phase = corev1.PersistentVolumeClaimPhase(root.get("Status"))
	c.Spec.VolumeName = root.get("Volume")
	if q, err := resource.ParseQuantity(root.get("Capacity")); err == nil {
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
	}
	c.Status.AccessModes = accessModes(root.get("Access Modes"))
	if vm := root.get("VolumeMode"); vm != "" {
		c.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode(vm))
	}
	return c, true
}

func describePV(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	v := &corev1.PersistentVolume{TypeMeta: typeMeta("PersistentVolume"), ObjectMeta: meta}
	v.Spec.StorageClassName = root.get("StorageClass")
	v.Status.Phase = corev1.PersistentVolumePhase(root.get("Status"))
	v.Status.Message = root.get("Message")
	if ns, name, ok := strings.Cut(root.get("Claim"), "/"); ok {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name}
	}
	v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(root.get("Reclaim Policy"))
	v.Spec.AccessModes = accessModes(root.get("Access Modes"))
	if q, err := resource.ParseQuantity(root.get("Capacity")); err == nil {
		v.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
	}
	if vm := root.get("VolumeMode"); vm != "" {
		v.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode(vm))
	}
	v.Spec.NodeAffinity = pvNodeAffinity(root.child("Node Affinity"))
	src := root.child("Source")
	typ, _, _ := strings.Cut(src.get("Type"), " ")
	switch typ {
	case "HostPath":
		v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: src.get("Path")}
	case "CSI":
		v.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: src.get("Driver"), VolumeHandle: src.get("VolumeHandle")}
	case "NFS":
		v.Spec.NFS = &corev1.NFSVolumeSource{Server: src.get("Server"), Path: src.get("Path")}
	case "LocalVolume":
		v.Spec.Local = &corev1.LocalVolumeSource{Path: src.get("Path")}
	}
	return v, true
}

// nodeRequirementRE is one requirement of a node selector term as kubectl
// describe prints it: "topology.kubernetes.io/zone in [us-east-1c]",
// "kubernetes.io/hostname notin [a, b]", "node-role exists".
var nodeRequirementRE = regexp.MustCompile(`^(\S+)\s+(in|notin|exists|doesnotexist|gt|lt)(?:\s+\[(.*)\])?$`)

var nodeOperators = map[string]corev1.NodeSelectorOperator{"in": corev1.NodeSelectorOpIn, "notin": corev1.NodeSelectorOpNotIn,
	"exists": corev1.NodeSelectorOpExists, "doesnotexist": corev1.NodeSelectorOpDoesNotExist, "gt": corev1.NodeSelectorOpGt, "lt": corev1.NodeSelectorOpLt}

// pvNodeAffinity reads a volume's "Node Affinity:" section: its required
// terms ("Term 0:  topology.kubernetes.io/zone in [us-east-1c]", one
// requirement a line); nil when it holds none.
func pvNodeAffinity(n *dnode) *corev1.VolumeNodeAffinity {
	var terms []corev1.NodeSelectorTerm
	for _, t := range n.child("Required Terms").children() {
		if !strings.HasPrefix(t.key, "Term ") {
			continue
		}
		var term corev1.NodeSelectorTerm
		for _, l := range t.values() {
			m := nodeRequirementRE.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			r := corev1.NodeSelectorRequirement{Key: m[1], Operator: nodeOperators[m[2]]}
			for _, v := range strings.Split(m[3], ",") {
				if v = strings.TrimSpace(v); v != "" {
					r.Values = append(r.Values, v)
				}
			}
			term.MatchExpressions = append(term.MatchExpressions, r)
		}
		if len(term.MatchExpressions) > 0 {
			terms = append(terms, term)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
}

// describeService reads a service and, from its Endpoints lines, the
// ready endpoint addresses (kubectl shows only ready ones).
func describeService(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	s := &corev1.Service{TypeMeta: typeMeta("Service"), ObjectMeta: meta}
	s.Spec.Selector = labelMap([]string{root.get("Selector")})
	s.Spec.Type = corev1.ServiceType(root.get("Type"))
	s.Spec.ClusterIP = root.get("IP")
	for _, ip := range strings.Split(root.get("IPs"), ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, ip)
		}
	}
	s.Spec.ExternalName = root.get("External Name")
	for _, ip := range strings.Split(root.get("External IPs"), ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, ip)
		}
	}
	if lb := root.get("LoadBalancer Ingress"); lb != "" {
		for _, ip := range strings.Split(lb, ",") {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: strings.TrimSpace(ip)})
		}
	}
	s.Spec.SessionAffinity = corev1.ServiceAffinity(root.get("Session Affinity"))
	ep := &corev1.Endpoints{TypeMeta: typeMeta("Endpoints"), ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, Labels: meta.Labels}}
	sawEndpoints := false
	var cur *corev1.ServicePort
	for _, k := range root.kids {
		if !k.hasKey {
			continue
		}
		v := strings.TrimSpace(k.val)
		switch k.key {
		case "Port":
			f := strings.Fields(v)
			if len(f) == 0 {
				continue
			}
			sp := corev1.ServicePort{}
			pp := f[len(f)-1]
			if len(f) > 1 && f[0] != "<unset>" {
				sp.Name = f[0]
			}
			num, proto, _ := strings.Cut(pp, "/")
			n, err := strconv.ParseInt(num, 10, 32)
			if err != nil {
				continue
			}
			sp.Port, sp.Protocol = int32(n), corev1.Protocol(proto)
			s.Spec.Ports = append(s.Spec.Ports, sp)
			cur = &s.Spec.Ports[len(s.Spec.Ports)-1]
		case "TargetPort":
			if cur != nil {
				tp, _, _ := strings.Cut(v, "/")
				cur.TargetPort = intstr.Parse(tp)
			}
		case "NodePort":
			if cur != nil {
				f := strings.Fields(v)
				if len(f) > 0 {
					num, _, _ := strings.Cut(f[len(f)-1], "/")
					if n, err := strconv.ParseInt(num, 10, 32); err == nil {
						cur.NodePort = int32(n)
					}
				}
			}
		case "Endpoints":
			sawEndpoints = true
			if cur == nil || unset(v) {
				continue
			}
			var ss corev1.EndpointSubset
			for _, a := range strings.Split(v, ",") {
				a = strings.TrimSpace(a)
				if strings.HasPrefix(a, "+ ") || strings.HasSuffix(a, "more...") {
					continue // "+ 3 more...": the rest is not shown
				}
				host, port, ok := strings.Cut(a, ":")
				if !ok {
					continue
				}
				n, err := strconv.ParseInt(port, 10, 32)
				if err != nil {
					continue
				}
				ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: host})
				ss.Ports = []corev1.EndpointPort{{Name: cur.Name, Port: int32(n), Protocol: cur.Protocol}}
			}
			if len(ss.Addresses) > 0 {
				ep.Subsets = append(ep.Subsets, ss)
			}
		}
	}
	if sawEndpoints && len(s.Spec.Selector) > 0 {
		p.add("Endpoints", meta.Namespace, meta.Name, "describe", ep)
	}
	return s, true
}

var backendRe = regexp.MustCompile(`^(\S+?):(\S+)\s+\((.*)\)$`)

func ingressBackend(s string) (networkingv1.IngressBackend, bool) {
	m := backendRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return networkingv1.IngressBackend{}, false
	}
	b := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: m[1]}}
	if n, err := strconv.ParseInt(m[2], 10, 32); err == nil {
		b.Service.Port.Number = int32(n)
	} else {
		b.Service.Port.Name = m[2]
	}
	return b, true
}

func describeIngress(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	ing := &networkingv1.Ingress{TypeMeta: typeMeta("Ingress"), ObjectMeta: meta}
	if c := root.get("Ingress Class"); c != "" {
		ing.Spec.IngressClassName = &c
	}
	for _, a := range strings.Split(root.get("Address"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a})
		}
	}
	// kubectl before 1.22 prints "default-http-backend:80" for an ingress
	// without a default backend: that name says nothing.
	if b, ok := ingressBackend(root.get("Default backend")); ok && !strings.HasPrefix(root.get("Default backend"), "default-http-backend:80 ") {
		ing.Spec.DefaultBackend = &b
	}
	for _, tls := range root.child("TLS").children() {
		// "SECRET terminates host1,host2"
		secret, hosts, ok := strings.Cut(strings.TrimSpace(tls.raw), " terminates ")
		if !ok {
			continue
		}
		t := networkingv1.IngressTLS{SecretName: secret}
		for _, h := range strings.Split(hosts, ",") {
			t.Hosts = append(t.Hosts, strings.TrimSpace(h))
		}
		ing.Spec.TLS = append(ing.Spec.TLS, t)
	}
	// Rules: a host line ("host" or "*") at the table's indentation, then
	// one line per path, indented further: "path  backend". A rule-less
	// ingress prints one "*  *  backend" line for its default backend.
	if rules := root.child("Rules"); rules != nil {
		ls, _ := rules.lines()
		var rule *networkingv1.IngressRule
		for i, l := range ls {
			if i == 0 || isDashes(l) {
				continue // header
			}
			f := splitRuns(l)
			if len(f) == 0 {
				continue
			}
			if indentOf(l) <= indentOf(ls[0]) {
				if len(f) == 3 && f[0] == "*" && f[1] == "*" {
					continue // the default backend again
				}
				h := f[0]
				if h == "*" {
					h = ""
				}
				ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}})
				rule = &ing.Spec.Rules[len(ing.Spec.Rules)-1]
				continue
			}
			if rule == nil || len(f) < 2 {
				continue
			}
			if b, ok := ingressBackend(f[len(f)-1]); ok {
				rule.HTTP.Paths = append(rule.HTTP.Paths, networkingv1.HTTPIngressPath{Path: f[0], Backend: b})
			}
		}
	}
	return ing, true
}

var (
	hpaMetricRe = regexp.MustCompile(`^resource (\S+) (?:of container "[^"]*" )?on pods(?:\s+\(as a percentage of request\))?:\s+(.+?)\s+/\s+(.+)$`)
	hpaValueRe  = regexp.MustCompile(`^(<unknown>|\d+%)(?:\s+\((\S+)\))?$`)
)

func describeHPA(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	h := &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: typeMeta("HorizontalPodAutoscaler"), ObjectMeta: meta}
	if k, n, ok := strings.Cut(root.get("Reference"), "/"); ok {
		h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: k, Name: n, APIVersion: apiVersions[k]}
	}
	if n, ok := atoi32(root.get("Min replicas")); ok {
		h.Spec.MinReplicas = &n
	}
	if n, ok := atoi32(root.get("Max replicas")); ok {
		h.Spec.MaxReplicas = n
	}
	for _, k := range root.kids {
		if strings.HasSuffix(k.key, " pods") && strings.Contains(k.val, "current") {
			r := replicaCounts(k.val)
			h.Status.CurrentReplicas, h.Status.DesiredReplicas = r["current"], r["desired"]
		}
	}
	if m := root.child("Metrics"); m != nil {
		for _, k := range m.kids {
			line := strings.Join(strings.Fields(k.raw), " ")
			mm := hpaMetricRe.FindStringSubmatch(line)
			if mm == nil {
				continue
			}
			name := corev1.ResourceName(mm[1])
			spec := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: name}}
			cur := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: name}}
			known := false
			if tv := hpaValueRe.FindStringSubmatch(mm[3]); tv != nil && strings.HasSuffix(tv[1], "%") {
				n, _ := strconv.ParseInt(strings.TrimSuffix(tv[1], "%"), 10, 32)
				spec.Resource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(n))}
			} else if q, err := resource.ParseQuantity(mm[3]); err == nil {
				spec.Resource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}
			}
			if cv := hpaValueRe.FindStringSubmatch(mm[2]); cv != nil && cv[1] != "<unknown>" {
				n, _ := strconv.ParseInt(strings.TrimSuffix(cv[1], "%"), 10, 32)
				cur.Resource.Current.AverageUtilization = ptr(int32(n))
				if q, err := resource.ParseQuantity(cv[2]); err == nil {
					cur.Resource.Current.AverageValue = &q
				}
				known = true
			} else if q, err := resource.ParseQuantity(mm[2]); err == nil {
				cur.Resource.Current.AverageValue = &q
				known = true
			}
			h.Spec.Metrics = append(h.Spec.Metrics, spec)
			if known {
				h.Status.CurrentMetrics = append(h.Status.CurrentMetrics, cur)
			}
		}
	}
	for _, c := range conditionRows(root.child("Conditions")) {
		h.Status.Conditions = append(h.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
			Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c["Type"]), Status: corev1.ConditionStatus(c["Status"]),
			Reason: c["Reason"], Message: c["Message"]})
	}
	return h, true
}
