package rediscli

import (
	"encoding/json"
	"strings"
	"time"
)

// ParseDeliveredEntry reads one slow-log entry as a managed service
// delivers it to a log stream: ElastiCache (and MemoryDB) write each entry
// of a node's slow log to CloudWatch Logs or Kinesis Data Firehose as a
// JSON object, {"CacheClusterId": "…-0001-001", "CacheNodeId": "0001",
// "Id": 88210, "Timestamp": 1795637703, "Duration (us)": 2410332,
// "Command": "KEYS sess:* ", "ClientAddress": "10.12.41.207:51330",
// "ClientName": "session-sweeper"}. node is the cluster node that logged
// it. A line that is not such an object is not an entry.
func ParseDeliveredEntry(line string) (e SlowEntry, node string, ok bool) {
	i := strings.IndexByte(line, '{')
	if i < 0 || !strings.Contains(line, "Duration") {
		return e, "", false
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(line[i:]), &raw); err != nil {
		return e, "", false
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := raw[k].(string); ok && v != "" {
				return v
			}
		}
		return ""
	}
	num := func(keys ...string) (float64, bool) {
		for _, k := range keys {
			if v, ok := raw[k].(float64); ok {
				return v, true
			}
		}
		return 0, false
	}
	us, okD := num("Duration (us)", "DurationMicros", "duration_us")
	cmd := str("Command", "command")
	if !okD || cmd == "" {
		return e, "", false
	}
	e.Duration = time.Duration(us) * time.Microsecond
	// The command as the service prints it: its arguments separated by
	// spaces, long ones cut ("DEL sess:7f1c... (101 more arguments)").
	if j := strings.Index(cmd, " ("); j > 0 && strings.HasSuffix(strings.TrimSpace(cmd), "arguments)") {
		cmd = cmd[:j]
	}
	e.Args = strings.Fields(cmd)
	if ts, ok := num("Timestamp", "timestamp"); ok {
		e.At = time.Unix(int64(ts), 0).UTC()
	}
	if id, ok := num("Id", "id"); ok {
		e.ID = int64(id)
	}
	e.Addr = str("ClientAddress", "client_address")
	e.Client = str("ClientName", "client_name")
	node = str("CacheClusterId", "ClusterName", "cluster")
	if n := str("CacheNodeId"); n != "" && node == "" {
		node = n
	}
	return e, node, true
}
