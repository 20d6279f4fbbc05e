package evidence

import "context"

// CommandOutput is the verbatim output of a command an operator ran and
// handed over in a terminal transcript, other than Kubernetes state read
// into objects: a command run in a container with kubectl exec (curl,
// nslookup, df -h, env, redis-cli, psql...), a command run on the
// operator's machine or over ssh on a host (curl, dig, openssl,
// systemctl status, cat /etc/resolv.conf), or a kubectl command whose
// output is not read into objects (auth can-i, get of a custom resource).
// Nothing in it is interpreted; the lines carry no times of their own
// unless the program printed them.
type CommandOutput struct {
	// Command is the command line as typed, without the prompt.
	Command string `json:"command"`
	// Exec: the command ran in a container, through kubectl exec.
	Exec bool `json:"exec,omitempty"`
	// Namespace, Pod and Container say where an exec ran; Pod is empty
	// when kubectl exec named a workload (Target "deploy/web"). Container
	// is empty when the transcript does not say.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Target    string `json:"target,omitempty"`
	Container string `json:"container,omitempty"`
	// Run is the command run in the container (after "--", or typed at the
	// exec shell's prompt); for other commands, Command.
	Run string `json:"run"`
	// ExitCode is what kubectl reported ("command terminated with exit
	// code 7"); -1 when not shown.
	ExitCode int `json:"exit_code"`
	// Host is the machine the command ran on when the transcript says so:
	// the host of "ssh host command" (Run is then the command run there)
	// or the one the prompt names ("ana@ws-041:~$ ").
	Host string `json:"host,omitempty"`
	// Debug: the command ran in a kubectl debug container beside the
	// pod's (sharing its network), not in one of its own containers.
	Debug  bool     `json:"debug,omitempty"`
	Lines  []string `json:"lines"`
	Source string   `json:"source"` // the file and line of the command
}

// CommandOutputReader is implemented by Kubernetes sources that hold
// command outputs (a bundle's terminal transcripts). CommandOutputs lists
// them in transcript order: those of namespace (empty: all), and always
// those that ran outside any namespace (the operator's machine).
type CommandOutputReader interface {
	CommandOutputs(ctx context.Context, namespace string) ([]CommandOutput, error)
}

// LoggedPodLister is implemented by Kubernetes sources that hold pods'
// logs apart from their listing (a bundle's <namespace>/<pod>/logs.txt
// files, a proxy's logs copied without its pod): LoggedPods names the pods
// whose logs PodLogs serves, of namespace (empty: all).
type LoggedPodLister interface {
	LoggedPods(ctx context.Context, namespace string) ([]PodRef, error)
}

// PodRef names a pod. Shown marks a pod whose log a command in a terminal
// transcript printed (kubectl logs): someone looked at that replica, so its
// log is read even when another pod of its workload is.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Shown     bool   `json:"shown,omitempty"`
}
