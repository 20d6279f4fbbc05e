package evidence

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// This file holds Kubernetes helpers shared by the bundle and the live
// backends, so both answer alike: event normalisation, endpoints derived
// from services and pods, and the stable orders of lists.

// NormalizeEvent fills the core/v1 fields of an event that only carries the
// newer ones (eventTime and series, as clusters since 1.19 often write):
// FirstTimestamp from EventTime, LastTimestamp and Count from Series (or
// from FirstTimestamp with Count 1 for a single occurrence).
func NormalizeEvent(e *corev1.Event) {
	if e.FirstTimestamp.IsZero() && !e.EventTime.IsZero() {
		e.FirstTimestamp = metav1.NewTime(e.EventTime.Time)
	}
	if e.Series != nil {
		if !e.Series.LastObservedTime.IsZero() && e.Series.LastObservedTime.After(e.LastTimestamp.Time) {
			e.LastTimestamp = metav1.NewTime(e.Series.LastObservedTime.Time)
		}
		if e.Series.Count > e.Count {
			e.Count = e.Series.Count
		}
	}
	if e.LastTimestamp.IsZero() {
		e.LastTimestamp = e.FirstTimestamp
	}
	if e.Count == 0 {
		e.Count = 1
	}
	if e.Source.Component == "" {
		e.Source.Component = e.ReportingController
	}
}

// EventFromV1 maps an events.k8s.io/v1 event to core/v1: regarding becomes
// InvolvedObject, note Message, series Count and LastTimestamp, the
// reporting controller and instance the Source.
func EventFromV1(ev *eventsv1.Event) corev1.Event {
	e := corev1.Event{
		TypeMeta:            metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
		ObjectMeta:          ev.ObjectMeta,
		InvolvedObject:      ev.Regarding,
		Related:             ev.Related,
		Reason:              ev.Reason,
		Message:             ev.Note,
		Type:                ev.Type,
		Action:              ev.Action,
		EventTime:           ev.EventTime,
		ReportingController: ev.ReportingController,
		ReportingInstance:   ev.ReportingInstance,
		Source:              ev.DeprecatedSource,
		FirstTimestamp:      ev.DeprecatedFirstTimestamp,
		LastTimestamp:       ev.DeprecatedLastTimestamp,
		Count:               ev.DeprecatedCount,
	}
	if e.Source.Component == "" {
		e.Source = corev1.EventSource{Component: ev.ReportingController, Host: ev.ReportingInstance}
	}
	if ev.Series != nil {
		e.Series = &corev1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
	}
	NormalizeEvent(&e)
	return e
}

// SortByNamespaceName sorts objects by namespace, then name.
func SortByNamespaceName[T any](items []T, meta func(*T) *metav1.ObjectMeta) {
	slices.SortStableFunc(items, func(a, b T) int {
		ma, mb := meta(&a), meta(&b)
		return cmp.Or(cmp.Compare(ma.Namespace, mb.Namespace), cmp.Compare(ma.Name, mb.Name))
	})
}

// SortEvents orders events by namespace, then last occurrence, then name:
// within a namespace they read as a timeline.
func SortEvents(evs []corev1.Event) {
	slices.SortStableFunc(evs, func(a, b corev1.Event) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace),
			a.LastTimestamp.Time.Compare(b.LastTimestamp.Time),
			cmp.Compare(a.Name, b.Name))
	})
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DeriveEndpoints computes the Endpoints the endpoints controller would
// publish for services, given the pods of their namespaces: one Endpoints
// per service with a selector (services without one have hand-made
// endpoints, which a dump does not hold), addresses from pods that match the
// selector, are not terminal or terminating and have an IP, ready ones in
// Addresses and the others in NotReadyAddresses. Named target ports resolve
// against the pods' container ports.
func DeriveEndpoints(services []corev1.Service, pods []corev1.Pod) []corev1.Endpoints {
	var out []corev1.Endpoints
	for _, svc := range services {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		ep := corev1.Endpoints{
			TypeMeta:   metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: svc.Labels},
		}
		// Pods are grouped by their resolved port list, as the controller does.
		subsets := map[string]*corev1.EndpointSubset{}
		var order []string
		for i := range pods {
			p := &pods[i]
			if p.Namespace != svc.Namespace || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if p.Status.PodIP == "" || p.DeletionTimestamp != nil ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			ports, ok := endpointPorts(&svc, p)
			if !ok {
				continue
			}
			key := ""
			for _, pt := range ports {
				key += pt.Name + "/" + strconv.Itoa(int(pt.Port)) + "/" + string(pt.Protocol) + ";"
			}
			ss, seen := subsets[key]
			if !seen {
				ss = &corev1.EndpointSubset{Ports: ports}
				subsets[key] = ss
				order = append(order, key)
			}
			nodeName := p.Spec.NodeName
			addr := corev1.EndpointAddress{
				IP:        p.Status.PodIP,
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			}
			if nodeName != "" {
				addr.NodeName = &nodeName
			}
			if PodReady(p) {
				ss.Addresses = append(ss.Addresses, addr)
			} else {
				ss.NotReadyAddresses = append(ss.NotReadyAddresses, addr)
			}
		}
		for _, k := range order {
			ep.Subsets = append(ep.Subsets, *subsets[k])
		}
		out = append(out, ep)
	}
	SortByNamespaceName(out, func(e *corev1.Endpoints) *metav1.ObjectMeta { return &e.ObjectMeta })
	return out
}

func endpointPorts(svc *corev1.Service, p *corev1.Pod) ([]corev1.EndpointPort, bool) {
	var ports []corev1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		port := sp.TargetPort
		var n int32
		switch {
		case port.Type == intstr.String && port.StrVal != "":
			found := false
			for _, c := range p.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == port.StrVal && cmp.Or(cp.Protocol, corev1.ProtocolTCP) == cmp.Or(sp.Protocol, corev1.ProtocolTCP) {
						n, found = cp.ContainerPort, true
					}
				}
			}
			if !found {
				return nil, false
			}
		case port.IntVal != 0:
			n = port.IntVal
		default:
			n = sp.Port
		}
		ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: cmp.Or(sp.Protocol, corev1.ProtocolTCP)})
	}
	return ports, true
}
