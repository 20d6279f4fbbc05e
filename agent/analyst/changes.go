package analyst

import (
	"fmt"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// DetectChanges turns recorded changes (deploys, config changes, feature
// flags, infrastructure) into change findings. Whether a change matters is
// decided later, against the onset of symptoms.
func DetectChanges(changes []evidence.Change, w Window) []Finding {
	var out []Finding
	for _, c := range changes {
		if !w.End.IsZero() && c.Timestamp.After(w.End) {
			continue
		}
		kind := KindDeploy
		switch strings.ToLower(c.Kind) {
		case "config", "configuration", "config_change", "configmap", "secret":
			kind = KindConfigChange
		case "feature_flag", "flag", "featureflag", "feature-flag":
			kind = KindFeatureFlag
		case "infra", "infrastructure", "terraform", "network", "scaling":
			kind = KindInfraChange
		}
		subject := c.Service
		if subject == "" {
			subject = "*"
		}
		what := c.Description
		if what == "" {
			what = string(kind)
		}
		f := Finding{Kind: kind, Subject: subject, Object: "change " + c.Source, Time: c.Timestamp, Severity: SevInfo, Weight: 0.9, Source: SrcChanges}
		label := map[Kind]string{KindDeploy: "deploy", KindConfigChange: "config change", KindFeatureFlag: "feature flag change", KindInfraChange: "infrastructure change"}[kind]
		svc := ""
		if c.Service != "" {
			svc = " of " + c.Service
		}
		f.Summary = fmt.Sprintf("%s%s: %s", label, svc, what)
		ev := fmt.Sprintf("%s%s at %s: %s", label, svc, ts(c.Timestamp), quote(what, 200))
		if c.Revision != "" {
			ev += " (revision " + c.Revision + ")"
		}
		if c.Author != "" {
			ev += " by " + c.Author
		}
		f.Evidence = []string{ev}
		f.setFact("description", what)
		f.setFact("revision", c.Revision)
		f.setFact("author", c.Author)
		out = append(out, f)
	}
	return out
}

// mergeRolloutChanges folds rollout findings from ReplicaSets into recorded
// deploys of the same service within five minutes (keeping the recorded
// description and adding what the ReplicaSet shows changed), and returns
// the rest.
func mergeRolloutChanges(recorded, rollouts []Finding) []Finding {
	out := append([]Finding(nil), recorded...)
	for _, r := range rollouts {
		merged := false
		for i := range out {
			c := &out[i]
			if c.Kind != KindDeploy || c.Subject != r.Subject {
				continue
			}
			if d := c.Time.Sub(r.Time); d < -5*time.Minute || d > 5*time.Minute {
				continue
			}
			c.Evidence = append(c.Evidence, r.Evidence...)
			for k, v := range r.Facts {
				if k == "revision" && c.fact("revision") != "" {
					c.setFact("k8s_revision", v)
					continue
				}
				c.setFact(k, v)
			}
			merged = true
			break
		}
		if !merged {
			out = append(out, r)
		}
	}
	return out
}
