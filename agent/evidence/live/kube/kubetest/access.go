package kubetest

import (
	"fmt"
	"io"
	"net/http"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// accessReview answers a SelfSubjectAccessReview (kubectl auth can-i) from
// the fixtures' RBAC objects, as kube-apiserver's RBAC authorizer does for
// the user kubectl impersonates (--as): allowed when a rule of a role bound
// to that user (or service account) matches the verb, group, resource,
// subresource and name. Without --as the caller is the cluster's admin.
func (s *Server) accessReview(w http.ResponseWriter, r *http.Request) {
	// kubectl sends JSON or (1.2x and later) protobuf
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		status(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	rev, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if err != nil || !ok {
		status(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("not a SelfSubjectAccessReview: %v", err))
		return
	}
	user := r.Header.Get("Impersonate-User")
	attr := rev.Spec.ResourceAttributes
	allowed := user == ""
	if !allowed && attr != nil {
		allowed = s.rbacAllows(user, attr)
	}
	rev.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed}
	rev.APIVersion, rev.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	writeJSON(w, http.StatusCreated, rev)
}

// bound reports whether a binding's subject is the user.
func bound(sub rbacv1.Subject, user string) bool {
	if sub.Kind == "ServiceAccount" {
		return user == "system:serviceaccount:"+sub.Namespace+":"+sub.Name
	}
	return sub.Kind == "User" && sub.Name == user
}

func (s *Server) rbacAllows(user string, a *authorizationv1.ResourceAttributes) bool {
	var rules []rbacv1.PolicyRule
	roleRules := func(kind, ns, name string) {
		for _, o := range s.objectsOf(kind) {
			if m, _ := o["metadata"].(map[string]any); str(m, "name") == name && (kind == "ClusterRole" || str(m, "namespace") == ns) {
				if kind == "ClusterRole" {
					var cr rbacv1.ClusterRole
					if decode(o, &cr) {
						rules = append(rules, cr.Rules...)
					}
				} else {
					var ro rbacv1.Role
					if decode(o, &ro) {
						rules = append(rules, ro.Rules...)
					}
				}
			}
		}
	}
	for _, o := range s.objectsOf("RoleBinding") {
		var rb rbacv1.RoleBinding
		if !decode(o, &rb) || rb.Namespace != a.Namespace || !slices.ContainsFunc(rb.Subjects, func(sub rbacv1.Subject) bool { return bound(sub, user) }) {
			continue
		}
		roleRules(rb.RoleRef.Kind, rb.Namespace, rb.RoleRef.Name)
	}
	for _, o := range s.objectsOf("ClusterRoleBinding") {
		var crb rbacv1.ClusterRoleBinding
		if decode(o, &crb) && slices.ContainsFunc(crb.Subjects, func(sub rbacv1.Subject) bool { return bound(sub, user) }) {
			roleRules("ClusterRole", "", crb.RoleRef.Name)
		}
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, rule := range rules {
		if has(rule.Verbs, a.Verb) && has(rule.APIGroups, a.Group) && has(rule.Resources, resource) &&
			(len(rule.ResourceNames) == 0 || a.Name != "" && slices.Contains(rule.ResourceNames, a.Name)) {
			return true
		}
	}
	return false
}
