package kubetext

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// This file reads kubectl get -o custom-columns=HEADER:.json.path,... and
// -o custom-columns-file=FILE tables: each row is an object of the kind
// asked, with the fields its columns' JSONPaths name set from the cells
// (typed by the kind's Go type), so that a custom column of the node, the
// image, the image ID, the restart count or a container's last exit code
// reaches the same objects a get table or a describe page gives.

// customColumn is one column of a custom-columns table: its header and
// the JSONPath of the field it prints ("" when the command does not say:
// custom-columns-file).
type customColumn struct {
	header string
	path   []pathSeg
}

// pathSeg is one step of a JSONPath: a field, then an index (-1: none;
// -2: [*], every element).
type pathSeg struct {
	field string
	index int
}

// customColumnsSpec reads the column list of -o custom-columns=...
// (HEADER:PATH pairs, comma-separated; a PATH may be written {.a.b}).
func customColumnsSpec(spec string) []customColumn {
	var out []customColumn
	for _, part := range splitColumns(spec) {
		h, p, ok := strings.Cut(part, ":")
		if !ok || strings.TrimSpace(h) == "" {
			return nil
		}
		out = append(out, customColumn{header: strings.TrimSpace(h), path: parseJSONPath(p)})
	}
	return out
}

// splitColumns splits on the commas outside brackets and braces.
func splitColumns(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

var jsonPathSegRE = regexp.MustCompile(`^([A-Za-z0-9_-]+)(?:\[(\*|\d+)\])?$`)

// parseJSONPath reads .a.b[0].c, {.a.b[*].c} and a.b; nil when the path
// uses more than fields and indexes (filters, escaped dots, ranges).
func parseJSONPath(p string) []pathSeg {
	p = strings.TrimSpace(p)
	p = strings.TrimSuffix(strings.TrimPrefix(p, "{"), "}")
	p = strings.TrimPrefix(p, ".")
	if p == "" || strings.ContainsAny(p, `\?@'" `) {
		return nil
	}
	var out []pathSeg
	for _, s := range strings.Split(p, ".") {
		m := jsonPathSegRE.FindStringSubmatch(s)
		if m == nil {
			return nil
		}
		seg := pathSeg{field: m[1], index: -1}
		switch m[2] {
		case "":
		case "*":
			seg.index = -2
		default:
			seg.index, _ = strconv.Atoi(m[2])
			if seg.index > 64 {
				return nil
			}
		}
		out = append(out, seg)
	}
	return out
}

// guessedPaths are the fields of the headers people give custom columns,
// for a custom-columns-file whose content the transcript does not show.
var guessedPaths = map[string]string{
	"NAME": ".metadata.name", "NAMESPACE": ".metadata.namespace", "NODE": ".spec.nodeName", "NODENAME": ".spec.nodeName",
	"PHASE": ".status.phase", "STATUS": ".status.phase", "IP": ".status.podIP", "PODIP": ".status.podIP",
	"HOSTIP": ".status.hostIP", "STARTED": ".status.startTime", "START": ".status.startTime", "STARTTIME": ".status.startTime",
	"CREATED": ".metadata.creationTimestamp", "IMAGE": ".spec.containers[*].image", "IMAGES": ".spec.containers[*].image",
	"IMAGEID": ".status.containerStatuses[*].imageID", "RESTARTS": ".status.containerStatuses[*].restartCount",
	"SERVICEACCOUNT": ".spec.serviceAccountName", "SA": ".spec.serviceAccountName", "QOS": ".status.qosClass",
}

// customColumnsTable reads the output of get -o custom-columns=... or
// custom-columns-file=...: with its header when kubectl printed it (the
// header's columns matched to the spec's in order), else with the spec's
// columns when a pipe filtered the header out.
func (p *parser) customColumnsTable(c *command, out []string, first int) bool {
	ts := c.targets()
	if len(ts) == 0 || ts[0].kind == "" {
		return false
	}
	kind := ts[0].kind
	spec := ""
	if v, ok := strings.CutPrefix(c.output, "custom-columns="); ok {
		spec = v
	}
	cols := customColumnsSpec(spec)
	start := 0
	for start < len(out) && strings.TrimSpace(out[start]) == "" {
		start++
	}
	if start >= len(out) {
		return true
	}
	lines := out[start:]
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines = lines[:i]
			break
		}
	}
	hdr := strings.Fields(lines[0])
	headerShown := false
	if len(cols) > 0 {
		headerShown = len(hdr) == len(cols) && strings.EqualFold(hdr[0], cols[0].header)
	} else {
		headerShown = len(hdr) > 0
		for _, h := range hdr {
			headerShown = headerShown && h == strings.ToUpper(h)
		}
		if !headerShown {
			return false
		}
		for _, h := range hdr {
			cols = append(cols, customColumn{header: h, path: parseJSONPath(guessedPaths[strings.ToUpper(strings.ReplaceAll(h, "_", ""))])})
		}
	}
	rows := lines
	if headerShown {
		rows = lines[1:]
		first++
	}
	if len(rows) > MaxObjects {
		rows = rows[:MaxObjects]
		p.skip(first-1, c.text, "too many rows: the rest are dropped")
	}
	for i, row := range rows {
		cells := customCells(row, len(cols))
		if cells == nil {
			p.skip(first+start+i, c.text, "custom-columns row not understood")
			continue
		}
		if kind == "Event" {
			var e corev1.Event
			if customObject(&e, cols, cells) {
				if e.Namespace == "" {
					e.Namespace = c.ns()
				}
				if e.InvolvedObject.Namespace == "" {
					e.InvolvedObject.Namespace = e.Namespace
				}
				if e.LastTimestamp.IsZero() && !e.FirstTimestamp.IsZero() {
					e.LastTimestamp = e.FirstTimestamp
				}
				if e.Reason != "" || e.Message != "" {
					p.addEvent(e)
				}
			}
			continue
		}
		obj := newObject(kind)
		if obj == nil {
			p.skip(first+start+i, c.text, "custom-columns rows of kind "+kind+" are not read")
			return true
		}
		m, ok := obj.(metav1.Object)
		if !ok || !customObject(obj, cols, cells) || m.GetName() == "" {
			continue
		}
		ns := m.GetNamespace()
		if ns == "" && !clusterScoped[kind] {
			ns = c.ns()
			m.SetNamespace(ns)
		}
		completePod(obj)
		p.add(kind, ns, m.GetName(), "get-columns", obj)
	}
	return true
}

// customCells splits a row into n cells: kubectl pads its columns with
// spaces and a cell holds none (but the last may: an event's message).
func customCells(row string, n int) []string {
	f := strings.Fields(row)
	if len(f) < n || n == 0 {
		return nil
	}
	if len(f) > n {
		// the rest belongs to the last column, as printed
		rest := row
		for k := 0; k < n-1; k++ {
			rest = strings.TrimLeft(rest, " \t")
			j := strings.IndexAny(rest, " \t")
			rest = rest[j:]
		}
		f = append(f[:n-1], strings.TrimSpace(rest))
	}
	return f
}

// newObject is an empty typed object of a built-in kind.
func newObject(kind string) runtime.Object {
	av, ok := apiVersions[kind]
	if !ok {
		return nil
	}
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return nil
	}
	obj, err := scheme.Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(kind))
	return obj
}

// customObject sets obj's fields from the cells, each converted to the
// type of the field its column's path names; cells kubectl printed as
// <none> stay unset. It reports whether any field was set.
func customObject(obj any, cols []customColumn, cells []string) bool {
	root := map[string]any{}
	typ := reflect.TypeOf(obj).Elem()
	set := false
	for i, col := range cols {
		if col.path == nil || i >= len(cells) || unset(cells[i]) {
			continue
		}
		vals := []string{cells[i]}
		if hasWildcard(col.path) {
			vals = strings.Split(cells[i], ",")
		}
		for k, v := range vals {
			if setPath(root, typ, col.path, k, v) {
				set = true
			}
		}
	}
	if !set {
		return false
	}
	b, err := json.Marshal(root)
	if err != nil {
		return false
	}
	return json.Unmarshal(b, obj) == nil
}

func hasWildcard(path []pathSeg) bool {
	for _, s := range path {
		if s.index == -2 {
			return true
		}
	}
	return false
}

// setPath sets the value at path in the JSON map m, typed after the Go
// type typ walks to; a [*] step takes element k.
func setPath(m map[string]any, typ reflect.Type, path []pathSeg, k int, value string) bool {
	cur := m
	t := typ
	for i, seg := range path {
		ft, ok := fieldType(t, seg.field)
		if !ok {
			return false
		}
		last := i == len(path)-1
		if seg.index == -1 {
			if ft.Kind() == reflect.Map {
				// a map's key: the rest of the path is the key (a label)
				if i+2 != len(path) || path[i+1].index != -1 {
					return false
				}
				mm, _ := cur[seg.field].(map[string]any)
				if mm == nil {
					mm = map[string]any{}
					cur[seg.field] = mm
				}
				mm[path[i+1].field] = value
				return true
			}
			if last {
				v, ok := typedValue(ft, value)
				if ok {
					cur[seg.field] = v
				}
				return ok
			}
			next, _ := cur[seg.field].(map[string]any)
			if next == nil {
				next = map[string]any{}
				cur[seg.field] = next
			}
			cur, t = next, ft
			continue
		}
		if ft.Kind() != reflect.Slice {
			return false
		}
		idx := seg.index
		if idx == -2 {
			idx = k
		}
		arr, _ := cur[seg.field].([]any)
		for len(arr) <= idx {
			arr = append(arr, map[string]any{})
		}
		cur[seg.field] = arr
		et := ft.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if last {
			v, ok := typedValue(et, value)
			if ok {
				arr[idx] = v
			}
			return ok
		}
		next, ok := arr[idx].(map[string]any)
		if !ok {
			return false
		}
		cur, t = next, et
	}
	return false
}

// fieldType is the type of the field of struct type t whose JSON name is
// name (through embedded and inline structs).
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		n, opts, _ := strings.Cut(tag, ",")
		if n == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			if ft, ok := fieldType(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		if n == name {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			return ft, true
		}
	}
	return nil, false
}

var (
	timeType = reflect.TypeFor[metav1.Time]()
)

// typedValue converts a cell to the JSON value of a field of type t.
func typedValue(t reflect.Type, s string) (any, bool) {
	switch t.Kind() {
	case reflect.String:
		return s, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		return b, err == nil
	case reflect.Struct:
		if t == timeType {
			var tm metav1.Time
			err := tm.UnmarshalQueryParameter(s)
			return s, err == nil && !tm.IsZero()
		}
		// Quantities, IntOrString: their JSON forms take the text.
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && t.Name() == "IntOrString" {
			return n, true
		}
		if t.Name() == "Quantity" || t.Name() == "IntOrString" {
			return s, true
		}
	}
	return nil, false
}

// completePod names a custom-columns pod's container statuses after its
// containers when the columns gave both without the names.
func completePod(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		if st.Name == "" && i < len(pod.Spec.Containers) {
			st.Name = pod.Spec.Containers[i].Name
		}
		if st.Image == "" && i < len(pod.Spec.Containers) {
			st.Image = pod.Spec.Containers[i].Image
		}
	}
}
