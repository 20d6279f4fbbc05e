package kubetext

import (
	"strings"
	"testing"
)

// kubectl describe prints a long annotation's value on its own line, two
// columns under its key; short values stay on the key's line and a value
// continued at the value column is its own item.
func TestAnnotationItems(t *testing.T) {
	page := []string{
		"Name:             report-scheduler-5b8c7d9f64-tz4lm",
		"Annotations:      kubernetes.io/limit-ranger:",
		"                    LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app",
		"                  prometheus.io/scrape: true",
		"                  deployment.kubernetes.io/revision:",
		"                    7",
		"Status:           Running",
	}
	got := annotationMap(annotationItems(parseDescribe(page, 1).child("Annotations")))
	if v := got["kubernetes.io/limit-ranger"]; !strings.HasPrefix(v, "LimitRanger plugin set: cpu, memory request") || !strings.HasSuffix(v, "memory limit for container app") {
		t.Errorf("limit-ranger = %q", v)
	}
	if got["prometheus.io/scrape"] != "true" || got["deployment.kubernetes.io/revision"] != "7" {
		t.Errorf("annotations %v", got)
	}
	if _, ok := got["LimitRanger plugin set"]; ok {
		t.Errorf("a value read as a key: %v", got)
	}
}
