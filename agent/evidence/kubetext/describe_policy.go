package kubetext

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// This file reads the describe pages of the kinds that decide who may talk
// to whom and what may be disrupted: network policies, pod disruption
// budgets, service accounts, roles and role bindings.

// labelSelector reads a selector as metav1.FormatLabelSelector prints it
// ("app=ledger,tier in (db,cache)"); "<none>" is the empty selector, which
// selects everything. ok is false when the text is not a selector.
func labelSelector(s string) (*metav1.LabelSelector, bool) {
	s = strings.TrimSpace(s)
	if s == "<none>" || strings.HasPrefix(s, "<none> ") {
		return &metav1.LabelSelector{}, true
	}
	sel, err := metav1.ParseToLabelSelector(s)
	if err != nil {
		return nil, false
	}
	return sel, true
}

// describeNetworkPolicy reads kubectl's policy page: the pod selector,
// each ingress and egress rule (ports, then peers: pod and namespace
// selectors, IP blocks), rules separated by "----------", and the policy
// types. "<none> (Selected pods are isolated ...)" is a direction with no
// rule (all traffic denied); "Not affecting ... traffic" a direction the
// policy does not name.
func describeNetworkPolicy(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	np := &networkingv1.NetworkPolicy{TypeMeta: typeMeta("NetworkPolicy"), ObjectMeta: meta}
	if t, ok := parseDescribeTime(root.get("Created on")); ok {
		np.CreationTimestamp = t
	}
	spec := root.child("Spec")
	if spec == nil {
		return nil, false
	}
	lines, _ := spec.lines()
	var dir string // "ingress" or "egress"
	var ports []networkingv1.NetworkPolicyPort
	var peers []networkingv1.NetworkPolicyPeer
	var anyPeer, inRule bool
	var peer *networkingv1.NetworkPolicyPeer
	flushPeer := func() {
		if peer != nil {
			peers = append(peers, *peer)
			peer = nil
		}
	}
	flushRule := func() {
		flushPeer()
		if !inRule {
			return
		}
		switch dir {
		case "ingress":
			np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports, From: peers})
		case "egress":
			np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{Ports: ports, To: peers})
		}
		ports, peers, anyPeer, inRule = nil, nil, false, false
	}
	var types []networkingv1.PolicyType
	podSel := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		key, val, _ := strings.Cut(t, ":")
		val = strings.TrimSpace(val)
		switch {
		case key == "PodSelector" && dir == "":
			sel, ok := labelSelector(val)
			if !ok {
				return nil, false
			}
			np.Spec.PodSelector, podSel = *sel, true
		case t == "Allowing ingress traffic:" || t == "Allowing egress traffic:":
			flushRule()
			dir = strings.Fields(t)[1]
			if dir == "ingress" {
				np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{}
			} else {
				np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{}
			}
		case strings.HasPrefix(t, "Not affecting "):
			flushRule()
			dir = "none"
		case strings.HasPrefix(t, "<none> (Selected pods are isolated"):
			// a direction without rules: nothing allowed
		case t == "----------":
			flushRule()
		case key == "To Port" && (dir == "ingress" || dir == "egress"):
			if peers != nil || peer != nil || anyPeer {
				flushRule() // ports start the next rule
			}
			inRule = true
			if strings.HasPrefix(val, "<any>") {
				continue
			}
			port, ok := policyPort(val)
			if !ok {
				return nil, false
			}
			ports = append(ports, port)
		case (key == "From" || key == "To") && (dir == "ingress" || dir == "egress"):
			inRule = true
			flushPeer()
			if strings.HasPrefix(val, "<any>") {
				anyPeer = true
				continue
			}
			peer = &networkingv1.NetworkPolicyPeer{}
		case key == "NamespaceSelector" && peer != nil:
			if sel, ok := labelSelector(val); ok {
				peer.NamespaceSelector = sel
			}
		case key == "PodSelector" && peer != nil:
			if sel, ok := labelSelector(val); ok {
				peer.PodSelector = sel
			}
		case key == "IPBlock" && peer != nil:
			peer.IPBlock = &networkingv1.IPBlock{}
		case key == "CIDR" && peer != nil && peer.IPBlock != nil:
			peer.IPBlock.CIDR = val
		case key == "Except" && peer != nil && peer.IPBlock != nil:
			for _, e := range strings.Split(val, ",") {
				if e = strings.TrimSpace(e); e != "" {
					peer.IPBlock.Except = append(peer.IPBlock.Except, e)
				}
			}
		case key == "Policy Types":
			flushRule()
			dir = "done"
			for _, pt := range strings.Split(val, ",") {
				if pt = strings.TrimSpace(pt); pt != "" {
					types = append(types, networkingv1.PolicyType(pt))
				}
			}
		}
	}
	flushRule()
	np.Spec.PolicyTypes = types
	return np, podSel
}

// policyPort reads "8080/TCP", "http/TCP" or "32000-32768/TCP".
func policyPort(s string) (networkingv1.NetworkPolicyPort, bool) {
	port, proto, ok := strings.Cut(s, "/")
	if !ok || port == "" {
		return networkingv1.NetworkPolicyPort{}, false
	}
	pr := corev1.Protocol(proto)
	out := networkingv1.NetworkPolicyPort{Protocol: &pr}
	if from, to, ok := strings.Cut(port, "-"); ok {
		if end, err := strconv.ParseInt(to, 10, 32); err == nil {
			if _, err := strconv.Atoi(from); err == nil {
				port = from
				out.EndPort = ptr(int32(end))
			}
		}
	}
	v := intstr.Parse(port)
	out.Port = &v
	return out, true
}

// describePDB reads a pod disruption budget: min available or max
// unavailable, the selector and the status counts.
func describePDB(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	pdb := &policyv1.PodDisruptionBudget{TypeMeta: typeMeta("PodDisruptionBudget"), ObjectMeta: meta}
	if v := root.get("Min available"); v != "" {
		x := intstr.Parse(v)
		pdb.Spec.MinAvailable = &x
	}
	if v := root.get("Max unavailable"); v != "" {
		x := intstr.Parse(v)
		pdb.Spec.MaxUnavailable = &x
	}
	if v := root.get("Selector"); v != "" {
		if sel, ok := labelSelector(v); ok {
			pdb.Spec.Selector = sel
		}
	}
	if v := root.get("Unhealthy Pod Eviction Policy"); v != "" {
		pdb.Spec.UnhealthyPodEvictionPolicy = ptr(policyv1.UnhealthyPodEvictionPolicyType(v))
	}
	st := root.child("Status")
	if st == nil {
		return pdb, pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable != nil
	}
	for key, dst := range map[string]*int32{"Allowed disruptions": &pdb.Status.DisruptionsAllowed, "Current": &pdb.Status.CurrentHealthy,
		"Desired": &pdb.Status.DesiredHealthy, "Total": &pdb.Status.ExpectedPods} {
		if n, ok := atoi32(st.get(key)); ok {
			*dst = n
		}
	}
	return pdb, true
}

// describeServiceAccount reads a service account: its image pull secrets,
// mountable secrets and tokens. kubectl marks a listed secret it did not
// find among the namespace's secrets "(not found)": that is recorded as
// kubectl's answer that the secret does not exist.
func describeServiceAccount(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	sa := &corev1.ServiceAccount{TypeMeta: typeMeta("ServiceAccount"), ObjectMeta: meta}
	names := func(key string) []string {
		n := root.child(key)
		var out []string
		for _, v := range n.values() {
			name, missing := strings.CutSuffix(v, " (not found)")
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			out = append(out, name)
			if missing && len(p.res.Absent) < MaxAbsent {
				p.res.Absent = append(p.res.Absent, Absence{Kind: "Secret", Namespace: meta.Namespace, Name: name, Line: n.line,
					Message: "kubectl describe serviceaccount " + meta.Name + ": " + key + ": " + v})
			}
		}
		return out
	}
	for _, n := range names("Image pull secrets") {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	for _, n := range names("Mountable secrets") {
		sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: n})
	}
	for _, n := range names("Tokens") {
		sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: n})
	}
	return sa, true
}

// describeRole reads the PolicyRule table of a role or cluster role:
// Resources (resource.group), Non-Resource URLs, Resource Names, Verbs.
func describeRole(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	var rules []rbacv1.PolicyRule
	if t := root.child("PolicyRule").table(1000); t != nil {
		for _, row := range t.rows {
			r := rbacv1.PolicyRule{Verbs: bracketList(t.get(row, "Verbs")), ResourceNames: bracketList(t.get(row, "Resource Names")),
				NonResourceURLs: bracketList(t.get(row, "Non-Resource URLs"))}
			if res := t.get(row, "Resources"); res != "" {
				name, group, _ := strings.Cut(res, ".")
				r.Resources, r.APIGroups = []string{name}, []string{group}
			}
			rules = append(rules, r)
		}
	}
	return &rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: meta, Rules: rules}, true
}

func describeClusterRole(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	r, _ := describeRole(p, root, meta)
	return &rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: meta, Rules: r.(*rbacv1.Role).Rules}, true
}

func describeClusterRoleBinding(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	o, ok := describeRoleBinding(p, root, meta)
	rb := o.(*rbacv1.RoleBinding)
	return &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: meta, RoleRef: rb.RoleRef, Subjects: rb.Subjects}, ok
}

// bracketList reads "[get list watch]".
func bracketList(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]")
	return strings.Fields(s)
}

// describeRoleBinding reads a role or cluster role binding: the role it
// grants and its subjects.
func describeRoleBinding(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	rb := &rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: meta}
	role := root.child("Role")
	rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.get("Kind"), Name: role.get("Name")}
	if t := root.child("Subjects").table(1000); t != nil {
		for _, row := range t.rows {
			s := rbacv1.Subject{Kind: t.get(row, "Kind"), Name: t.get(row, "Name"), Namespace: t.get(row, "Namespace")}
			if s.Kind != "ServiceAccount" {
				s.APIGroup = rbacv1.GroupName
			}
			rb.Subjects = append(rb.Subjects, s)
		}
	}
	return rb, rb.RoleRef.Name != ""
}

// netpolRow reads NAME POD-SELECTOR AGE: the pod selector only; the rules
// are not in the table.
func netpolRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	np := &networkingv1.NetworkPolicy{TypeMeta: typeMeta("NetworkPolicy"), ObjectMeta: meta}
	sel, ok := labelSelector(t.get(row, "POD-SELECTOR"))
	if !ok {
		return nil
	}
	np.Spec.PodSelector = *sel
	return np
}

// pdbRow reads NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE
// ("N/A" for the bound not set).
func pdbRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	pdb := &policyv1.PodDisruptionBudget{TypeMeta: typeMeta("PodDisruptionBudget"), ObjectMeta: meta}
	for col, dst := range map[string]**intstr.IntOrString{"MIN AVAILABLE": &pdb.Spec.MinAvailable, "MAX UNAVAILABLE": &pdb.Spec.MaxUnavailable} {
		if v := cell(t, row, col); v != "" && v != "N/A" {
			x := intstr.Parse(v)
			*dst = &x
		}
	}
	n, ok := atoi32(cell(t, row, "ALLOWED DISRUPTIONS"))
	if !ok {
		return nil
	}
	pdb.Status.DisruptionsAllowed = n
	return pdb
}

// serviceAccountRow reads NAME SECRETS AGE: the account exists; the
// secrets are only counted.
func serviceAccountRow(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
	return &corev1.ServiceAccount{TypeMeta: typeMeta("ServiceAccount"), ObjectMeta: meta}
}

// roleRow reads NAME CREATED AT (roles and cluster roles): the rules are
// not in the table.
func roleRow(kind string) rowReader {
	return func(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
		if at, ok := parseDescribeTime(cell(t, row, "CREATED AT")); ok {
			meta.CreationTimestamp = at
		}
		if kind == "ClusterRole" {
			return &rbacv1.ClusterRole{TypeMeta: typeMeta(kind), ObjectMeta: meta}
		}
		return &rbacv1.Role{TypeMeta: typeMeta(kind), ObjectMeta: meta}
	}
}

// bindingRow reads NAME ROLE AGE [USERS GROUPS SERVICEACCOUNTS] (role and
// cluster role bindings): ROLE is "Role/name" or "ClusterRole/name";
// subjects are known only with -o wide.
func bindingRow(kind string) rowReader {
	return func(p *parser, t *table, row []string, meta metav1.ObjectMeta) runtime.Object {
		rk, rn, ok := strings.Cut(cell(t, row, "ROLE"), "/")
		if !ok {
			return nil
		}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: rk, Name: rn}
		var subjects []rbacv1.Subject
		split := func(col string) []string {
			var out []string
			for _, v := range strings.Split(cell(t, row, col), ",") {
				if v = strings.TrimSpace(v); v != "" {
					out = append(out, v)
				}
			}
			return out
		}
		for _, u := range split("USERS") {
			subjects = append(subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: u})
		}
		for _, g := range split("GROUPS") {
			subjects = append(subjects, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: g})
		}
		for _, sa := range split("SERVICEACCOUNTS") {
			ns, name, _ := strings.Cut(sa, "/")
			subjects = append(subjects, rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: name})
		}
		if kind == "ClusterRoleBinding" {
			return &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta(kind), ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
		}
		return &rbacv1.RoleBinding{TypeMeta: typeMeta(kind), ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
	}
}

// describeEndpoints reads an Endpoints page: per subset its ready
// addresses, not-ready addresses and ports. A page with no subset is a
// service with no endpoint at all.
func describeEndpoints(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	ep := &corev1.Endpoints{TypeMeta: typeMeta("Endpoints"), ObjectMeta: meta}
	subsets := root.child("Subsets")
	if subsets == nil {
		return nil, false
	}
	ips := func(v string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range strings.Split(v, ",") {
			if ip = strings.TrimSpace(ip); ip != "" && !unset(ip) {
				out = append(out, corev1.EndpointAddress{IP: ip})
			}
		}
		return out
	}
	var cur *corev1.EndpointSubset
	for _, n := range subsets.kids {
		switch n.key {
		case "Addresses":
			ep.Subsets = append(ep.Subsets, corev1.EndpointSubset{Addresses: ips(n.val)})
			cur = &ep.Subsets[len(ep.Subsets)-1]
		case "NotReadyAddresses":
			if cur != nil {
				cur.NotReadyAddresses = ips(n.val)
			}
		case "Ports":
			if cur == nil {
				continue
			}
			t := n.table(1000)
			if t == nil {
				continue
			}
			for _, row := range t.rows {
				port, ok := atoi32(t.get(row, "Port"))
				if !ok {
					continue
				}
				name := t.get(row, "Name")
				if unset(name) {
					name = ""
				}
				cur.Ports = append(cur.Ports, corev1.EndpointPort{Name: name, Port: port, Protocol: corev1.Protocol(t.get(row, "Protocol"))})
			}
		}
	}
	return ep, true
}

// describeNamespace reads a namespace page: its status (Active or
// Terminating). The quota and limit sections are read from their own
// describe pages.
func describeNamespace(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	ns := &corev1.Namespace{TypeMeta: typeMeta("Namespace"), ObjectMeta: meta}
	ns.Status.Phase = corev1.NamespacePhase(root.get("Status"))
	// A Terminating namespace's conditions say what holds its deletion
	// (NamespaceDeletionDiscoveryFailure: a group whose discovery fails).
	if t := root.child("Conditions").table(100); t != nil {
		for _, row := range t.rows {
			c := corev1.NamespaceCondition{Type: corev1.NamespaceConditionType(t.get(row, "Type")), Status: corev1.ConditionStatus(t.get(row, "Status")),
				Reason: t.get(row, "Reason"), Message: t.get(row, "Message")}
			if c.Type == "" {
				continue
			}
			c.LastTransitionTime, _ = parseDescribeTime(t.get(row, "LastTransitionTime"))
			ns.Status.Conditions = append(ns.Status.Conditions, c)
		}
	}
	return ns, ns.Status.Phase != ""
}

// describeStorageClass reads a storage class page: provisioner,
// parameters, reclaim policy, binding mode, volume expansion, and whether
// it is the default class.
func describeStorageClass(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool) {
	if root.get("IsDefaultClass") == "Yes" {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations["storageclass.kubernetes.io/is-default-class"] = "true"
	}
	sc := &storagev1.StorageClass{TypeMeta: typeMeta("StorageClass"), ObjectMeta: meta, Provisioner: root.get("Provisioner")}
	for _, kv := range strings.Split(root.get("Parameters"), ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k != "" {
			if sc.Parameters == nil {
				sc.Parameters = map[string]string{}
			}
			sc.Parameters[k] = v
		}
	}
	if v := root.get("ReclaimPolicy"); v != "" {
		rp := corev1.PersistentVolumeReclaimPolicy(v)
		sc.ReclaimPolicy = &rp
	}
	if v := root.get("VolumeBindingMode"); v != "" {
		m := storagev1.VolumeBindingMode(v)
		sc.VolumeBindingMode = &m
	}
	if v := root.get("AllowVolumeExpansion"); v == "True" || v == "False" || v == "true" || v == "false" {
		b := strings.EqualFold(v, "true")
		sc.AllowVolumeExpansion = &b
	}
	return sc, sc.Provisioner != ""
}
