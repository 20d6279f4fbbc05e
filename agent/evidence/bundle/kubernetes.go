package bundle

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// kubeDir is the bundle folder of Kubernetes evidence: the tree written by
// `kubectl cluster-info dump --all-namespaces --output-directory=kubernetes`
// and any other `kubectl get -o json|yaml` output (contract 6.1).
const kubeDir = "kubernetes"

// kubernetes returns the bundle's Kubernetes source, or nil when the bundle has none.
func (b *Bundle) kubernetes() evidence.Kubernetes {
	if !exists(b.FS, kubeDir) && len(rootTexts(b.FS)) == 0 && len(logTexts(b.FS)) == 0 && len(clientReportFiles(b.FS)) == 0 {
		return nil
	}
	return b.kube()
}

// kube returns a new reader of the bundle's Kubernetes part.
func (b *Bundle) kube() *kubeBundle {
	return &kubeBundle{fsys: b.FS, ref: b.CapturedAt, files: map[string]*kubeFile{}}
}

// kubeBundle serves the Kubernetes part of a bundle lazily: opening it
// lists the files (no decoding); a file is decoded on the first question
// that needs it and kept. Files named after a kind's resource (pods.json,
// deployments.yaml, as cluster-info dump and capture write them) are
// decoded only for that kind; other files are decoded together on the first
// question of any kind. A malformed file named after a kind fails the calls
// of that kind; another malformed file is skipped (bundle check lists it).
type kubeBundle struct {
	fsys fs.FS
	ref  time.Time // resolves yearless log timestamps

	idxOnce sync.Once
	idx     kubeIndex

	genOnce sync.Once
	gen     map[string][]evidence.KubeObject // generic files' objects by kind

	textOnce sync.Once
	text     *textData

	mu     sync.Mutex
	files  map[string]*kubeFile
	recent []string // decoded files named after a kind, least recently used first
	kept   int64    // their bytes
}

// kubeCacheBytes bounds the source bytes of the files named after a kind
// whose decoded objects are kept (about three times as much memory): past
// it the least recently used are dropped and decoded again when needed, so
// a bundle of any size is investigated in bounded memory.
const kubeCacheBytes = 16 << 20

// kubeIndex is the list of the Kubernetes files of a bundle.
type kubeIndex struct {
	nsDirs  []string            // namespace folders (holding files named after a kind)
	hinted  map[string][]string // "Kind/namespace" (namespace "*": any) → files
	generic []string            // other *.json, *.yaml, *.yml files
	unread  []string            // files named after a kind not read (replication-controllers.json)
	text    []string            // *.txt terminal transcripts (not pod logs)
	podLogs int                 // pod log files (logs.txt, logs-<c>-previous.txt)
	err     error               // the kubernetes/ folder could not be listed
}

type kubeFile struct {
	once    sync.Once
	objs    map[string][]evidence.KubeObject // by kind
	skipped []evidence.KubeItem
	generic []evidence.GenericObject // objects of kinds without a typed reader
	err     error
	size    int64
}

var _ evidence.Kubernetes = (*kubeBundle)(nil)

// dumpOnly are cluster-info dump files of kinds rootcause does not read.
var dumpOnly = map[string]bool{"replication-controllers.json": true}

func isKubeData(name string) bool {
	return strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// isPodLog reports the files of a pod's logs in a cluster-info dump.
func isPodLog(name string) bool {
	return name == "logs.txt" || strings.HasPrefix(name, "logs-") && strings.HasSuffix(name, "-previous.txt")
}

func (k *kubeBundle) index() *kubeIndex {
	k.idxOnce.Do(func() {
		x := &k.idx
		x.hinted = map[string][]string{}
		nsSeen := map[string]bool{}
		if !exists(k.fsys, kubeDir) {
			return // transcripts at the bundle root only
		}
		x.err = fs.WalkDir(k.fsys, kubeDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == kubeDir {
					return err
				}
				return nil // unreadable parts are skipped
			}
			if d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			rel := strings.TrimPrefix(p, kubeDir+"/")
			dir, base := path.Split(rel)
			dir = strings.TrimSuffix(dir, "/")
			switch {
			case strings.HasSuffix(base, ".txt"):
				if isPodLog(base) {
					x.podLogs++
				} else {
					x.text = append(x.text, p)
				}
				return nil
			case !isKubeData(base):
				return nil
			}
			if dumpOnly[base] {
				x.unread = append(x.unread, p)
				if !strings.Contains(dir, "/") && dir != "" {
					nsSeen[dir] = true
				}
				return nil
			}
			res := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".json"), ".yaml"), ".yml")
			ki, ok := evidence.LookupKind(res)
			if !ok || ki.Resource != res {
				x.generic = append(x.generic, p)
				return nil
			}
			ns := "*"
			if ki.Namespaced && dir != "" && !strings.Contains(dir, "/") && validName(dir) {
				ns = dir
				nsSeen[dir] = true
			}
			key := ki.Kind + "/" + ns
			x.hinted[key] = append(x.hinted[key], p)
			return nil
		})
		for ns := range nsSeen {
			x.nsDirs = append(x.nsDirs, ns)
		}
		slices.Sort(x.nsDirs)
	})
	return &k.idx
}

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

// load decodes one file once. hint is the kind its name gives ("" for a
// generic file); folderNS the namespace its folder gives.
func (k *kubeBundle) load(name, hint string) *kubeFile {
	f := k.file(name)
	f.once.Do(func() {
		f.objs = map[string][]evidence.KubeObject{}
		data, err := fs.ReadFile(k.fsys, name)
		if err != nil {
			f.err = &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, File: name, Err: err}
			return
		}
		f.size = int64(len(data))
		folderNS := ""
		if d := path.Dir(strings.TrimPrefix(name, kubeDir+"/")); d != "." && !strings.Contains(d, "/") && validName(d) {
			folderNS = d
		}
		f.err = evidence.DecodeKubeFile(name, data, hint, func(it evidence.KubeItem) {
			if it.Object == nil {
				f.skipped = append(f.skipped, it)
				if g := it.Generic; g != nil {
					if g.Namespace == "" {
						g.Namespace = folderNS
					}
					g.Source = fmt.Sprintf("%s:%d", name, it.Line)
					f.generic = append(f.generic, *g)
				}
				return
			}
			ki, _ := evidence.LookupKind(it.Kind)
			if ki.Namespaced && it.Object.GetNamespace() == "" {
				if folderNS == "" {
					it.Skip = ki.Kind + " without metadata.namespace, outside a namespace folder"
					it.Object = nil
					f.skipped = append(f.skipped, it)
					return
				}
				it.Object.SetNamespace(folderNS)
			}
			if !ki.Namespaced {
				it.Object.SetNamespace("")
			}
			f.objs[ki.Kind] = append(f.objs[ki.Kind], it.Object)
		})
	})
	return f
}

// used records a use of a decoded file named after a kind and drops the
// least recently used ones past kubeCacheBytes (never the one just used).
func (k *kubeBundle) used(name string, f *kubeFile) {
	if f.err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if i := slices.Index(k.recent, name); i >= 0 {
		k.recent = append(slices.Delete(k.recent, i, i+1), name)
		return
	}
	if k.files[name] != f {
		return // already dropped by another call
	}
	k.recent = append(k.recent, name)
	k.kept += f.size
	for k.kept > kubeCacheBytes && len(k.recent) > 1 {
		old := k.recent[0]
		k.recent = k.recent[1:]
		if of := k.files[old]; of != nil {
			k.kept -= of.size
			delete(k.files, old)
		}
	}
}

// generic returns the objects of every file not named after a kind.
func (k *kubeBundle) generic(ctx context.Context) map[string][]evidence.KubeObject {
	k.genOnce.Do(func() {
		k.gen = map[string][]evidence.KubeObject{}
		for _, name := range k.index().generic {
			f := k.load(name, "")
			for kind, objs := range f.objs {
				k.gen[kind] = append(k.gen[kind], objs...)
			}
		}
	})
	return k.gen
}

// Objects lists one kind from the files that may hold it. An object found
// in several files is served once: the copy with the highest
// resourceVersion, else the first in file order.
func (k *kubeBundle) Objects(ctx context.Context, kind, namespace, labelSelector string) ([]evidence.KubeObject, error) {
	ki, ok := evidence.LookupKind(kind)
	if !ok {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "unknown kind %q (kinds read: %s)", kind, strings.Join(evidence.KindNames(), ", "))
	}
	sel, err := labels.Parse(labelSelector)
	if err != nil {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "label selector %q: %v", labelSelector, err)
	}
	if !ki.Namespaced {
		namespace = ""
	}
	if namespace != "" && !validName(namespace) {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "invalid namespace %q", namespace)
	}
	x := k.index()
	if x.err != nil {
		return nil, &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, File: kubeDir, Err: x.err}
	}
	var files []string
	if namespace == "" {
		for _, ns := range append([]string{"*"}, x.nsDirs...) {
			files = append(files, x.hinted[ki.Kind+"/"+ns]...)
		}
	} else {
		files = append(slices.Clone(x.hinted[ki.Kind+"/"+namespace]), x.hinted[ki.Kind+"/*"]...)
	}
	var all []evidence.KubeObject
	for _, name := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f := k.load(name, ki.Kind)
		if f.err != nil {
			return nil, f.err
		}
		k.used(name, f)
		all = append(all, f.objs[ki.Kind]...)
	}
	all = append(all, k.generic(ctx)[ki.Kind]...)
	all = append(all, k.textObjects(ctx, ki.Kind)...)
	out := make([]evidence.KubeObject, 0, len(all))
	seen := map[string]int{}
	for _, o := range all {
		if namespace != "" && o.GetNamespace() != namespace || !sel.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		key := o.GetNamespace() + "/" + o.GetName()
		if i, dup := seen[key]; dup {
			if newer(o, out[i]) {
				out[i] = o
			} else if m, ok := kubetext.Combine(out[i], o); ok {
				// Two transcripts show it (a get row, a describe page):
				// one object, as within one transcript.
				if mo, ok := m.(evidence.KubeObject); ok {
					out[i] = mo
				}
			}
			continue
		}
		seen[key] = len(out)
		out = append(out, o)
	}
	slices.SortStableFunc(out, func(a, b evidence.KubeObject) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// HoldsKind reports whether the bundle holds any evidence of kind: a file
// named after it (an empty list counts: the kind was captured), an object
// of it in another file, or kubectl's NotFound answer about one in a
// transcript (the kind was asked about, as a live API is).
func (k *kubeBundle) HoldsKind(ctx context.Context, kind string) bool {
	ki, ok := evidence.LookupKind(kind)
	if !ok {
		return false
	}
	for key, files := range k.index().hinted {
		if strings.HasPrefix(key, ki.Kind+"/") && len(files) > 0 {
			return true
		}
	}
	if k.textAbsent(ctx, ki.Kind) {
		return true
	}
	objs, err := k.Objects(ctx, ki.Kind, "", "")
	return err == nil && len(objs) > 0
}

// newer reports whether a has a higher numeric resourceVersion than b.
func newer(a, b evidence.KubeObject) bool {
	ra, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	rb, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return errA == nil && errB == nil && ra > rb
}

// Namespaces are the namespace folders of the dump, the Namespace objects
// and the namespaces of every object read from files not named after a kind.
func (k *kubeBundle) Namespaces(ctx context.Context) ([]string, error) {
	x := k.index()
	if x.err != nil {
		return nil, &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, File: kubeDir, Err: x.err}
	}
	set := map[string]bool{}
	for _, ns := range x.nsDirs {
		set[ns] = true
	}
	nss, err := k.Objects(ctx, "Namespace", "", "")
	if err != nil {
		return nil, err
	}
	for _, n := range nss {
		set[n.GetName()] = true
	}
	for _, src := range []map[string][]evidence.KubeObject{k.generic(ctx), k.texts(ctx).objs} {
		for kind, objs := range src {
			if kind == "Event" {
				continue
			}
			for _, o := range objs {
				if o.GetNamespace() != "" {
					set[o.GetNamespace()] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	slices.Sort(out)
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

// Pods lists pods, filtered by a label selector.
func (k *kubeBundle) Pods(ctx context.Context, namespace, labelSelector string) ([]corev1.Pod, error) {
	return evidence.List[corev1.Pod](ctx, k, namespace, labelSelector)
}

// Events lists events normalised to core/v1, in timeline order per namespace.
func (k *kubeBundle) Events(ctx context.Context, namespace string) ([]corev1.Event, error) {
	evs, err := evidence.List[corev1.Event](ctx, k, namespace, "")
	evidence.SortEvents(evs)
	return evs, err
}

// Deployments lists deployments.
func (k *kubeBundle) Deployments(ctx context.Context, namespace string) ([]appsv1.Deployment, error) {
	return evidence.List[appsv1.Deployment](ctx, k, namespace, "")
}

// ReplicaSets lists replica sets.
func (k *kubeBundle) ReplicaSets(ctx context.Context, namespace string) ([]appsv1.ReplicaSet, error) {
	return evidence.List[appsv1.ReplicaSet](ctx, k, namespace, "")
}

// DaemonSets lists daemon sets.
func (k *kubeBundle) DaemonSets(ctx context.Context, namespace string) ([]appsv1.DaemonSet, error) {
	return evidence.List[appsv1.DaemonSet](ctx, k, namespace, "")
}

// Services lists services.
func (k *kubeBundle) Services(ctx context.Context, namespace string) ([]corev1.Service, error) {
	return evidence.List[corev1.Service](ctx, k, namespace, "")
}

// Endpoints serves the Endpoints objects the bundle holds and, for services
// without one, derives them from service selectors and pod readiness
// (cluster-info dump does not write endpoints).
func (k *kubeBundle) Endpoints(ctx context.Context, namespace string) ([]corev1.Endpoints, error) {
	held, err := evidence.List[corev1.Endpoints](ctx, k, namespace, "")
	if err != nil {
		return nil, err
	}
	svcs, err := k.Services(ctx, namespace)
	if err != nil {
		return nil, err
	}
	pods, err := k.Pods(ctx, namespace, "")
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, e := range held {
		have[e.Namespace+"/"+e.Name] = true
	}
	out := held
	for _, e := range evidence.DeriveEndpoints(svcs, pods) {
		if !have[e.Namespace+"/"+e.Name] {
			out = append(out, e)
		}
	}
	evidence.SortByNamespaceName(out, func(e *corev1.Endpoints) *metav1.ObjectMeta { return &e.ObjectMeta })
	return out, nil
}

// Nodes lists nodes.
func (k *kubeBundle) Nodes(ctx context.Context) ([]corev1.Node, error) {
	return evidence.List[corev1.Node](ctx, k, "", "")
}

// PodLogs reads what `kubectl logs` returns: <ns>/<pod>/logs.txt
// (kubectl's per-container sections, the current instance's output: for a
// container waiting in CrashLoopBackOff, its last run) or, for Previous,
// <ns>/<pod>/logs-<container>-previous.txt. A pod without such files is
// served from the `kubectl logs` outputs of terminal transcripts.
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
	objs, err := k.Objects(ctx, "Pod", q.Namespace, "")
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	for _, o := range objs {
		if o.GetName() == q.Pod {
			pod = o.(*corev1.Pod)
		}
	}
	dir := path.Join(kubeDir, q.Namespace, q.Pod)
	hasFiles := k.hasPodLogFiles(q.Namespace, q.Pod)
	if pod == nil && !hasFiles && len(k.textLogs(ctx, q.Namespace, q.Pod, "", false))+len(k.textLogs(ctx, q.Namespace, q.Pod, "", true))+
		len(k.textExecs(ctx, q.Namespace, q.Pod, "", "")) == 0 {
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
		if q.Container != "" && len(containers) > 0 && !slices.Contains(containers, q.Container) {
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
		if found == 0 && !hasFiles {
			found = k.scanTextLogs(ctx, q, firstOr(containers), col)
		}
		if found == 0 {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "no previous terminated container logs for pod %s/%s%s", q.Namespace, q.Pod, containerSuffix(q.Container))
		}
		return col.Result(), nil
	}
	err = k.scanLogFile(ctx, path.Join(dir, "logs.txt"), q.Pod, q.Container, firstOr(containers), col)
	if errors.Is(err, fs.ErrNotExist) && !hasFiles {
		k.scanTextLogs(ctx, q, firstOr(containers), col)
		err = nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// What commands run in the pod with kubectl exec printed follows.
	k.scanTextExecs(ctx, q, firstOr(containers), col)
	return col.Result(), nil
}

// scanTextLogs feeds the transcript logs of q's pod to col and returns how
// many outputs it read.
func (k *kubeBundle) scanTextLogs(ctx context.Context, q evidence.PodLogQuery, defaultContainer string, col *evidence.PodLogCollector) int {
	logs := k.textLogs(ctx, q.Namespace, q.Pod, q.Container, q.Previous)
	for _, l := range logs {
		c := cmpOr(l.Container, cmpOr(q.Container, defaultContainer))
		col.StartStream()
		for _, line := range l.Lines {
			col.Add(q.Pod+"/"+c, line)
		}
	}
	return len(logs)
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

var _ evidence.LoggedPodLister = (*kubeBundle)(nil)

// LoggedPods names the pods whose logs the bundle holds as files
// (kubernetes/<namespace>/<pod>/logs.txt or logs-<c>-previous.txt), of
// namespace (empty: all), whether or not a pod listing shows them, then
// the pods whose logs a transcript's `kubectl logs` printed (Shown), once
// each, their namespace the command's or, when it said none, that of the
// one listed pod of that name.
func (k *kubeBundle) LoggedPods(ctx context.Context, namespace string) ([]evidence.PodRef, error) {
	if namespace != "" && !validName(namespace) {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "invalid namespace %q", namespace)
	}
	out := k.filedPods(ctx, namespace)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return append(out, k.shownPods(ctx, namespace, out)...), nil
}

// shownPods names the pods whose logs a transcript printed, of namespace
// (empty: all), marking those files already name as shown too.
func (k *kubeBundle) shownPods(ctx context.Context, namespace string, filed []evidence.PodRef) []evidence.PodRef {
	logs := k.texts(ctx).logs
	if len(logs) == 0 {
		return nil
	}
	var out []evidence.PodRef
	var listed []evidence.KubeObject
	for _, l := range logs {
		ns := l.Namespace
		if ns == "" {
			// kubectl used its context's namespace: the listed pod's.
			if listed == nil {
				listed, _ = k.Objects(ctx, "Pod", "", "")
			}
			for _, o := range listed {
				if o.GetName() == l.Pod {
					if ns != "" && ns != o.GetNamespace() {
						ns = ""
						break
					}
					ns = o.GetNamespace()
				}
			}
		}
		if ns == "" || !validName(ns) || !validName(l.Pod) || namespace != "" && ns != namespace {
			continue
		}
		ref := evidence.PodRef{Namespace: ns, Name: l.Pod, Shown: true}
		if i := slices.IndexFunc(filed, func(r evidence.PodRef) bool { return r.Namespace == ns && r.Name == l.Pod }); i >= 0 {
			filed[i].Shown = true
			continue
		}
		if !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	return out
}

// filedPods names the pods whose logs the bundle holds as files, of
// namespace (empty: all).
func (k *kubeBundle) filedPods(ctx context.Context, namespace string) []evidence.PodRef {
	if !exists(k.fsys, kubeDir) {
		return nil
	}
	nss, err := fs.ReadDir(k.fsys, kubeDir)
	if err != nil {
		return nil
	}
	var out []evidence.PodRef
	for _, ns := range nss {
		if !ns.IsDir() || namespace != "" && ns.Name() != namespace || !validName(ns.Name()) {
			continue
		}
		pods, err := fs.ReadDir(k.fsys, path.Join(kubeDir, ns.Name()))
		if err != nil {
			continue
		}
		for _, p := range pods {
			if ctx.Err() != nil {
				return nil
			}
			if !p.IsDir() || !validName(p.Name()) {
				continue
			}
			files, err := fs.ReadDir(k.fsys, path.Join(kubeDir, ns.Name(), p.Name()))
			if err == nil && slices.ContainsFunc(files, func(f fs.DirEntry) bool { return f.Type().IsRegular() && isPodLog(f.Name()) }) {
				out = append(out, evidence.PodRef{Namespace: ns.Name(), Name: p.Name()})
			}
		}
	}
	return out
}
