package bundle

import (
	"bytes"
	"time"
)

// otherLineTime reads the two timestamp forms of web servers' and Go's
// logs that do not start with an RFC 3339 time: "2006/01/02 15:04:05"
// leading the line (nginx's error log, Go's standard log package; local
// time taken as UTC) and the Common Log Format's "[02/Jan/2006:15:04:05
// -0700]" after the client address (nginx and Apache access logs).
func otherLineTime(line []byte) (time.Time, bool) {
	if len(line) >= 19 && line[4] == '/' && line[7] == '/' && line[10] == ' ' && line[13] == ':' {
		if t, err := time.Parse("2006/01/02 15:04:05", string(line[:19])); err == nil {
			return t.UTC(), true
		}
		return time.Time{}, false
	}
	head := line[:min(len(line), 120)]
	i := bytes.IndexByte(head, '[')
	if i < 0 || len(line) < i+27 || line[i+3] != '/' || line[i+7] != '/' || line[i+12] != ':' || line[i+27] != ']' {
		return time.Time{}, false
	}
	t, err := time.Parse("02/Jan/2006:15:04:05 -0700", string(line[i+1:i+27]))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}
