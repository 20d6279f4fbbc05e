package analyst

import (
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
)

// A database cause is about a database instance, not an engine: when the
// findings that blame a database name it only by its engine
// ("postgresql") or by the service that called it, the instance is read
// from the evidence that names it, and kept in the db_instance fact so
// that affected_systems lists it.
//
// Where the instance is named, in order of preference: the caller's own
// log lines (a JDBC or libpq URL, host:5432, host=... dbname=...), the
// caller's pod environment (DB_HOST, DATABASE_URL, PGHOST...), the one
// RDS instance the CloudWatch metrics describe, the one database server
// whose own log was gathered.

var (
	dbURLRE = regexp.MustCompile(`(?i)\bjdbc:(?:postgresql|mysql|mariadb|sqlserver)://([\w.-]+)|\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?)://(?:[^@/\s]+@)?([\w.-]+)|\bhost=([\w.-]+)\S*\s+(?:\S+\s+){0,4}?(?:dbname|database|port)=|\b([a-zA-Z][\w-]*(?:\.[\w-]+)*):(?:5432|3306|6432|1433|27017|1521|26257)\b`)
	dbEnvRE = regexp.MustCompile(`(?i)^(?:pghost|mysql_host|(?:\w+_)?(?:db|database|postgres|pg|mysql|sql)_?(?:host|hostname|addr|address|server|url|uri|dsn))$`)
)

// dbKinds are the causes a database instance is behind; dbEngines the
// names that say only which engine a database runs.
var (
	dbKinds   = map[Kind]bool{KindDatabase: true, KindSlowQuery: true, KindConnLeak: true}
	dbEngines = map[string]bool{"postgresql": true, "postgres": true, "mysql": true, "mariadb": true, "mongodb": true, "database": true}
)

// dbHostOf extracts the database host a line or a setting names ("" for
// none).
func dbHostOf(s string) string {
	m := findSubmatch(dbURLRE, s)
	if m == nil {
		return ""
	}
	for _, h := range m[1:] {
		if h != "" && !stopHosts[strings.ToLower(h)] && !isCodeRef(h) {
			return h
		}
	}
	return ""
}

// instanceName is the name of the instance a database host names: the
// first label of a DNS name (an RDS endpoint's first label is its
// instance or cluster identifier), an address as it is.
func instanceName(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if net.ParseIP(h) != nil {
		return h
	}
	if i := strings.IndexByte(h, '.'); i > 0 {
		h = h[:i]
	}
	if h == "localhost" || dbEngines[h] {
		return ""
	}
	return h
}

// genericDBName reports whether a finding's subject names a database
// only by its engine or by the caller, or is a word lifted from the error
// text ("reserved for non-replication superuser connections"): not a host
// (no port, no dot) and no object the evidence shows.
func genericDBName(f *Finding, known map[string]bool) bool {
	s := strings.ToLower(f.Subject)
	if dbEngines[s] || s == strings.ToLower(f.fact("caller")) || s == "" {
		return true
	}
	lifted := f.fact("dependency") == f.Subject && !strings.Contains(f.fact("target"), ":") && !strings.Contains(s, ".") && net.ParseIP(s) == nil
	return f.Kind == KindDatabase && lifted && !known[f.Subject]
}

// attachDatabaseInstances sets the db_instance fact of the database
// findings whose subject does not name the instance.
func attachDatabaseInstances(fs []Finding, ev *Gathered) {
	byCaller := map[string]map[string]int{}
	note := func(caller, host string) {
		if n := instanceName(host); n != "" && caller != "" && n != caller {
			if byCaller[caller] == nil {
				byCaller[caller] = map[string]int{}
			}
			byCaller[caller][n]++
		}
	}
	var servers []string
	// A database server's own log read from its RDS log group names its
	// clients (host=10.30.7.201 in a disconnection line), never itself:
	// the group names the instance.
	rdsLogs := map[string]string{}
	for _, set := range ev.Logs {
		if inst := rdsInstanceOfGroup(set.Source); inst != "" {
			rdsLogs[set.Subject] = inst
			continue
		}
		if set.Host {
			if r := hostRole(set); (r == "postgresql" || r == "mysql") && !slices.Contains(servers, set.Subject) {
				servers = append(servers, set.Subject)
			}
			continue
		}
		for _, t := range set.Templates {
			note(set.Subject, dbHostOf(t.Example))
		}
	}
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if matchLine(dbEnvRE, e.Name) {
					h := dbHostOf(e.Value)
					if h == "" && !strings.ContainsAny(e.Value, " /@:=") {
						h = e.Value
					}
					note(WorkloadOfPod(p), h)
				}
			}
		}
	}
	known := map[string]bool{}
	for i := range ev.K8s.Pods {
		known[WorkloadOfPod(&ev.K8s.Pods[i])] = true
	}
	for _, d := range ev.K8s.Deployments {
		known[d.Name] = true
	}
	for _, sv := range ev.K8s.Services {
		known[sv.Service.Name] = true
	}
	for _, set := range ev.Logs {
		known[set.Subject] = true
	}
	var rds []string
	for _, ms := range ev.Metrics {
		if !strings.Contains(ms.Name, "AWS/RDS") {
			continue
		}
		for _, s := range ms.Series {
			if id := firstLabel(s.Labels, "DBInstanceIdentifier", "DBClusterIdentifier"); id != "" && !slices.Contains(rds, id) {
				rds = append(rds, id)
			}
		}
	}
	for i := range fs {
		f := &fs[i]
		dependency := infoOf(f.Kind).class == classDependency && (dbEngines[strings.ToLower(f.Subject)] || databaseLike(f))
		if !dbKinds[f.Kind] && !dependency || f.fact("db_instance") != "" || !genericDBName(f, known) {
			continue
		}
		inst := mostNamed(byCaller[orWord(f.fact("caller"), f.Subject)])
		if r := rdsLogs[orWord(f.fact("caller"), f.Subject)]; r != "" {
			inst = r
		}
		// The one instance the evidence shows stands for a database the
		// failing calls do not name; calls to an address are to whatever
		// answers there, maybe not that instance.
		addressed := net.ParseIP(DependencyName(f.fact("target"))) != nil
		switch {
		case inst != "" || addressed:
		case len(rds) == 1:
			inst = rds[0]
		case len(servers) == 1:
			inst = servers[0]
		}
		f.setFact("db_instance", inst)
	}
}

// mostNamed is the name counted most often (the first in name order on a
// tie), "" for none.
func mostNamed(counts map[string]int) string {
	best := ""
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		if best == "" || counts[n] > counts[best] {
			best = n
		}
	}
	return best
}
