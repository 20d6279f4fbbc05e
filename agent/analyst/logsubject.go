package analyst

import (
	"path"
	"regexp"
	"strings"
)

// genericLogNames are file names that say what kind of log a file is, not
// whose: a host's journal or syslog, a proxy's access and error logs, a
// broker's server log. Such a file belongs to the directory it sits in
// ("batch-01/journal.log" is batch-01's journal, "nginx/error.log" nginx's).
var genericLogNames = map[string]bool{"journal": true, "syslog": true, "messages": true, "kern": true, "daemon": true, "auth": true,
	"error": true, "errors": true, "access": true, "server": true, "output": true, "stdout": true, "stderr": true, "current": true,
	"console": true, "app": true, "application": true, "service": true, "main": true, "log": true}

// ownerDir is the directory that names the owner of a log file with a
// generic name, "" when the name is the owner's or no directory says.
func ownerDir(source, base string) string {
	if !genericLogNames[strings.ToLower(base)] {
		return ""
	}
	dir := path.Base(path.Dir(strings.TrimRight(source, "/")))
	switch strings.ToLower(dir) {
	case "", ".", "/", "log", "logs", "var", "tmp", "data":
		return ""
	}
	return dir
}

// podNameRE is the name Kubernetes gives a Deployment's pod: the workload,
// its ReplicaSet's pod-template hash drawn from the alphabet Kubernetes
// uses for generated names (no vowels, no 0, 1 or 3) and a five-character
// suffix (a name copied by hand may carry any letter or digit there), so
// that a service's own name ("orders-backend-v2") never reads as one. The
// hash must hold a digit: "search-api-bdfghk-hello" is no pod.
var podNameRE = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*?)-([bcdfghjklmnpqrstvwxz2456789]{6,10})-[a-z0-9]{5}$`)

// podLogOwner is the workload a log file named after one of its pods
// belongs to ("loyalty-service-85f6c9d7b-4lmzt" → "loyalty-service"; what
// `kubectl logs POD > POD.log` leaves), "" when the name is no pod's. The
// logs of a workload's pods, old ReplicaSet and new, are then one
// service's: its deploy is their trigger, its callers' errors theirs.
func podLogOwner(base string) string {
	if m := findSubmatch(podNameRE, base); m != nil && strings.ContainsAny(m[2], "0123456789") {
		return m[1]
	}
	return ""
}
