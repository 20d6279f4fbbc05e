package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// rolloutDedupe is how close a Kubernetes rollout and a recorded deploy of
// the same service must be to count as one change.
const rolloutDedupe = 2 * time.Minute

func changeTools() []Tool {
	return []Tool{{
		Spec: Spec{
			Name: "list_changes",
			Description: "List changes in a time window, oldest first: deploys, config changes, feature flags and infrastructure changes " +
				"(from the team's change sources: changes.json, GitHub deployments) merged with Kubernetes rollouts (new ReplicaSet revisions " +
				"of Deployments). Use it to find what changed shortly before an incident started.",
			Parameters: evSchema(`{
				"since": {"type": "string", "description": "window start: RFC 3339 time or a duration back from now such as 6h (default 24h)"},
				"until": {"type": "string", "description": "window end (default now)"},
				"service": {"type": "string", "description": "only changes of this service (Deployment name for rollouts); empty lists all"}
			}`),
			Integration: IntegrationChanges, ReadOnly: true,
			Agents: []string{AgentAWS, AgentMetrics, AgentCoding, AgentInvestigation},
		},
		Run: runListChanges,
	}}
}

func runListChanges(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Since, Until, Service string }
	if err := decodeArgs("list_changes", raw, &a); err != nil {
		return nil, err
	}
	var src *evidence.Sources
	if env != nil {
		src = env.Sources
	}
	if src == nil || (src.Changes == nil && src.Kubernetes == nil) {
		return nil, evNotConfigured("changes", "changes")
	}
	since, until, err := evWindowDefault(env, a.Since, a.Until, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	var recorded []evidence.Change
	var errs []error
	answered := false
	if src.Changes != nil {
		recorded, err = src.Changes.List(ctx, since, until, a.Service)
		if err != nil {
			errs = append(errs, err)
		} else {
			answered = true
		}
	}
	var rollouts []evidence.Change
	if src.Kubernetes != nil {
		rss, err := src.Kubernetes.ReplicaSets(ctx, "")
		if err != nil {
			if evidence.CodeOf(err) != evidence.CodeNotConfigured {
				errs = append(errs, err)
			}
		} else {
			rollouts = RolloutChanges(rss, since, until, a.Service)
			answered = true
		}
	}
	// A source that failed while the other answered is a partial answer;
	// when every source failed, the first error is the answer.
	if !answered && len(errs) > 0 {
		return nil, errs[0]
	}
	return MergeChanges(recorded, rollouts), nil
}

// RolloutChanges turns Deployment-owned ReplicaSets created in [since,
// until] into deploy changes (one per revision).
func RolloutChanges(rss []appsv1.ReplicaSet, since, until time.Time, service string) []evidence.Change {
	out := []evidence.Change{}
	for _, rs := range rss {
		owner := ""
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" {
				owner = o.Name
			}
		}
		if owner == "" || service != "" && owner != service {
			continue
		}
		t := rs.CreationTimestamp.Time.UTC()
		if t.Before(since) || t.After(until) {
			continue
		}
		rev := rs.Annotations["deployment.kubernetes.io/revision"]
		var images []string
		for _, c := range rs.Spec.Template.Spec.Containers {
			images = append(images, c.Name+"="+c.Image)
		}
		desc := fmt.Sprintf("rollout of deployment %s/%s", rs.Namespace, owner)
		if rev != "" {
			desc += " revision " + rev
		}
		desc += " (ReplicaSet " + rs.Name
		if len(images) > 0 {
			desc += ", " + strings.Join(images, ", ")
		}
		desc += ")"
		if cause := rs.Annotations["kubernetes.io/change-cause"]; cause != "" {
			desc += ": " + cause
		}
		out = append(out, evidence.Change{Timestamp: t, Service: owner, Kind: "deploy", Description: desc, Revision: rev, Source: "kubernetes"})
	}
	return out
}

// MergeChanges merges recorded changes with Kubernetes rollouts, oldest
// first. A rollout within two minutes of a recorded deploy of the same
// service is the same change and is dropped (the record is richer).
func MergeChanges(recorded, rollouts []evidence.Change) []evidence.Change {
	out := append([]evidence.Change{}, recorded...)
	for _, r := range rollouts {
		dup := false
		for _, c := range recorded {
			if c.Kind == "deploy" && c.Service == r.Service {
				d := c.Timestamp.Sub(r.Timestamp)
				if d < 0 {
					d = -d
				}
				if d <= rolloutDedupe {
					dup = true
					break
				}
			}
		}
		if !dup {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out
}
