package kubetext

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// dataSection reads the "Data" section of a config map or secret page:
//
//	Data
//	====
//	key:
//	----
//	value lines...
//
// (config maps), or "key:  16 bytes" lines (secrets: sizes only). It
// returns the keys in order and, for config maps, their values.
func dataSection(lines []string) (keys []string, values map[string]string) {
	start := -1
	for i := 0; i+1 < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "Data" && strings.HasPrefix(lines[i+1], "====") {
			start = i + 2
			break
		}
	}
	if start < 0 {
		return nil, nil
	}
	values = map[string]string{}
	end := len(lines)
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if (strings.TrimSpace(l) == "BinaryData" && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "====")) ||
			(strings.HasPrefix(l, "Events:") && !(i+1 < len(lines) && strings.HasPrefix(lines[i+1], "----"))) {
			end = i
			break
		}
	}
	cur := ""
	var val []string
	flush := func() {
		if cur != "" {
			values[cur] = strings.TrimRight(strings.Join(val, "\n"), "\n")
		}
	}
	for i := start; i < end; i++ {
		l := lines[i]
		if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") && i+1 < end && strings.HasPrefix(lines[i+1], "----") {
			flush()
			cur, val = strings.TrimSuffix(l, ":"), nil
			keys = append(keys, cur)
			i++
			continue
		}
		if cur == "" {
			// secrets: "key:  16 bytes"
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(strings.TrimSpace(v), "bytes") && k != "" {
				keys = append(keys, strings.TrimSpace(k))
			}
			continue
		}
		val = append(val, l)
	}
	flush()
	return keys, values
}

func describeConfigMap(p *parser, root *dnode, meta metav1.ObjectMeta, page []string) (runtime.Object, bool) {
	cm := &corev1.ConfigMap{TypeMeta: typeMeta("ConfigMap"), ObjectMeta: meta}
	keys, values := dataSection(page)
	for _, k := range keys {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[k] = values[k]
	}
	return cm, true
}

// describeSecret keeps the key names only: kubectl prints their sizes,
// never their values.
func describeSecret(p *parser, root *dnode, meta metav1.ObjectMeta, page []string) (runtime.Object, bool) {
	s := &corev1.Secret{TypeMeta: typeMeta("Secret"), ObjectMeta: meta, Type: corev1.SecretType(root.get("Type"))}
	keys, _ := dataSection(page)
	for _, k := range keys {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = nil
	}
	return s, true
}
