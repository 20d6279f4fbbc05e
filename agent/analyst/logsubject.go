package analyst

import (
	"path"
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
