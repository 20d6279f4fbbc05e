package bundle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/agent/evidence"
)

// kubeDir is the bundle folder written by
// `kubectl cluster-info dump --all-namespaces --output-directory=kubernetes`.
const kubeDir = "kubernetes"

// kubernetes returns the bundle's Kubernetes source, or nil when the bundle has none.
func (b *Bundle) kubernetes() evidence.Kubernetes {
	if !exists(b.FS, kubeDir) {
		return nil
	}
	return &kubeBundle{fsys: b.FS, ref: b.CapturedAt, files: map[string]*kubeFile{}}
}

// kubeBundle serves a cluster-info dump. Each JSON file is parsed once, on
// first use, and kept; a malformed file fails only the calls that need it.
type kubeBundle struct {
	fsys fs.FS
	ref  time.Time // resolves yearless log timestamps

	mu    sync.Mutex
	files map[string]*kubeFile
}

type kubeFile struct {
	once sync.Once
	val  any // []T of the file's kind
	err  error
}

var _ evidence.Kubernetes = (*kubeBundle)(nil)

func (k *kubeBundle) file(name string) *kubeFile {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.files[name]
	if !ok {
		f = &kubeFile{}
		k.files[name] = f
	}
	return f
}

// listFile returns the items of one list file, decoded by conv. A missing
// file is an empty list (an older kubectl may not write every kind).
func listFile[T any](k *kubeBundle, name string, conv func([]byte) (T, error)) ([]T, error) {
	f := k.file(name)
	f.once.Do(func() {
		data, err := fs.ReadFile(k.fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			f.val = []T(nil)
			return
		}
		if err != nil {
			f.err = &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, File: name, Err: err}
			return
		}
		f.val, f.err = decodeList(name, data, conv)
	})
	if f.err != nil {
		return nil, f.err
	}
	return slices.Clone(f.val.([]T)), nil
}

// decodeList reads a kubectl List (typed, like PodList, or "kind: List")
// and converts its items, reporting the line of any bad data.
func decodeList[T any](name string, data []byte, conv func([]byte) (T, error)) ([]T, error) {
	bad := func(off int64, err error) error {
		return &evidence.Error{Source: "kubernetes", Code: evidence.CodeMalformed, File: name, Line: lineAt(data, off), Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		// The streaming decoder's offsets are not always absolute; a full
		// parse gives the absolute position of the first syntax error.
		var whole any
		var se *json.SyntaxError
		if errors.As(json.Unmarshal(data, &whole), &se) {
			return bad(se.Offset, se)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return bad(int64(len(data)), fmt.Errorf("unexpected end of JSON"))
		}
		return bad(dec.InputOffset(), err)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bad(0, fmt.Errorf("want a Kubernetes List object, found %v", tok))
	}
	var out []T
	sawItems := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		key, _ := tok.(string)
		if key != "items" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, syntax(err)
			}
			continue
		}
		sawItems = true
		tok, err = dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		if tok == nil { // "items": null
			continue
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, bad(dec.InputOffset(), fmt.Errorf("items: want an array"))
		}
		for dec.More() {
			start := dec.InputOffset()
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, syntax(err)
			}
			// InputOffset was before any separator; skip it to the item.
			start += int64(len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n,")))
			v, err := conv(raw)
			if err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) {
					return nil, bad(start+te.Offset, err)
				}
				return nil, bad(start, err)
			}
			out = append(out, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, syntax(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if !sawItems {
		return nil, bad(0, fmt.Errorf("not a Kubernetes List: no items"))
	}
	return out, nil
}

func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

func jsonConv[T any](raw []byte) (T, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// eventConv decodes a core/v1 or an events.k8s.io/v1 event into core/v1.
func eventConv(raw []byte) (corev1.Event, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return corev1.Event{}, err
	}
	if strings.HasPrefix(tm.APIVersion, "events.k8s.io/") {
		var ev eventsv1.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return corev1.Event{}, err
		}
		return evidence.EventFromV1(&ev), nil
	}
	var e corev1.Event
	if err := json.Unmarshal(raw, &e); err != nil {
		return corev1.Event{}, err
	}
	evidence.NormalizeEvent(&e)
	return e, nil
}

// Namespaces are the folders of the dump.
func (k *kubeBundle) Namespaces(ctx context.Context) ([]string, error) {
	ents, err := fs.ReadDir(k.fsys, kubeDir)
	if err != nil {
		return nil, &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, File: kubeDir, Err: err}
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// perNamespace gathers one kind over namespace ns (empty: all).
func perNamespace[T any](ctx context.Context, k *kubeBundle, ns, file string, conv func([]byte) (T, error)) ([]T, error) {
	nss := []string{ns}
	if ns == "" {
		var err error
		if nss, err = k.Namespaces(ctx); err != nil {
			return nil, err
		}
	} else if !validName(ns) {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "invalid namespace %q", ns)
	}
	var out []T
	for _, n := range nss {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		items, err := listFile(k, path.Join(kubeDir, n, file), conv)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// validName accepts DNS-1123 labels and subdomains (no path tricks).
func validName(s string) bool {
	if s == "" || len(s) > 253 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

func podMeta(p *corev1.Pod) *metav1.ObjectMeta { return &p.ObjectMeta }

// Pods lists pods, filtered by a label selector.
func (k *kubeBundle) Pods(ctx context.Context, namespace, labelSelector string) ([]corev1.Pod, error) {
	sel, err := labels.Parse(labelSelector)
	if err != nil {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "label selector %q: %v", labelSelector, err)
	}
	pods, err := perNamespace(ctx, k, namespace, "pods.json", jsonConv[corev1.Pod])
	if err != nil {
		return nil, err
	}
	out := pods[:0:0]
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	evidence.SortByNamespaceName(out, podMeta)
	return out, nil
}

// Events lists events normalised to core/v1, in timeline order per namespace.
func (k *kubeBundle) Events(ctx context.Context, namespace string) ([]corev1.Event, error) {
	evs, err := perNamespace(ctx, k, namespace, "events.json", eventConv)
	if err != nil {
		return nil, err
	}
	evidence.SortEvents(evs)
	return evs, nil
}

// Deployments lists deployments.
func (k *kubeBundle) Deployments(ctx context.Context, namespace string) ([]appsv1.Deployment, error) {
	out, err := perNamespace(ctx, k, namespace, "deployments.json", jsonConv[appsv1.Deployment])
	evidence.SortByNamespaceName(out, func(d *appsv1.Deployment) *metav1.ObjectMeta { return &d.ObjectMeta })
	return out, err
}

// ReplicaSets lists replica sets.
func (k *kubeBundle) ReplicaSets(ctx context.Context, namespace string) ([]appsv1.ReplicaSet, error) {
	out, err := perNamespace(ctx, k, namespace, "replicasets.json", jsonConv[appsv1.ReplicaSet])
	evidence.SortByNamespaceName(out, func(d *appsv1.ReplicaSet) *metav1.ObjectMeta { return &d.ObjectMeta })
	return out, err
}

// DaemonSets lists daemon sets.
func (k *kubeBundle) DaemonSets(ctx context.Context, namespace string) ([]appsv1.DaemonSet, error) {
	out, err := perNamespace(ctx, k, namespace, "daemonsets.json", jsonConv[appsv1.DaemonSet])
	evidence.SortByNamespaceName(out, func(d *appsv1.DaemonSet) *metav1.ObjectMeta { return &d.ObjectMeta })
	return out, err
}

// Services lists services.
func (k *kubeBundle) Services(ctx context.Context, namespace string) ([]corev1.Service, error) {
	out, err := perNamespace(ctx, k, namespace, "services.json", jsonConv[corev1.Service])
	evidence.SortByNamespaceName(out, func(d *corev1.Service) *metav1.ObjectMeta { return &d.ObjectMeta })
	return out, err
}

// Endpoints derives endpoints from service selectors and pod readiness.
func (k *kubeBundle) Endpoints(ctx context.Context, namespace string) ([]corev1.Endpoints, error) {
	svcs, err := k.Services(ctx, namespace)
	if err != nil {
		return nil, err
	}
	pods, err := k.Pods(ctx, namespace, "")
	if err != nil {
		return nil, err
	}
	return evidence.DeriveEndpoints(svcs, pods), nil
}

// Nodes lists nodes.
func (k *kubeBundle) Nodes(ctx context.Context) ([]corev1.Node, error) {
	out, err := listFile(k, path.Join(kubeDir, "nodes.json"), jsonConv[corev1.Node])
	evidence.SortByNamespaceName(out, func(d *corev1.Node) *metav1.ObjectMeta { return &d.ObjectMeta })
	return out, err
}

// PodLogs reads <ns>/<pod>/logs.txt (kubectl's per-container sections) or,
// for Previous, <ns>/<pod>/logs-<container>-previous.txt.
func (k *kubeBundle) PodLogs(ctx context.Context, q evidence.PodLogQuery) (*evidence.LogResult, error) {
	if q.Namespace == "" || q.Pod == "" {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "pod logs need a namespace and a pod")
	}
	if !validName(q.Namespace) || !validName(q.Pod) {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "invalid namespace or pod name %q/%q", q.Namespace, q.Pod)
	}
	col, err := evidence.NewPodLogCollector("kubernetes", q, k.ref)
	if err != nil {
		return nil, err
	}
	pods, err := k.Pods(ctx, q.Namespace, "")
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	for i := range pods {
		if pods[i].Name == q.Pod {
			pod = &pods[i]
		}
	}
	dir := path.Join(kubeDir, q.Namespace, q.Pod)
	if pod == nil && !exists(k.fsys, dir) {
		return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "pod %s/%s not found", q.Namespace, q.Pod)
	}
	var containers []string
	if pod != nil {
		for _, c := range pod.Spec.InitContainers {
			containers = append(containers, c.Name)
		}
		for _, c := range pod.Spec.Containers {
			containers = append(containers, c.Name)
		}
		if q.Container != "" && !slices.Contains(containers, q.Container) {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "container %q not found in pod %s/%s (containers: %s)",
				q.Container, q.Namespace, q.Pod, strings.Join(containers, ", "))
		}
	}
	if q.Previous {
		want := containers
		if q.Container != "" {
			want = []string{q.Container}
		}
		found := 0
		for _, c := range want {
			name := path.Join(dir, "logs-"+c+"-previous.txt")
			err := k.scanLogFile(ctx, name, q.Pod, c, "", col)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			found++
		}
		if found == 0 {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "no previous terminated container logs for pod %s/%s%s", q.Namespace, q.Pod, containerSuffix(q.Container))
		}
		return col.Result(), nil
	}
	err = k.scanLogFile(ctx, path.Join(dir, "logs.txt"), q.Pod, q.Container, firstOr(containers), col)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return col.Result(), nil
}

func containerSuffix(c string) string {
	if c == "" {
		return ""
	}
	return " container " + c
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

const (
	logStart = "==== START logs for container "
	logEnd   = "==== END logs for container "
)

// scanLogFile streams name into col. With sections (logs.txt), only the
// sections of container (all when empty) are read; a file without section
// markers is the log of container, or of defaultContainer.
func (k *kubeBundle) scanLogFile(ctx context.Context, name, pod, container, defaultContainer string, col *evidence.PodLogCollector) error {
	f, err := k.fsys.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	cur := ""   // container of the current section
	in := false // inside a section
	sections := false
	plain := container
	if plain == "" {
		plain = defaultContainer
	}
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, rerr := readPodLogLine(br, &long)
		if len(line) > 0 || rerr == nil {
			s := string(line)
			switch {
			case strings.HasPrefix(s, logStart):
				sections, in = true, true
				cur, _, _ = strings.Cut(strings.TrimPrefix(s, logStart), " ")
				col.StartStream()
			case strings.HasPrefix(s, logEnd):
				in = false
			case in:
				if container == "" || cur == container {
					col.Add(pod+"/"+cur, s)
				}
			case !sections:
				col.Add(pod+"/"+plain, s)
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return &evidence.Error{Source: "kubernetes", Code: evidence.CodeMalformed, File: name, Err: rerr}
		}
	}
}

// readPodLogLine returns the next line without its ending, cut to
// evidence.MaxPodLogLine bytes; the slice is valid until the next call.
func readPodLogLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		*long = append((*long)[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			if room := evidence.MaxPodLogLine - len(*long); room > 0 {
				*long = append(*long, line[:min(room, len(line))]...)
			}
		}
		line = *long
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > evidence.MaxPodLogLine {
		line = line[:evidence.MaxPodLogLine]
	}
	return line, err
}
