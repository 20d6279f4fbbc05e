package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// A database whose transaction-log archiving fails: PostgreSQL keeps every
// WAL segment until its archive_command has copied it away, so when the
// copy fails (the archive bucket refuses the upload after a policy or
// credential change, the archive host is unreachable, its disk is full)
// pg_wal grows without bound and fills the data volume, and the server
// stops when it is full. The volume alert, the disk errors and the
// uploader's access-denied lines are its symptoms; the cause is the
// archiving that stopped, and why it stopped.
//
// It is read from the server's log (PostgreSQL's "archive command failed
// with exit code 1", "archiving write-ahead log file … failed too many
// times"), from the archiver's own lines (WAL-G's wal-push "could not
// upload … AccessDenied", pgBackRest's archive-push "ERROR: [xxx]",
// barman-cloud-wal-archive's exceptions, CloudNativePG's "failed to archive
// WAL"), from the archiver's statistics (postgres_exporter's
// pg_stat_archiver_failed_count, CloudNativePG's
// cnpg_pg_stat_archiver_seconds_since_last_archival, psql's
// pg_stat_archiver: last_failed_time after last_archived_time) and from
// what the disk holds (du of pg_wal).

// KindArchiveFailing is a database whose transaction-log archiving fails,
// so its WAL piles up on its volume.
const KindArchiveFailing Kind = "wal_archive_failing"

var archiveFailing = &mechanism{
	kind:   KindArchiveFailing,
	class:  classCause,
	label:  "database WAL archiving failing (WAL kept until archived)",
	detect: detectArchiveFailing,
	// The volume filling, the disk errors and the archiver's own error
	// lines on the database are what the failed archiving produces.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindVolumeClaim, KindDiskFull, KindDiskClaim, KindSaturation, KindAuth, KindLogErrors, KindErrorRate, KindWALRetained:
		default:
			return false
		}
		ns := h.top().Namespace
		return f.relates(h.Subject) || ns != "" && f.Namespace == ns || slices.Contains(h.top().Related, f.Subject)
	},
	// Archiving stops because of its destination or its credentials: a
	// bucket policy, an IAM role, a key, the archive host. A database
	// setting changed near it (max_wal_size) is a coincidence.
	fitsChange:     changeSays(archiveChangeRE),
	strictTriggers: true,
	describe:       describeArchiveFailing,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		db, dest := h.Subject, orWord(h.fact("destination"), "the archive destination")
		switch h.fact("reason_class") {
		case "denied":
			r.high("Restore %s's write access to %s (the bucket policy, IAM role or key the archiver uses; with an encryption condition, have the archiver send it: WALG_S3_SSE=aws:kms, pgBackRest repo-s3-sse or barman --sse), then check the next segment archives (pg_stat_archiver.last_archived_time moves)", db, dest)
		case "credentials":
			r.high("Give the archiver of %s valid credentials for %s (rotated or expired keys, token), then check the next segment archives (pg_stat_archiver.last_archived_time moves)", db, dest)
		case "unreachable":
			r.high("Make %s reachable from %s again (network policy, DNS, endpoint), then check the next segment archives", dest, db)
		case "full":
			r.high("Free or grow the space of %s so that %s can archive again", dest, db)
		default:
			r.high("Fix the archive command of %s (%s) so that it succeeds again, then check the next segment archives (pg_stat_archiver.last_archived_time moves)", db, orWord(h.fact("archiver"), "archive_command"))
		}
		if c := h.Trigger; c != nil {
			r.high("Revert or amend the change that broke archiving: %s", quote(c.Summary, 160))
		}
		r.high("Keep %s from filling meanwhile: grow its volume now; do not delete files from pg_wal by hand (PostgreSQL removes archived segments at the next checkpoint once archiving works)", orWord(h.fact("volume"), "the volume of "+db))
		r.low("Alert on pg_stat_archiver failures (failed_count rising, time since the last archived segment) and on pg_wal's size, not only on the volume")
	},
}

var (
	// A line saying a WAL segment could not be archived.
	archiveFailRE = regexp.MustCompile(`(?i)archive command failed|archiving (?:write-ahead log|WAL|transaction log) file .{0,80}failed|failed archive command was|archive_command .{0,40}(?:failed|exit)|archive-push.{0,200}(?:ERROR|fail|denied)|ERROR: \[\d{3}\].{0,200}archive|WAL archiver exception|barman-cloud-wal-archive.{0,200}(?:error|fail|exception)|failed to archive WAL|failed to run wal-archive|error while archiving|could not archive|wal-push.{0,200}(?:fail|error|denied)|(?:wal-g|wal-e|walg).{0,200}(?:could not upload|failed to upload)`)
	// Why the archiver's copy fails, from its own lines.
	archiveReasons = []struct {
		class string
		re    *regexp.Regexp
	}{
		{"denied", regexp.MustCompile(`(?i)AccessDenied|Access Denied|\b403\b|Forbidden|AuthorizationPermissionMismatch|AuthorizationFailure|Permission '?storage\.objects\.\w+'? denied|does not have storage\.objects|not authorized to perform|explicit deny|KMS\.?\w*(?:Denied|Disabled)|AccessDeniedException`)},
		{"credentials", regexp.MustCompile(`(?i)InvalidAccessKeyId|SignatureDoesNotMatch|ExpiredToken|TokenRefreshRequired|InvalidToken|NoCredentialProviders|no valid credential|unable to locate credentials|\b401\b|Unauthorized`)},
		{"missing", regexp.MustCompile(`(?i)NoSuchBucket|bucket does not exist|ContainerNotFound|\b404\b`)},
		{"unreachable", regexp.MustCompile(`(?i)connection refused|i/o timeout|no such host|could not resolve|Connection timed out|network is unreachable|TLS handshake timeout|RequestTimeout|HostConnectError`)},
		{"full", regexp.MustCompile(`(?i)No space left on device|disk full|QuotaExceeded|quota exceeded`)},
	}
	// An upload or copy error of an archiver, whatever its reason.
	archiveUploadRE = regexp.MustCompile(`(?i)could not upload|failed to upload|unable to upload|upload failed|PutObject|archive-push|wal-push|barman-cloud|WAL archiver|\brsync\b|\bscp\b|^ssh:|connect to host|aws s3|gsutil|azcopy|rclone`)
	// Where the archive goes.
	archiveDestRE   = regexp.MustCompile(`(?i)bucket[ =:]+['"]?([a-z0-9][\w.-]{2,62})|\b(?:s3|gs|az|azure)://([a-z0-9][\w.-]{2,62})|/storage/v1/b/([a-z0-9][\w.-]{2,62})/`)
	archiveHostRE   = regexp.MustCompile(`(?i)connect to host ([\w.-]+)|\b\w+@([\w.-]+):/`)
	archiveStatusRE = regexp.MustCompile(`(?i)status code:? (\d{3})\b|failed with (\d{3})\b|:\s(\d{3}) (?:POST|PUT|GET|HEAD)\b`)
	archiveToolRE   = regexp.MustCompile(`(?i)\b(wal-g|walg|pgbackrest|barman-cloud-wal-archive|barman|wal-e)\b`)
	// A change to where or how the archive is written.
	archiveChangeRE = regexp.MustCompile(`(?i)bucket|\bs3\b|\bgcs\b|blob|storage account|\biam\b|policy|\brole\b|\bkms\b|encryption|credential|access key|secret|archive|backup|wal-g|pgbackrest|barman`)
	// postgres_exporter's and CloudNativePG's archiver statistics.
	archiverFailedMetricRE = regexp.MustCompile(`(?i)stat_archiver_failed(?:_count)?(?:_total)?$`)
	archiverAgeMetricRE    = regexp.MustCompile(`(?i)stat_archiver_(?:seconds_since_last_archival|last_archive_age)$`)
	// du's line for the WAL directory: "97G	/var/lib/postgresql/data/pg_wal".
	walDirSizeRE = regexp.MustCompile(`^\s*(\d+(?:[.,]\d+)?[KMGTP]?i?B?)\s+(\S*/(?:pg_wal|pg_xlog))/?\s*$`)
	// The postgresql timestamp psql prints ("2026-10-01 19:00:31.007114+00").
	pgTimeLayouts = []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05-07", "2006-01-02 15:04:05.999999Z07:00", time.RFC3339}
)

// archiveSignal is what the evidence says of one database's archiving.
type archiveSignal struct {
	subject, ns, object string
	onset               time.Time
	failLine            string // the server's or archiver's failure line
	failLines           int
	reasonLine          string
	reasonClass         string
	evidence            []string
	strong              int // independent kinds of evidence
}

// detectArchiveFailing finds databases whose WAL archiving fails.
func detectArchiveFailing(ev *Gathered, found []Finding) []Finding {
	sigs := map[string]*archiveSignal{}
	var order []string
	get := func(subject, ns string) *archiveSignal {
		if sigs[subject] == nil {
			sigs[subject] = &archiveSignal{subject: subject, ns: ns}
			order = append(order, subject)
		}
		return sigs[subject]
	}
	// The logs: the failure lines and, among them, why the copy fails.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		var fail *analysis.LogTemplate
		for j := range set.Templates {
			t := &set.Templates[j]
			if matchLine(archiveFailRE, t.Example) && (fail == nil || t.Count > fail.Count) {
				fail = t
			}
		}
		if fail == nil {
			continue
		}
		subj := orWord(set.Subject, subjectOfSource(set.Source))
		sg := get(subj, set.Namespace)
		sg.object = orWord(sg.object, set.Origin+" "+set.Source)
		first := firstOf(fail.FirstSeen, fail.FirstIncident)
		sg.onset = earliest(sg.onset, first)
		sg.failLine = fail.Example
		sg.failLines += fail.Count
		sg.evidence = append(sg.evidence, templateEvidence(*set, *fail, fail.Example))
		sg.strong++
		// The archiver's reason: the most frequent upload error with a
		// reason, the first reason class in the list winning a tie.
		best, bestN, bestRank := -1, 0, len(archiveReasons)
		bestClass := ""
		for j := range set.Templates {
			t := &set.Templates[j]
			text := t.Example
			if !matchLine(archiveUploadRE, text) && !matchLine(archiveFailRE, text) {
				continue
			}
			for rank, r := range archiveReasons {
				if matchLine(r.re, text) && (t.Count > bestN || t.Count == bestN && rank < bestRank) {
					best, bestN, bestRank, bestClass = j, t.Count, rank, r.class
					break
				}
			}
		}
		if best >= 0 {
			t := set.Templates[best]
			sg.reasonLine, sg.reasonClass = t.Example, bestClass
			sg.onset = earliest(sg.onset, firstOf(t.FirstSeen, t.FirstIncident))
			if t.Example != fail.Example {
				sg.evidence = append(sg.evidence, templateEvidence(*set, t, t.Example))
			}
		}
	}
	// The archiver's statistics: failures counted, or the last archived
	// segment ageing.
	for _, ms := range ev.Metrics {
		failed, age := matchLine(archiverFailedMetricRE, ms.Name), matchLine(archiverAgeMetricRE, ms.Name)
		if !failed && !age {
			continue
		}
		for _, s := range ms.Series {
			subj := SubjectOfLabels(s.Labels)
			if subj == "" || len(s.Points) < 2 {
				continue
			}
			var base, at time.Time
			var first, last float64
			first, last = s.Points[0].V, s.Points[len(s.Points)-1].V
			for k := 1; k < len(s.Points); k++ {
				if s.Points[k].V > s.Points[k-1].V && base.IsZero() {
					base = s.Points[k-1].T
					at = s.Points[k].T
				}
			}
			switch {
			case failed && last > first && base.After(s.Points[0].T.Add(-time.Second)):
				sg := get(subj, s.Labels["namespace"])
				sg.onset = earliest(sg.onset, at)
				sg.evidence = append(sg.evidence, fmt.Sprintf("%s of %s counts failed archive attempts from %s on (none before)", ms.Name, subj, ts(at)))
				sg.strong++
			case age && last >= 15*60 && last > first:
				sg := get(subj, s.Labels["namespace"])
				sg.onset = earliest(sg.onset, s.Points[len(s.Points)-1].T.Add(-time.Duration(last)*time.Second))
				sg.evidence = append(sg.evidence, fmt.Sprintf("%s of %s reached %s: no segment archived since", ms.Name, subj, fmtLag(time.Duration(last)*time.Second)))
				sg.strong++
			}
		}
	}
	// What psql and du printed in the database's pod.
	walSize, walDir := "", ""
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(walDirSizeRE, l); m != nil {
				walSize, walDir = m[1], m[2]
			}
		}
		for _, t := range sqlTables(c.Lines) {
			if !slices.Contains(t.cols, "last_failed_time") || !slices.Contains(t.cols, "last_archived_time") {
				continue
			}
			for r := range t.rows {
				okAt, ok1 := pgTime(t.cell(r, "last_archived_time"))
				failAt, ok2 := pgTime(t.cell(r, "last_failed_time"))
				if !ok2 || ok1 && !failAt.After(okAt) {
					continue
				}
				subj := workloadOfName(c.Pod)
				if inst, _ := sqlInstanceOf(c); subj == "" {
					subj = inst
				}
				if subj == "" {
					continue
				}
				sg := get(subj, c.Namespace)
				if ok1 {
					sg.onset = earliest(sg.onset, okAt)
				}
				e := fmt.Sprintf("pg_stat_archiver on %s: last segment archived %s at %s, last failure %s at %s", orWord(c.Pod, subj), t.cell(r, "last_archived_wal"), ts(okAt), t.cell(r, "last_failed_wal"), ts(failAt))
				if n := t.cell(r, "failed_count"); n != "" {
					e += ", " + n + " failures counted"
				}
				sg.evidence = append(sg.evidence, e+": archiving has not succeeded since")
				sg.strong++
			}
		}
	}
	var out []Finding
	for _, k := range order {
		sg := sigs[k]
		if sg.failLine == "" && sg.strong < 2 {
			// A counter alone, without the failure or a second view, is
			// not enough to name the archiving.
			continue
		}
		f := Finding{Kind: KindArchiveFailing, Subject: sg.subject, Object: orWord(sg.object, "database "+sg.subject), Namespace: sg.ns,
			Time: sg.onset, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
		if sg.failLine == "" {
			f.Source = SrcMetrics
		}
		f.setFact("line", sg.failLine)
		f.setFact("fail_lines", strconv.Itoa(sg.failLines))
		f.setFact("reason_line", sg.reasonLine)
		f.setFact("reason_class", sg.reasonClass)
		text := sg.reasonLine + " " + sg.failLine
		if m := findSubmatch(archiveDestRE, text); m != nil {
			f.setFact("destination", "bucket "+orWord(m[1], orWord(m[2], m[3])))
		} else if m := findSubmatch(archiveHostRE, text); m != nil {
			f.setFact("destination", "archive host "+orWord(m[1], m[2]))
		}
		if m := findSubmatch(archiveToolRE, text); m != nil {
			f.setFact("archiver", strings.ToLower(m[1]))
		}
		if m := findSubmatch(archiveStatusRE, sg.reasonLine); m != nil {
			f.setFact("status", orWord(m[1], orWord(m[2], m[3])))
		}
		f.Evidence = append(f.Evidence, sg.evidence...)
		if walSize != "" {
			f.setFact("wal_size", walSize)
			f.Evidence = append(f.Evidence, fmt.Sprintf("du reports %s in %s", walSize, walDir))
			sg.strong++
		}
		// The volume it fills, from the volume's own findings.
		f.setFact("volume", claimOf(ev.Metrics, sg.subject, sg.ns))
		switch {
		case sg.strong >= 2 && sg.reasonClass != "":
			f.Weight = 0.95
		case sg.strong >= 2 || sg.reasonClass != "":
			f.Weight = 0.9
		}
		f.Summary = fmt.Sprintf("%s: WAL archiving fails since %s%s, so pg_wal keeps every segment", sg.subject, hm(sg.onset), rotatedIf(f.fact("destination"), " ("+f.fact("destination")+" refuses the upload)"))
		out = append(out, f)
	}
	return out
}

// claimOf names the volume claim of a database's pods in the kubelet's
// volume series ("data-orders-pg-0").
func claimOf(sets []MetricSet, subject, ns string) string {
	for _, ms := range sets {
		for _, s := range ms.Series {
			c := s.Labels["persistentvolumeclaim"]
			if c != "" && strings.Contains(c, subject) && (ns == "" || s.Labels["namespace"] == ns) {
				return c
			}
		}
	}
	return ""
}

// pgTime reads a timestamp as psql prints it.
func pgTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range pgTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func describeArchiveFailing(h *Hypothesis, sc Scope) string {
	db := h.Subject
	d := fmt.Sprintf("WAL archiving on %s fails", db)
	if !h.Onset.IsZero() {
		d += " since " + ts(h.Onset)
	}
	if a := h.fact("archiver"); a != "" {
		d += fmt.Sprintf(": its archive command (%s) cannot copy the segments", a)
	} else {
		d += ": its archive_command cannot copy the segments"
	}
	d += h.clause(" to ", "destination")
	why := map[string]string{"denied": "which refuses the upload (access denied", "credentials": "which rejects the archiver's credentials (",
		"missing": "which does not exist (", "unreachable": "which it cannot reach (", "full": "which is full ("}[h.fact("reason_class")]
	if why != "" {
		if s := h.fact("status"); s != "" {
			if !strings.HasSuffix(why, "(") {
				why += ", "
			}
			why += "HTTP " + s
		}
		why = strings.TrimSuffix(strings.TrimSuffix(why, "("), " ")
		if strings.Contains(why, "(") {
			why += ")"
		}
		d += ", " + why
	}
	if l := h.fact("reason_line"); l != "" {
		d += ": " + quote(ReadableLine(l), 200)
	} else if l := h.fact("line"); l != "" {
		d += ": " + quote(ReadableLine(l), 200)
	}
	d += ". PostgreSQL keeps every WAL segment until it is archived, so pg_wal grows"
	d += h.wrapped(" (", "wal_size", " now)")
	if v := h.fact("volume"); v != "" {
		d += " and fills the volume " + v
	} else {
		d += " and fills the database's volume"
	}
	return d
}
