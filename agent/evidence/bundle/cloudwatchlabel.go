package bundle

import (
	"regexp"
	"strings"
)

// A GetMetricData response as the aws CLI prints it names each result only
// by its Id and Label: the namespace, metric and dimensions were in the
// query, not in the answer. A capture's queries usually label each result
// with the resource and the metric ("orders-pg-prod BurstBalance",
// "vol-0a7e BurstBalance", "${PROP('Dim.CacheClusterId')}
// ${PROP('MetricName')}"), or leave the default label, the metric's name (read only when one
// namespace has that metric).
// labelMetrics reads that label back into the metric it names: the
// CamelCase word the metric is, the resource the other word is, the
// namespace the metric's name belongs to (a name found in several, such as
// BurstBalance or CPUUtilization, takes the namespace the resource's other
// metrics or its id prefix say) and the dimension that names a resource of
// that namespace. Results that carry their metric, or whose label names
// none, are left as they are.
func labelMetrics(rs []metricResult) {
	type named struct{ res, metric string }
	found := make([]named, len(rs))
	nsOf := map[string]string{} // resource → namespace its unambiguous metrics say
	for i := range rs {
		r := &rs[i]
		if r.MetricName != "" {
			continue
		}
		res, metric := splitMetricLabel(r.Label)
		if metric == "" {
			continue
		}
		found[i] = named{res, metric}
		if ns := metricNamespaces[metric]; len(ns) == 1 && res != "" && nsOf[res] == "" {
			nsOf[res] = ns[0]
		}
	}
	for i := range rs {
		n := found[i]
		// A default label (the metric's name alone) of a metric several
		// namespaces have names no system: which one it measured is
		// unknown, so it stays unread.
		if n.metric == "" || n.res == "" && len(metricNamespaces[n.metric]) != 1 {
			continue
		}
		r := &rs[i]
		r.MetricName = n.metric
		ns := nsOf[n.res]
		if cands := metricNamespaces[n.metric]; len(cands) == 1 {
			ns = cands[0]
		} else if ns == "" || (len(cands) > 0 && !contains(cands, ns)) {
			ns = namespaceByID(n.res)
			if ns == "" && len(cands) > 0 {
				ns = cands[0]
			}
		}
		r.Namespace = ns
		if n.res == "" {
			continue
		}
		key := dimensionOf[ns]
		if key == "" {
			key = "Resource"
		}
		if r.dims == nil {
			r.dims = map[string]string{}
		}
		if table, index, ok := strings.Cut(n.res, " "); ok && ns == "AWS/DynamoDB" {
			r.dims[key] = table
			r.dims["GlobalSecondaryIndexName"] = index
			continue
		}
		r.dims[key] = n.res
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// metricWordRE is a CloudWatch metric name: a CamelCase word, with an
// optional trailing % (EBSIOBalance%).
var metricWordRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*%?$|^[A-Z]{2,}[A-Za-z0-9]*%$`)

// splitMetricLabel reads a result's label as a resource and a metric: the
// word that is a known metric name (else the last CamelCase word) is the
// metric, the other words the resource.
func splitMetricLabel(label string) (res, metric string) {
	var words []string
	for _, w := range strings.Fields(label) {
		// The statistic and period a query appends ("(Sum/60)").
		if !strings.HasPrefix(w, "(") {
			words = append(words, w)
		}
	}
	at := -1
	for i, w := range words {
		if _, ok := metricNamespaces[w]; ok {
			at = i
			break
		}
	}
	if at < 0 && len(words) > 0 && metricWordRE.MatchString(words[len(words)-1]) {
		at = len(words) - 1
	}
	if at < 0 {
		return "", ""
	}
	rest := append(append([]string{}, words[:at]...), words[at+1:]...)
	if len(rest) == 2 && at == 2 && slicesEqual(metricNamespaces[words[at]], []string{"AWS/DynamoDB"}) {
		// A DynamoDB table and one of its global secondary indexes.
		return rest[0] + " " + rest[1], words[at]
	}
	if len(rest) > 1 {
		// More than one other word is a sentence, not a resource.
		return "", words[at]
	}
	return strings.Join(rest, ""), words[at]
}

// namespaceByID is the namespace a resource id's form says (vol-… is an
// EBS volume, i-… an EC2 instance).
func namespaceByID(res string) string {
	switch {
	case strings.HasPrefix(res, "vol-"):
		return "AWS/EBS"
	case strings.HasPrefix(res, "i-"):
		return "AWS/EC2"
	case strings.HasPrefix(res, "nat-"):
		return "AWS/NATGateway"
	}
	return ""
}

// dimensionOf is the dimension naming a resource in a namespace.
var dimensionOf = map[string]string{
	"AWS/RDS":         "DBInstanceIdentifier",
	"AWS/ElastiCache": "CacheClusterId",
	"AWS/EBS":         "VolumeId",
	"AWS/EC2":         "InstanceId",
	"AWS/Lambda":      "FunctionName",
	"AWS/SQS":         "QueueName",
	"AWS/DynamoDB":    "TableName",
	"AWS/NATGateway":  "NatGatewayId",
}

// metricNamespaces are the namespaces a metric name is published in (the
// first is the likelier when nothing else says).
var metricNamespaces = map[string][]string{
	// RDS
	"ReadIOPS": {"AWS/RDS"}, "WriteIOPS": {"AWS/RDS"}, "ReadLatency": {"AWS/RDS"}, "WriteLatency": {"AWS/RDS"},
	"ReadThroughput": {"AWS/RDS"}, "WriteThroughput": {"AWS/RDS"}, "DiskQueueDepth": {"AWS/RDS"},
	"DatabaseConnections": {"AWS/RDS"}, "FreeableMemory": {"AWS/RDS"}, "FreeStorageSpace": {"AWS/RDS"},
	"SwapUsage": {"AWS/RDS"}, "ReplicaLag": {"AWS/RDS"}, "TransactionLogsDiskUsage": {"AWS/RDS"},
	"OldestReplicationSlotLag": {"AWS/RDS"}, "ReplicationSlotDiskUsage": {"AWS/RDS"}, "MaximumUsedTransactionIDs": {"AWS/RDS"},
	"DBLoad": {"AWS/RDS"}, "DBLoadCPU": {"AWS/RDS"}, "DBLoadNonCPU": {"AWS/RDS"},
	// ElastiCache
	"EngineCPUUtilization": {"AWS/ElastiCache"}, "CurrConnections": {"AWS/ElastiCache"}, "NewConnections": {"AWS/ElastiCache"},
	"CurrItems": {"AWS/ElastiCache"}, "Evictions": {"AWS/ElastiCache"}, "CacheHits": {"AWS/ElastiCache"}, "CacheMisses": {"AWS/ElastiCache"},
	"DatabaseMemoryUsagePercentage": {"AWS/ElastiCache"}, "BytesUsedForCache": {"AWS/ElastiCache"}, "ReplicationLag": {"AWS/ElastiCache"},
	"KeyBasedCmdsLatency": {"AWS/ElastiCache"}, "GetTypeCmdsLatency": {"AWS/ElastiCache"}, "SetTypeCmdsLatency": {"AWS/ElastiCache"},
	"StringBasedCmdsLatency": {"AWS/ElastiCache"}, "KeyBasedCmds": {"AWS/ElastiCache"},
	// EBS
	"VolumeQueueLength": {"AWS/EBS"}, "VolumeReadOps": {"AWS/EBS"}, "VolumeWriteOps": {"AWS/EBS"},
	"VolumeReadBytes": {"AWS/EBS"}, "VolumeWriteBytes": {"AWS/EBS"}, "VolumeTotalReadTime": {"AWS/EBS"},
	"VolumeTotalWriteTime": {"AWS/EBS"}, "VolumeIdleTime": {"AWS/EBS"}, "VolumeThroughputPercentage": {"AWS/EBS"},
	"VolumeConsumedReadWriteOps": {"AWS/EBS"},
	// EC2
	"EBSIOBalance%": {"AWS/EC2"}, "EBSByteBalance%": {"AWS/EC2"}, "StatusCheckFailed": {"AWS/EC2"},
	// Lambda, SQS
	// DynamoDB's, per table (and per global secondary index, its
	// second word: "orders orders-by-status-index WriteThrottleEvents").
	"WriteThrottleEvents": {"AWS/DynamoDB"}, "ReadThrottleEvents": {"AWS/DynamoDB"},
	"ConsumedWriteCapacityUnits": {"AWS/DynamoDB"}, "ConsumedReadCapacityUnits": {"AWS/DynamoDB"},
	"ProvisionedWriteCapacityUnits": {"AWS/DynamoDB"}, "ProvisionedReadCapacityUnits": {"AWS/DynamoDB"},
	"ConcurrentExecutions": {"AWS/Lambda"}, "Invocations": {"AWS/Lambda"}, "Throttles": {"AWS/Lambda"},
	"ApproximateNumberOfMessagesVisible": {"AWS/SQS"}, "ApproximateAgeOfOldestMessage": {"AWS/SQS"},
	// NAT gateway
	"ErrorPortAllocation": {"AWS/NATGateway"}, "ActiveConnectionCount": {"AWS/NATGateway"}, "ConnectionAttemptCount": {"AWS/NATGateway"},
	"ConnectionEstablishedCount": {"AWS/NATGateway"}, "PacketsDropCount": {"AWS/NATGateway"}, "IdleTimeoutCount": {"AWS/NATGateway"},
	"BytesOutToDestination": {"AWS/NATGateway"}, "BytesInFromDestination": {"AWS/NATGateway"},
	"PacketsOutToDestination": {"AWS/NATGateway"}, "PacketsInFromDestination": {"AWS/NATGateway"},
	// In several namespaces: the resource decides.
	"BurstBalance":     {"AWS/EBS", "AWS/RDS"},
	"CPUUtilization":   {"AWS/EC2", "AWS/RDS", "AWS/ElastiCache"},
	"CPUCreditBalance": {"AWS/EC2", "AWS/RDS"},
	"NetworkBytesIn":   {"AWS/ElastiCache"},
	"NetworkBytesOut":  {"AWS/ElastiCache"},
	"Errors":           {"AWS/Lambda"},
	"Duration":         {"AWS/Lambda"},
}

// slicesEqual reports whether two string lists are the same.
func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
