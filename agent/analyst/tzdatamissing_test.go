package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A workload given TZ in an image without the zone database: a debug
// container's ls (busybox) or an exec's cat (coreutils) finding no
// /usr/share/zoneinfo/ZONE, or its runtime refusing the zone (Go's
// time.LoadLocation, Python's zoneinfo, Java's ZoneId), with the clock
// times of its environment shifted. A zone file that is there, a UTC zone
// and a TZ that names another zone are not it.
func TestTZDataMissing(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-2 * time.Hour), End: now}
	dep := func(tz string) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "promise", Namespace: "fulfil"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "promise", Env: []corev1.EnvVar{{Name: "TZ", Value: tz}, {Name: "SAME_DAY_CUTOFF", Value: "14:00"}, {Name: "WAREHOUSE", Value: "WH-1"}}}}
		return d
	}
	pods := []corev1.Pod{pod("promise-6f8b9c7d45-4nxwd", func(p *corev1.Pod) {
		p.Namespace = "fulfil"
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "promise-6f8b9c7d45"}}
	})}
	debugLs := func(zone, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Exec: true, Debug: true, Namespace: "fulfil", Pod: "promise-6f8b9c7d45-4nxwd", Run: "ls /proc/1/root/usr/share/zoneinfo/" + zone, Lines: []string{out}}
	}
	for _, tc := range []struct {
		name string
		tz   string
		cmds []evidence.CommandOutput
		log  string
		want []string // nil: no finding
	}{
		{"busybox ls in a debug container", "Europe/Berlin", []evidence.CommandOutput{debugLs("Europe/Berlin", "ls: /proc/1/root/usr/share/zoneinfo/Europe/Berlin: No such file or directory")}, "",
			[]string{"promise runs in UTC instead of Europe/Berlin", "no /usr/share/zoneinfo/Europe/Berlin", "(SAME_DAY_CUTOFF=14:00)", "14:00 is applied at 14:00 UTC, 15:00 Europe/Berlin"}},
		{"coreutils cat through exec", "America/Chicago", []evidence.CommandOutput{{Exec: true, Namespace: "fulfil", Pod: "promise-6f8b9c7d45-4nxwd", Run: "cat /usr/share/zoneinfo/America/Chicago", Lines: []string{"cat: /usr/share/zoneinfo/America/Chicago: No such file or directory"}}}, "",
			[]string{"instead of America/Chicago", "14:00 is applied at 14:00 UTC, 08:00 America/Chicago"}},
		{"go's LoadLocation in the log", "Europe/Berlin", nil, `time=2026-11-27T09:00:00Z level=ERROR msg="load location" error="unknown time zone Europe/Berlin"`,
			[]string{"instead of Europe/Berlin", "its log:"}},
		{"python zoneinfo in the log", "Europe/Paris", nil, `zoneinfo._common.ZoneInfoNotFoundError: 'No time zone found with key Europe/Paris'`,
			[]string{"instead of Europe/Paris"}},
		{"java ZoneId in the log", "Asia/Tokyo", nil, `java.time.zone.ZoneRulesException: Unknown time-zone ID: Asia/Tokyo`,
			[]string{"instead of Asia/Tokyo"}},
		{"the zone file is there", "Europe/Berlin", []evidence.CommandOutput{debugLs("Europe/Berlin", "/proc/1/root/usr/share/zoneinfo/Europe/Berlin")}, "", nil},
		{"another zone than its TZ", "Europe/Berlin", []evidence.CommandOutput{debugLs("Asia/Tokyo", "ls: /proc/1/root/usr/share/zoneinfo/Asia/Tokyo: No such file or directory")}, "", nil},
		{"UTC", "Etc/UTC", []evidence.CommandOutput{debugLs("Etc/UTC", "ls: /proc/1/root/usr/share/zoneinfo/Etc/UTC: No such file or directory")}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: w, Commands: tc.cmds, K8s: K8sEvidence{Pods: pods, Deployments: []appsv1.Deployment{dep(tc.tz)}}}
			if tc.log != "" {
				g.Logs = []LogSet{{Source: "promise-6f8b9c7d45-4nxwd", Subject: "promise", Namespace: "fulfil", Templates: []analysis.LogTemplate{{Example: tc.log, Incident: 4, FirstIncident: w.Start}}}}
			}
			fs := detectTZDataMissing(g, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, "promise")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := tzdataMissing.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
		})
	}
}
