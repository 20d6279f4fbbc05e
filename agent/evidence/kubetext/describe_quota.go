package kubetext

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// pageTable finds the table of a describe page whose header starts with
// head (and is followed by a dashes line) and returns it, or nil.
func pageTable(page []string, head string, first int) *table {
	for i := 0; i+1 < len(page); i++ {
		if strings.HasPrefix(strings.TrimSpace(page[i]), head) && isDashes(page[i+1]) {
			return parseTable(page[i:], first+i, MaxObjects)
		}
	}
	return nil
}

// quantity reads a cell; "-" and unparsable cells are unset.
func quantity(s string) (resource.Quantity, bool) {
	if s == "" || s == "-" {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

// describeResourceQuota reads kubectl describe resourcequota: the
// "Resource Used Hard" table is the quota's status (kubectl prints
// status.hard and status.used; spec.hard, which it does not print, stays
// unset).
func describeResourceQuota(p *parser, root *dnode, meta metav1.ObjectMeta, page []string) (runtime.Object, bool) {
	q := &corev1.ResourceQuota{TypeMeta: typeMeta("ResourceQuota"), ObjectMeta: meta}
	t := pageTable(page, "Resource", 0)
	if t == nil || t.col("Used") < 0 || t.col("Hard") < 0 {
		return q, true
	}
	for _, row := range t.rows {
		name := corev1.ResourceName(t.get(row, "Resource"))
		if name == "" {
			continue
		}
		if v, ok := quantity(t.get(row, "Hard")); ok {
			if q.Status.Hard == nil {
				q.Status.Hard = corev1.ResourceList{}
			}
			q.Status.Hard[name] = v
		}
		if v, ok := quantity(t.get(row, "Used")); ok {
			if q.Status.Used == nil {
				q.Status.Used = corev1.ResourceList{}
			}
			q.Status.Used[name] = v
		}
	}
	return q, true
}

// describeLimitRange reads kubectl describe limitrange: one row per limit
// type and resource ("Container memory - - 256Mi 512Mi -").
func describeLimitRange(p *parser, root *dnode, meta metav1.ObjectMeta, page []string) (runtime.Object, bool) {
	lr := &corev1.LimitRange{TypeMeta: typeMeta("LimitRange"), ObjectMeta: meta}
	t := pageTable(page, "Type", 0)
	if t == nil || t.col("Resource") < 0 {
		return lr, true
	}
	index := map[corev1.LimitType]int{}
	set := func(l *corev1.ResourceList, name corev1.ResourceName, cell string) {
		if v, ok := quantity(cell); ok {
			if *l == nil {
				*l = corev1.ResourceList{}
			}
			(*l)[name] = v
		}
	}
	for _, row := range t.rows {
		typ, name := corev1.LimitType(t.get(row, "Type")), corev1.ResourceName(t.get(row, "Resource"))
		if typ == "" || name == "" {
			continue
		}
		i, ok := index[typ]
		if !ok {
			i = len(lr.Spec.Limits)
			index[typ] = i
			lr.Spec.Limits = append(lr.Spec.Limits, corev1.LimitRangeItem{Type: typ})
		}
		it := &lr.Spec.Limits[i]
		set(&it.Min, name, t.get(row, "Min"))
		set(&it.Max, name, t.get(row, "Max"))
		set(&it.DefaultRequest, name, t.get(row, "Default Request"))
		set(&it.Default, name, t.get(row, "Default Limit"))
		set(&it.MaxLimitRequestRatio, name, t.get(row, "Max Limit/Request Ratio"))
	}
	return lr, true
}
