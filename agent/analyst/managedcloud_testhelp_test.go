package analyst

import (
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// cwSeries is a CloudWatch series as the gatherer reads it: the values
// from the window's start, one a minute, labelled with its dimensions.
func cwSeries(name string, dims map[string]string, vals ...float64) MetricSet {
	s := evidence.Series{Labels: evidence.Labels{"__name__": name[len(name)-len(lastSegment(name)):]}}
	for k, v := range dims {
		s.Labels[k] = v
	}
	for i, v := range vals {
		s.Points = append(s.Points, evidence.Point{T: win.Start.Add(time.Duration(i) * time.Minute), V: v})
	}
	return MetricSet{Name: name, Origin: SrcCloudWatch, Series: []evidence.Series{s}}
}

func lastSegment(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[i+1:]
		}
	}
	return name
}
