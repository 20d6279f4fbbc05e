package apitest

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// deriveEndpoints adds the Endpoints and EndpointSlices the controllers
// would publish for the fixtures' services, when the fixtures hold none
// (a cluster-info dump does not).
func (s *Server) deriveEndpoints() {
	if len(s.objects["Endpoints"]) > 0 || len(s.objects["EndpointSlice"]) > 0 {
		return
	}
	var svcs []corev1.Service
	var pods []corev1.Pod
	for _, o := range s.objects["Service"] {
		var v corev1.Service
		if decode(o, &v) {
			svcs = append(svcs, v)
		}
	}
	for _, o := range s.objects["Pod"] {
		var v corev1.Pod
		if decode(o, &v) {
			pods = append(pods, v)
		}
	}
	for _, ep := range evidence.DeriveEndpoints(svcs, pods) {
		ep.TypeMeta.Kind, ep.TypeMeta.APIVersion = "Endpoints", "v1"
		if m, ok := encode(ep); ok {
			s.objects["Endpoints"] = append(s.objects["Endpoints"], m)
		}
		// One EndpointSlice per subset, as the EndpointSlice controller
		// mirrors them.
		for i, ss := range ep.Subsets {
			var eps []any
			add := func(a corev1.EndpointAddress, ready bool) {
				e := map[string]any{"addresses": []string{a.IP}, "conditions": map[string]any{"ready": ready}}
				if a.TargetRef != nil {
					e["targetRef"] = map[string]any{"kind": a.TargetRef.Kind, "namespace": a.TargetRef.Namespace, "name": a.TargetRef.Name}
				}
				if a.NodeName != nil {
					e["nodeName"] = *a.NodeName
				}
				eps = append(eps, e)
			}
			for _, a := range ss.Addresses {
				add(a, true)
			}
			for _, a := range ss.NotReadyAddresses {
				add(a, false)
			}
			var ports []any
			for _, p := range ss.Ports {
				ports = append(ports, map[string]any{"name": p.Name, "port": p.Port, "protocol": p.Protocol})
			}
			s.objects["EndpointSlice"] = append(s.objects["EndpointSlice"], map[string]any{
				"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
				"metadata": map[string]any{"name": ep.Name + "-" + string(rune('a'+i%26)), "namespace": ep.Namespace,
					"labels": map[string]any{"kubernetes.io/service-name": ep.Name, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
				"addressType": "IPv4", "endpoints": eps, "ports": ports,
			})
		}
	}
}

func decode(m map[string]any, v any) bool {
	b, err := json.Marshal(m)
	return err == nil && json.Unmarshal(b, v) == nil
}

func encode(v any) (map[string]any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil
}
