package kubetest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

var accessShort = map[corev1.PersistentVolumeAccessMode]string{corev1.ReadWriteOnce: "RWO", corev1.ReadOnlyMany: "ROX",
	corev1.ReadWriteMany: "RWX", corev1.ReadWriteOncePod: "RWOP"}

func modes(ms []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range ms {
		out = append(out, accessShort[m])
	}
	return strings.Join(out, ",")
}

func storage(rl corev1.ResourceList) string {
	if q, ok := rl[corev1.ResourceStorage]; ok {
		return q.String()
	}
	return ""
}

// moreTables are the printers of the other kinds kubectl get shows.
func moreTables(kind string, items []any, now time.Time) ([]column, []row, bool) {
	var cols []column
	var rows []row
	add := func(o map[string]any, cells ...any) { rows = append(rows, row{Cells: cells, Object: o}) }
	name := column{Name: "Name", Type: "string", Format: "name"}
	str := func(n string) column { return column{Name: n, Type: "string"} }
	wide := func(n string) column { return column{Name: n, Type: "string", Priority: 1} }
	ageCol := str("Age")
	each := func(v any, fn func(m map[string]any)) {
		for _, it := range items {
			m := it.(map[string]any)
			if decode(m, v) {
				fn(m)
			}
		}
	}
	switch kind {
	case "Node":
		cols = []column{name, str("Status"), str("Roles"), ageCol, str("Version"), wide("Internal-IP"), wide("External-IP"),
			wide("OS-Image"), wide("Kernel-Version"), wide("Container-Runtime")}
		var n corev1.Node
		each(&n, func(m map[string]any) {
			status := "Unknown"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					status = map[corev1.ConditionStatus]string{corev1.ConditionTrue: "Ready", corev1.ConditionFalse: "NotReady"}[c.Status]
					if status == "" {
						status = "Unknown"
					}
				}
			}
			if n.Spec.Unschedulable {
				status += ",SchedulingDisabled"
			}
			var roles []string
			for k := range n.Labels {
				if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
					roles = append(roles, r)
				}
			}
			slices.Sort(roles)
			addr := func(t corev1.NodeAddressType) string {
				for _, a := range n.Status.Addresses {
					if a.Type == t {
						return a.Address
					}
				}
				return "<none>"
			}
			add(m, n.Name, status, orNone(strings.Join(roles, ",")), age(n.CreationTimestamp.Time, now), n.Status.NodeInfo.KubeletVersion,
				addr(corev1.NodeInternalIP), addr(corev1.NodeExternalIP), orNone(n.Status.NodeInfo.OSImage),
				orNone(n.Status.NodeInfo.KernelVersion), orNone(n.Status.NodeInfo.ContainerRuntimeVersion))
			n = corev1.Node{}
		})
	case "Service":
		cols = []column{name, str("Type"), str("Cluster-IP"), str("External-IP"), str("Port(s)"), ageCol, wide("Selector")}
		var s corev1.Service
		each(&s, func(m map[string]any) {
			ext := "<none>"
			switch s.Spec.Type {
			case corev1.ServiceTypeLoadBalancer:
				var ips []string
				for _, i := range s.Status.LoadBalancer.Ingress {
					ips = append(ips, i.IP+i.Hostname)
				}
				ext = strings.Join(ips, ",")
				if ext == "" {
					ext = "<pending>"
				}
			case corev1.ServiceTypeExternalName:
				ext = s.Spec.ExternalName
			default:
				if len(s.Spec.ExternalIPs) > 0 {
					ext = strings.Join(s.Spec.ExternalIPs, ",")
				}
			}
			var ports []string
			for _, p := range s.Spec.Ports {
				if p.NodePort != 0 {
					ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
				} else {
					ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
				}
			}
			add(m, s.Name, string(s.Spec.Type), orNone(s.Spec.ClusterIP), ext, orNone(strings.Join(ports, ",")), age(s.CreationTimestamp.Time, now), selector(s.Spec.Selector))
			s = corev1.Service{}
		})
	case "PersistentVolumeClaim":
		cols = []column{name, str("Status"), str("Volume"), str("Capacity"), str("Access Modes"), str("StorageClass"), str("VolumeAttributesClass"), ageCol, wide("VolumeMode")}
		var c corev1.PersistentVolumeClaim
		each(&c, func(m map[string]any) {
			sc := ""
			if c.Spec.StorageClassName != nil {
				sc = *c.Spec.StorageClassName
			}
			vm := "<unset>"
			if c.Spec.VolumeMode != nil {
				vm = string(*c.Spec.VolumeMode)
			}
			add(m, c.Name, string(c.Status.Phase), c.Spec.VolumeName, storage(c.Status.Capacity), modes(c.Status.AccessModes), sc, "<unset>", age(c.CreationTimestamp.Time, now), vm)
			c = corev1.PersistentVolumeClaim{}
		})
	case "PersistentVolume":
		cols = []column{name, str("Capacity"), str("Access Modes"), str("Reclaim Policy"), str("Status"), str("Claim"), str("StorageClass"),
			str("VolumeAttributesClass"), str("Reason"), ageCol, wide("VolumeMode")}
		var v corev1.PersistentVolume
		each(&v, func(m map[string]any) {
			claim := ""
			if v.Spec.ClaimRef != nil {
				claim = v.Spec.ClaimRef.Namespace + "/" + v.Spec.ClaimRef.Name
			}
			vm := "<unset>"
			if v.Spec.VolumeMode != nil {
				vm = string(*v.Spec.VolumeMode)
			}
			add(m, v.Name, storage(v.Spec.Capacity), modes(v.Spec.AccessModes), string(v.Spec.PersistentVolumeReclaimPolicy), string(v.Status.Phase),
				claim, v.Spec.StorageClassName, "<unset>", v.Status.Reason, age(v.CreationTimestamp.Time, now), vm)
			v = corev1.PersistentVolume{}
		})
	case "StatefulSet":
		cols = []column{name, str("Ready"), ageCol, wide("Containers"), wide("Images")}
		var s appsv1.StatefulSet
		each(&s, func(m map[string]any) {
			c, i := containersImages(s.Spec.Template.Spec.Containers)
			add(m, s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)), age(s.CreationTimestamp.Time, now), c, i)
			s = appsv1.StatefulSet{}
		})
	case "DaemonSet":
		cols = []column{name, {Name: "Desired", Type: "integer"}, {Name: "Current", Type: "integer"}, {Name: "Ready", Type: "integer"},
			{Name: "Up-to-date", Type: "integer"}, {Name: "Available", Type: "integer"}, str("Node Selector"), ageCol,
			wide("Containers"), wide("Images"), wide("Selector")}
		var d appsv1.DaemonSet
		each(&d, func(m map[string]any) {
			c, i := containersImages(d.Spec.Template.Spec.Containers)
			var sel map[string]string
			if d.Spec.Selector != nil {
				sel = d.Spec.Selector.MatchLabels
			}
			add(m, d.Name, d.Status.DesiredNumberScheduled, d.Status.CurrentNumberScheduled, d.Status.NumberReady, d.Status.UpdatedNumberScheduled,
				d.Status.NumberAvailable, selector(d.Spec.Template.Spec.NodeSelector), age(d.CreationTimestamp.Time, now), c, i, selector(sel))
			d = appsv1.DaemonSet{}
		})
	case "Job":
		cols = []column{name, str("Status"), str("Completions"), str("Duration"), ageCol, wide("Containers"), wide("Images"), wide("Selector")}
		var j batchv1.Job
		each(&j, func(m map[string]any) {
			status := "Running"
			for _, c := range j.Status.Conditions {
				if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed || c.Type == batchv1.JobSuspended) {
					status = string(c.Type)
					if c.Type == batchv1.JobSuspended {
						status = "Suspended"
					}
				}
			}
			completions := fmt.Sprintf("%d/%d", j.Status.Succeeded, replicas(j.Spec.Completions))
			if j.Spec.Completions == nil {
				completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, replicas(j.Spec.Parallelism))
			}
			dur := ""
			if j.Status.StartTime != nil {
				end := now
				if j.Status.CompletionTime != nil {
					end = j.Status.CompletionTime.Time
				}
				dur = duration.HumanDuration(end.Sub(j.Status.StartTime.Time))
			}
			c, i := containersImages(j.Spec.Template.Spec.Containers)
			var sel map[string]string
			if j.Spec.Selector != nil {
				sel = j.Spec.Selector.MatchLabels
			}
			add(m, j.Name, status, completions, dur, age(j.CreationTimestamp.Time, now), c, i, selector(sel))
			j = batchv1.Job{}
		})
	case "CronJob":
		cols = []column{name, str("Schedule"), str("Timezone"), str("Suspend"), {Name: "Active", Type: "integer"}, str("Last Schedule"), ageCol,
			wide("Containers"), wide("Images"), wide("Selector")}
		var cj batchv1.CronJob
		each(&cj, func(m map[string]any) {
			last := "<none>"
			if cj.Status.LastScheduleTime != nil {
				last = age(cj.Status.LastScheduleTime.Time, now)
			}
			tz := "<none>"
			if cj.Spec.TimeZone != nil {
				tz = *cj.Spec.TimeZone
			}
			suspend := "False"
			if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
				suspend = "True"
			}
			c, i := containersImages(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
			add(m, cj.Name, cj.Spec.Schedule, tz, suspend, len(cj.Status.Active), last, age(cj.CreationTimestamp.Time, now), c, i, "<none>")
			cj = batchv1.CronJob{}
		})
	case "HorizontalPodAutoscaler":
		cols = []column{name, str("Reference"), str("Targets"), str("MinPods"), str("MaxPods"), str("Replicas"), ageCol}
		var h autoscalingv2.HorizontalPodAutoscaler
		each(&h, func(m map[string]any) {
			var targets []string
			for _, ms := range h.Spec.Metrics {
				if ms.Resource == nil || ms.Resource.Target.AverageUtilization == nil {
					continue
				}
				cur := "<unknown>"
				for _, cm := range h.Status.CurrentMetrics {
					if cm.Resource != nil && cm.Resource.Name == ms.Resource.Name && cm.Resource.Current.AverageUtilization != nil {
						cur = fmt.Sprintf("%d%%", *cm.Resource.Current.AverageUtilization)
					}
				}
				targets = append(targets, fmt.Sprintf("%s: %s/%d%%", ms.Resource.Name, cur, *ms.Resource.Target.AverageUtilization))
			}
			min := "<unset>"
			if h.Spec.MinReplicas != nil {
				min = fmt.Sprint(*h.Spec.MinReplicas)
			}
			add(m, h.Name, h.Spec.ScaleTargetRef.Kind+"/"+h.Spec.ScaleTargetRef.Name, orNone(strings.Join(targets, ", ")), min,
				fmt.Sprint(h.Spec.MaxReplicas), fmt.Sprint(h.Status.CurrentReplicas), age(h.CreationTimestamp.Time, now))
			h = autoscalingv2.HorizontalPodAutoscaler{}
		})
	case "Ingress":
		cols = []column{name, str("Class"), str("Hosts"), str("Address"), str("Ports"), ageCol}
		var ing networkingv1.Ingress
		each(&ing, func(m map[string]any) {
			class := "<none>"
			if ing.Spec.IngressClassName != nil {
				class = *ing.Spec.IngressClassName
			}
			var hosts, addrs []string
			for _, r := range ing.Spec.Rules {
				hosts = append(hosts, orStar(r.Host))
			}
			for _, a := range ing.Status.LoadBalancer.Ingress {
				addrs = append(addrs, a.IP+a.Hostname)
			}
			ports := "80"
			if len(ing.Spec.TLS) > 0 {
				ports = "80, 443"
			}
			add(m, ing.Name, class, orStar(strings.Join(hosts, ",")), strings.Join(addrs, ","), ports, age(ing.CreationTimestamp.Time, now))
			ing = networkingv1.Ingress{}
		})
	case "Endpoints":
		cols = []column{name, str("Endpoints"), ageCol}
		var ep corev1.Endpoints
		each(&ep, func(m map[string]any) {
			var list []string
			for _, ss := range ep.Subsets {
				for _, a := range ss.Addresses {
					for _, p := range ss.Ports {
						list = append(list, fmt.Sprintf("%s:%d", a.IP, p.Port))
					}
				}
			}
			s := strings.Join(list, ",")
			if len(list) > 3 {
				s = strings.Join(list[:3], ",") + fmt.Sprintf(" + %d more...", len(list)-3)
			}
			add(m, ep.Name, orNone(s), age(ep.CreationTimestamp.Time, now))
			ep = corev1.Endpoints{}
		})
	case "ConfigMap":
		cols = []column{name, {Name: "Data", Type: "integer"}, ageCol}
		var cm corev1.ConfigMap
		each(&cm, func(m map[string]any) {
			add(m, cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), age(cm.CreationTimestamp.Time, now))
			cm = corev1.ConfigMap{}
		})
	case "ResourceQuota":
		// kube-apiserver's printer: "resource: used/hard, ..." sorted by
		// resource, limits.* under Limit, the rest under Request.
		cols = []column{name, ageCol, str("Request"), str("Limit")}
		var q corev1.ResourceQuota
		each(&q, func(m map[string]any) {
			var names []string
			for r := range q.Status.Hard {
				names = append(names, string(r))
			}
			sortStrings(names)
			var req, lim []string
			for _, r := range names {
				used, hard := q.Status.Used[corev1.ResourceName(r)], q.Status.Hard[corev1.ResourceName(r)]
				cell := fmt.Sprintf("%s: %s/%s", r, used.String(), hard.String())
				if strings.HasPrefix(r, "limits.") {
					lim = append(lim, cell)
				} else {
					req = append(req, cell)
				}
			}
			add(m, q.Name, age(q.CreationTimestamp.Time, now), strings.Join(req, ", "), strings.Join(lim, ", "))
			q = corev1.ResourceQuota{}
		})
	case "Secret":
		cols = []column{name, str("Type"), {Name: "Data", Type: "integer"}, ageCol}
		var sec corev1.Secret
		each(&sec, func(m map[string]any) {
			add(m, sec.Name, string(sec.Type), int64(len(sec.Data)), age(sec.CreationTimestamp.Time, now))
			sec = corev1.Secret{}
		})
	case "NetworkPolicy":
		cols = []column{name, str("Pod-Selector"), ageCol}
		var np networkingv1.NetworkPolicy
		each(&np, func(m map[string]any) {
			add(m, np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp.Time, now))
			np = networkingv1.NetworkPolicy{}
		})
	case "PodDisruptionBudget":
		cols = []column{name, str("Min Available"), str("Max Unavailable"), {Name: "Allowed Disruptions", Type: "integer"}, ageCol}
		var pdb policyv1.PodDisruptionBudget
		each(&pdb, func(m map[string]any) {
			minA, maxU := "N/A", "N/A"
			if pdb.Spec.MinAvailable != nil {
				minA = pdb.Spec.MinAvailable.String()
			}
			if pdb.Spec.MaxUnavailable != nil {
				maxU = pdb.Spec.MaxUnavailable.String()
			}
			add(m, pdb.Name, minA, maxU, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp.Time, now))
			pdb = policyv1.PodDisruptionBudget{}
		})
	case "ServiceAccount":
		cols = []column{name, {Name: "Secrets", Type: "integer"}, ageCol}
		var sa corev1.ServiceAccount
		each(&sa, func(m map[string]any) {
			add(m, sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp.Time, now))
			sa = corev1.ServiceAccount{}
		})
	case "Role", "ClusterRole":
		cols = []column{name, {Name: "Created At", Type: "date"}}
		var r metav1.PartialObjectMetadata
		each(&r, func(m map[string]any) {
			add(m, r.Name, r.CreationTimestamp.Time.UTC().Format(time.RFC3339))
			r = metav1.PartialObjectMetadata{}
		})
	case "RoleBinding", "ClusterRoleBinding":
		cols = []column{name, str("Role"), ageCol, wide("Users"), wide("Groups"), wide("ServiceAccounts")}
		var rb rbacv1.RoleBinding
		each(&rb, func(m map[string]any) {
			var users, groups, sas []string
			for _, s := range rb.Subjects {
				switch s.Kind {
				case "User":
					users = append(users, s.Name)
				case "Group":
					groups = append(groups, s.Name)
				case "ServiceAccount":
					sas = append(sas, s.Namespace+"/"+s.Name)
				}
			}
			add(m, rb.Name, rb.RoleRef.Kind+"/"+rb.RoleRef.Name, age(rb.CreationTimestamp.Time, now),
				strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", "))
			rb = rbacv1.RoleBinding{}
		})
	default:
		return nil, nil, false
	}
	return cols, rows, true
}

func orStar(s string) string {
	if s == "" {
		return "*"
	}
	return s
}
