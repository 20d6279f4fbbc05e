package evidence

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodeBoth reads data with the skipper on and with the decoder alone and
// reports any difference in the items (every field, the objects compared
// deeply) or the error.
func decodeBoth(t *testing.T, name string, data []byte, hint string) {
	t.Helper()
	read := func(fast bool) ([]KubeItem, string) {
		validJSONFast = fast
		defer func() { validJSONFast = true }()
		var items []KubeItem
		err := DecodeKubeFile(name, data, hint, func(it KubeItem) { items = append(items, it) })
		if err != nil {
			return items, err.Error()
		}
		return items, ""
	}
	fast, fastErr := read(true)
	slow, slowErr := read(false)
	if fastErr != slowErr {
		t.Errorf("%s: error %q, the decoder's %q", name, fastErr, slowErr)
	}
	if len(fast) != len(slow) {
		t.Fatalf("%s: %d items, the decoder's %d", name, len(fast), len(slow))
	}
	for i := range fast {
		if !reflect.DeepEqual(fast[i], slow[i]) {
			t.Errorf("%s: item %d\n%+v\nthe decoder's\n%+v", name, i, fast[i], slow[i])
		}
	}
}

// TestDecodeValidJSONLikeTheDecoder: every Kubernetes file of the scenario
// sets, and forms the skipper must leave to the decoder or read exactly as
// it does, give the same items, lines and errors both ways.
func TestDecodeValidJSONLikeTheDecoder(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../../testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, "/kubernetes/") {
			return err
		}
		if ext := filepath.Ext(path); ext != ".json" && ext != ".yaml" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		decodeBoth(t, path, data, "")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d files read", n)
	}
	for i, data := range decodeEdgeCases {
		for _, hint := range []string{"", "Pod"} {
			decodeBoth(t, fmt.Sprintf("case %d hint %q", i, hint), []byte(data), hint)
		}
	}
}

var decodeEdgeCases = []string{
	`{"kind":"PodList","items":[{"metadata":{"name":"p","namespace":"a"}},{"metadata":{"name":"q"}}]}`,
	"{\"kind\":\"List\",\"items\":[\n  {\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}},\n\n  {\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"x\"},\"data\":{\"a\":\"}]\\\"{[\"}}\n]}\n",
	`{"KIND":"Pod","ApiVersion":"v1","Metadata":{"NAME":"p","NameSpace":"n"}}`,
	`{"kind":"List","items":[{"Kind":"Pod","kind":"Service","metadata":{"name":"a"},"metadata":{"namespace":"b"}}]}`,
	`{"kind":"List","items":[{"kind":null,"metadata":null}]}`,
	`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":null}}]}`,
	`{"kind":"List","items":[{"kind":"Pod","metadata":"x"}]}`,
	`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":5}}]}`,
	`{"kind":"List","items":[{"kind":5,"metadata":{"name":"p"}}]}`,
	`{"kind":"List","items":["pod", 3, null, true]}`,
	`{"kind":"List","items":[{"\u006bind":"Pod","metadata":{"name":"p"}}]}`,
	`{"\u006bind":"PodList","items":[{"metadata":{"name":"p"}}]}`,
	`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p\u00e9"}}]}`,
	`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"pé","namespace":"a\"b"}}]}`,
	`{"kind":"List","items":[{"\u212aind":"Pod","metadata":{"name":"p"}}]}`,
	"{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"\xff\"}}]}",
	`{"kind":"PodList","items":null}`,
	`{"kind":"PodList","items":{}}`,
	`{"kind":"PodList","items":"x"}`,
	`{"kind":"PodList","items":[],"items":[{"metadata":{"name":"p"}}],"items":null}`,
	`{"kind":null,"items":[{"kind":"Pod","metadata":{"name":"p"}}]}`,
	`{"kind":"Pod","kind":null,"metadata":{"name":"p"}}`,
	`{"kind":["Pod"],"metadata":{"name":"p"}}`,
	`{"metadata":{"name":"p"}}`,
	`{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i:1","args":["a\\","]}"]}]}}`,
	`{"kind":"Widget","metadata":{"name":"w","namespace":"n"},"spec":{"x":[1,2.5e3,-0,true,false,null]}}`,
	`{"kind":"List","items":[{"kind":"Secret","metadata":{"name":"s"},"data":{"a":"YQ=="}}]}`,
	`{"kind":"List","items":[{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{"name":"e","namespace":"n"},"note":"x"}]}`,
	"  \r\n\t{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}  \n",
	"\ufeff{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}",
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}\n{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\"}}",
	`[{"kind":"Pod","metadata":{"name":"p"}}]`,
	`null`,
	`{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}]}`,
	`{"kind":"PodList","items":[{"metadata":{}}]}`,
	`{ "kind" : "PodList" , "items" : [ { "metadata" : { "name" : "a" } } , { "metadata" : { "name" : "b" } } ] }`,
}

func FuzzDecodeValidJSONLikeTheDecoder(f *testing.F) {
	for _, s := range decodeEdgeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		decodeBoth(t, "f", []byte(data), "Pod")
		if !json.Valid([]byte(data)) {
			return
		}
		if h, ok := readItemHead([]byte(data)); ok {
			var want itemHead
			if err := json.Unmarshal([]byte(data), &want); err != nil || h != want {
				t.Errorf("head %+v, json.Unmarshal's %+v (%v)", h, want, err)
			}
		}
	})
}
