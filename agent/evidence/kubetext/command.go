package kubetext

import (
	"strings"
)

// command is one parsed kubectl command line.
type command struct {
	line      int
	text      string   // the command, without the prompt
	verb      string   // get, describe, logs, events, top
	args      []string // positional arguments after the verb
	namespace string   // -n / --namespace; empty when not given
	all       bool     // -A / --all-namespaces
	container string   // -c / --container
	previous  bool     // -p / --previous
	output    string   // -o / --output
	wide      bool     // -o wide
	piped     bool     // output went through a pipe (| grep, | head): tables may lack rows or headers
	flags     map[string]string
}

// valueFlags are kubectl flags that take a value in the next argument.
var valueFlags = map[string]bool{
	"-n": true, "--namespace": true, "-c": true, "--container": true, "-o": true, "--output": true,
	"-l": true, "--selector": true, "--context": true, "--cluster": true, "--user": true, "--kubeconfig": true,
	"-s": true, "--server": true, "--field-selector": true, "--tail": true, "--since": true, "--since-time": true,
	"--sort-by": true, "--for": true, "--types": true, "--token": true, "--request-timeout": true,
	"--template": true, "-L": true, "--label-columns": true, "--chunk-size": true, "--limit-bytes": true,
	"--max-log-requests": true, "--pod-running-timeout": true, "--as": true, "--as-group": true,
	"--cache-dir": true, "--certificate-authority": true, "--client-certificate": true, "--client-key": true,
	"--show-managed-fields": false, "--v": true, "-v": true, "--profile": true, "--profile-output": true,
	"--timeout": true, "--revision": true, "--subresource": true, "--image": true, "--copy-to": true, "--target": true,
	"--restart": true, "--env": true, "--port": true, "--overrides": true, "--labels": true, "--image-pull-policy": true,
}

// splitWords splits a shell command line into words, honouring single and
// double quotes and backslashes, and stops at an unquoted |, >, ; or &&.
// piped reports that it stopped.
func splitWords(s string) (words []string, piped bool) {
	var cur strings.Builder
	in := false
	var quote byte
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t':
			flush()
		case c == '|' || c == '>' || c == ';' || c == '&':
			flush()
			if c == '>' && len(words) > 0 && words[len(words)-1] == "2" {
				// 2>&1 or 2>/dev/null: the output itself is not filtered.
				words = words[:len(words)-1]
				for i+1 < len(s) && s[i+1] != ' ' {
					i++
				}
				continue
			}
			return words, true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, false
}

// kubectlAliases are the aliases of oh-my-zsh's kubectl plugin that run a
// command whose output is read (its expansion, without "kubectl").
var kubectlAliases = map[string]string{
	"kgp": "get pods", "kgpa": "get pods --all-namespaces", "kgpw": "get pods --watch", "kgpwide": "get pods -o wide",
	"kdp": "describe pods", "kgd": "get deployment", "kdd": "describe deployment", "kgs": "get svc", "kds": "describe svc",
	"kgn": "get nodes", "kgno": "get nodes", "kdno": "describe node", "kge": "get events", "kl": "logs", "klf": "logs -f",
	"keti": "exec -t -i", "kgrs": "get rs", "kdrs": "describe rs", "kgcm": "get configmaps", "kdcm": "describe configmap",
	"kgsec": "get secret", "kdsec": "describe secret", "kgpvc": "get pvc", "kdpvc": "describe pvc", "kgss": "get statefulset",
	"kdss": "describe statefulset", "kgds": "get daemonset", "kdds": "describe daemonset", "kgj": "get job", "kdj": "describe job",
	"kgcj": "get cronjob", "kdcj": "describe cronjob", "kgi": "get ingress", "kdi": "describe ingress", "kga": "get all",
	"kgaa": "get all --all-namespaces", "krh": "rollout history", "krsd": "rollout status deployment", "krsss": "rollout status statefulset",
	"kgns": "get namespaces", "kdns": "describe namespace", "kgpv": "get pv", "kdpv": "describe pv",
}

// parseCommand reads a "kubectl ..." command line. ok is false when the
// line is not a kubectl command.
func parseCommand(text string, line int) (*command, bool) {
	words, piped := splitWords(text)
	// Leading VAR=value assignments and sudo run kubectl all the same.
	for len(words) > 0 && (words[0] == "sudo" || (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-"))) {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, false
	}
	bin := words[0]
	if i := strings.LastIndexByte(bin, '/'); i >= 0 {
		bin = bin[i+1:]
	}
	if exp, ok := kubectlAliases[bin]; ok {
		// oh-my-zsh's kubectl plugin: kgp -n shop is kubectl get pods -n shop
		words = append(append([]string{"kubectl"}, strings.Fields(exp)...), words[1:]...)
		bin = "kubectl"
	}
	if bin != "kubectl" && bin != "kubectl.exe" && bin != "k" && bin != "oc" {
		return nil, false
	}
	c := &command{line: line, text: text, piped: piped, flags: map[string]string{}}
	var pos []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			pos = append(pos, words[i+1:]...)
			break
		}
		if len(w) < 2 || w[0] != '-' {
			pos = append(pos, w)
			continue
		}
		name, val, hasVal := strings.Cut(w, "=")
		// Short flags with the value attached: -nshop, -oyaml, -capp.
		if !hasVal && len(w) > 2 && w[1] != '-' {
			switch w[1] {
			case 'n', 'o', 'c', 'l':
				name, val, hasVal = w[:2], w[2:], true
			}
		}
		if !hasVal && valueFlags[name] && i+1 < len(words) {
			i++
			val, hasVal = words[i], true
		}
		if (name == "-L" || name == "--label-columns") && c.flags["-L"] != "" {
			// -L repeats: kubectl prints the columns of every one.
			val = c.flags["-L"] + "," + val
		}
		if name == "--label-columns" {
			name = "-L"
		}
		c.flags[name] = val
		switch name {
		case "-n", "--namespace":
			c.namespace = val
		case "-A", "--all-namespaces":
			c.all = !hasVal || val == "true"
		case "-c", "--container":
			c.container = val
		case "-p", "--previous":
			c.previous = !hasVal || val == "true"
		case "-o", "--output":
			c.output = val
			c.wide = val == "wide"
		}
	}
	if len(pos) == 0 {
		return c, true
	}
	c.verb = pos[0]
	c.args = pos[1:]
	// kubectl alpha events (1.23-1.25)
	if c.verb == "alpha" && len(c.args) > 0 {
		c.verb, c.args = c.args[0], c.args[1:]
	}
	return c, true
}

// kindAliases maps what kubectl accepts as a resource name to the kind.
var kindAliases = map[string]string{}

func init() {
	for kind, names := range map[string][]string{
		"Pod":                     {"pod", "pods", "po"},
		"Deployment":              {"deployment", "deployments", "deploy", "deployment.apps", "deployments.apps"},
		"ReplicaSet":              {"replicaset", "replicasets", "rs", "replicaset.apps", "replicasets.apps"},
		"StatefulSet":             {"statefulset", "statefulsets", "sts", "statefulset.apps", "statefulsets.apps"},
		"DaemonSet":               {"daemonset", "daemonsets", "ds", "daemonset.apps", "daemonsets.apps"},
		"Job":                     {"job", "jobs", "job.batch", "jobs.batch"},
		"CronJob":                 {"cronjob", "cronjobs", "cj", "cronjob.batch", "cronjobs.batch"},
		"Node":                    {"node", "nodes", "no"},
		"PersistentVolumeClaim":   {"persistentvolumeclaim", "persistentvolumeclaims", "pvc"},
		"PersistentVolume":        {"persistentvolume", "persistentvolumes", "pv"},
		"Service":                 {"service", "services", "svc"},
		"Ingress":                 {"ingress", "ingresses", "ing", "ingress.networking.k8s.io", "ingresses.networking.k8s.io"},
		"HorizontalPodAutoscaler": {"horizontalpodautoscaler", "horizontalpodautoscalers", "hpa", "horizontalpodautoscaler.autoscaling", "horizontalpodautoscalers.autoscaling"},
		"Event":                   {"event", "events", "ev", "event.events.k8s.io", "events.events.k8s.io"},
		"Namespace":               {"namespace", "namespaces", "ns"},
		"Endpoints":               {"endpoints", "ep"},
		"ConfigMap":               {"configmap", "configmaps", "cm"},
		"Secret":                  {"secret", "secrets"},
		"StorageClass":            {"storageclass", "storageclasses", "sc"},
		"ResourceQuota":           {"resourcequota", "resourcequotas", "quota"},
		"LimitRange":              {"limitrange", "limitranges", "limits"},
		"NetworkPolicy":           {"networkpolicy", "networkpolicies", "netpol", "networkpolicy.networking.k8s.io", "networkpolicies.networking.k8s.io"},
		"PodDisruptionBudget":     {"poddisruptionbudget", "poddisruptionbudgets", "pdb", "poddisruptionbudget.policy", "poddisruptionbudgets.policy"},
		"ServiceAccount":          {"serviceaccount", "serviceaccounts", "sa"},
		"Role":                    {"role", "roles", "role.rbac.authorization.k8s.io", "roles.rbac.authorization.k8s.io"},
		"RoleBinding":             {"rolebinding", "rolebindings", "rolebinding.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io"},
		"ClusterRole":             {"clusterrole", "clusterroles", "clusterrole.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io"},
		"ClusterRoleBinding":      {"clusterrolebinding", "clusterrolebindings", "clusterrolebinding.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io"},
	} {
		for _, n := range names {
			kindAliases[n] = kind
		}
	}
}

// kindOf returns the kind a resource word names ("po", "deploy", "Pod").
func kindOf(word string) string {
	return kindAliases[strings.ToLower(word)]
}

// target is one kind and optional name a get or describe names.
type target struct {
	kind, word, name string
}

// targets reads the resource arguments of get and describe: "kind",
// "kind name...", "kind/name...", "kind1,kind2".
func (c *command) targets() []target {
	var out []target
	if len(c.args) == 0 {
		return nil
	}
	first := c.args[0]
	if !strings.Contains(first, "/") {
		var ts []target
		for _, w := range strings.Split(first, ",") {
			ts = append(ts, target{kind: kindOf(w), word: w})
		}
		if len(c.args) == 1 {
			return ts
		}
		for _, n := range c.args[1:] {
			for _, t := range ts {
				t.name = n
				out = append(out, t)
			}
		}
		return out
	}
	for _, a := range c.args {
		w, n, _ := strings.Cut(a, "/")
		out = append(out, target{kind: kindOf(w), word: w, name: n})
	}
	return out
}

// labelColumns are the label keys of get -L (--label-columns), in order.
func (c *command) labelColumns() []string {
	var out []string
	for _, k := range strings.Split(c.flags["-L"], ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}
