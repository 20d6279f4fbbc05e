package kubetext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rootcause/rootcause/agent/evidence"
)

// decoder decodes the built-in kinds of Kubernetes, YAML or JSON, into
// their typed Go structs.
var decoder = serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()

// structured decodes get -o yaml|json output: one object, a List, or
// several YAML documents.
func (p *parser) structured(c *command, out []string, first int) {
	data := []byte(strings.Join(out, "\n"))
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	n, kept := 0, false
	for n < MaxObjects {
		var raw runtime.RawExtension
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			p.skip(first-1, c.text, "output not decoded: "+err.Error())
			return
		}
		n++
		if len(bytes.TrimSpace(raw.Raw)) == 0 {
			continue
		}
		// A projection of an object (yq '{"limits": .spec.limits}', jq
		// '.status') has no kind to decode it by: it is kept as text,
		// where a reader that knows the command reads its fields.
		if n == 1 && noKind(raw.Raw) {
			p.skip(first-1, c.text, "a projection without a kind: not read into objects (kept as text)")
			p.keepText(c.text, c, out, first)
			return
		}
		if p.decodeObject(c, raw.Raw, first, 0) && !kept {
			// A custom resource (a VirtualService, a ScaledObject, an
			// EnvoyFilter) is read generically, without its spec: its
			// fields (a route's timeout, a scaler's maximum) are kept as
			// the text printed too, where the readers that know them look.
			kept = p.keepUnknown(c, out, first)
		}
	}
}

// decodeObject reads one object (or a List's items) into the result and
// reports whether one of them is of a kind without a Go type (a custom
// resource).
func (p *parser) decodeObject(c *command, raw []byte, first, depth int) (custom bool) {
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(raw); err != nil {
		p.skip(first-1, c.text, "object not decoded: "+err.Error())
		return false
	}
	if u.IsList() && depth == 0 {
		l, err := u.ToList()
		if err != nil {
			p.skip(first-1, c.text, "list not decoded: "+err.Error())
			return false
		}
		itemKind := strings.TrimSuffix(u.GetKind(), "List")
		for i := range l.Items {
			it := &l.Items[i]
			if it.GetKind() == "" {
				it.SetKind(itemKind)
				it.SetAPIVersion(u.GetAPIVersion())
			}
			b, err := it.MarshalJSON()
			if err == nil && p.decodeObject(c, b, first, depth+1) {
				custom = true
			}
		}
		return custom
	}
	obj, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		// A kind without a Go type (a custom resource): read generically,
		// its metadata, references and status conditions.
		if g, ok := evidence.GenericFromMap(u.Object); ok {
			if g.Namespace == "" {
				g.Namespace = c.ns()
			}
			g.Source = fmt.Sprintf("line %d", first)
			p.addGeneric(g)
			return true
		}
		p.skip(first-1, c.text, "object of kind "+u.GetKind()+" not read: "+err.Error())
		return runtime.IsNotRegisteredError(err)
	}
	kind := u.GetKind()
	if kind == "Event" {
		p.structuredEvent(obj)
		return false
	}
	ns := u.GetNamespace()
	if ns == "" && !clusterScoped[kind] {
		ns = c.ns()
		if m, ok := obj.(interface{ SetNamespace(string) }); ok && ns != "" {
			m.SetNamespace(ns)
		}
	}
	p.add(kind, ns, u.GetName(), "", obj)
	return false
}

// noKind reports whether raw is a JSON object without a kind (and not a
// list of items).
func noKind(raw []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, kind := m["kind"]
	_, items := m["items"]
	return !kind && !items
}

// addGeneric keeps an object read generically; a later copy of the same
// object (a second get) replaces the earlier one.
func (p *parser) addGeneric(g evidence.GenericObject) {
	for i, o := range p.res.Generic {
		if o.Kind == g.Kind && o.Namespace == g.Namespace && o.Name == g.Name {
			p.res.Generic[i] = g
			return
		}
	}
	if len(p.res.Generic) >= MaxObjects {
		return
	}
	p.res.Generic = append(p.res.Generic, g)
}
