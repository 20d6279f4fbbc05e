package mergeconf

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"pgregory.net/rapid"
)

// genValue draws a JSON value: objects with keys from a small alphabet (so
// that patches and targets overlap), arrays, and scalars. nulls only when
// withNull, as patch members.
func genValue(t *rapid.T, depth int, withNull bool, label string) any {
	choices := 5
	if depth <= 0 {
		choices = 3
	}
	switch rapid.IntRange(0, choices).Draw(t, label+".kind") {
	case 0:
		if withNull {
			return nil
		}
		return rapid.Bool().Draw(t, label+".bool")
	case 1:
		return json.Number(fmt.Sprint(rapid.IntRange(-5, 5).Draw(t, label+".num")))
	case 2:
		return rapid.SampledFrom([]string{"", "a", "x.y", "env:X"}).Draw(t, label+".str")
	case 3:
		return rapid.Bool().Draw(t, label+".bool")
	case 4:
		n := rapid.IntRange(0, 3).Draw(t, label+".len")
		arr := make([]any, n)
		for i := range arr {
			arr[i] = genValue(t, depth-1, false, label+".item")
		}
		return arr
	default:
		return genObject(t, depth-1, withNull, label+".obj")
	}
}

func genObject(t *rapid.T, depth int, withNull bool, label string) map[string]any {
	n := rapid.IntRange(0, 4).Draw(t, label+".n")
	m := make(map[string]any, n)
	for range n {
		k := rapid.SampledFrom([]string{"a", "b", "c", "d", "e.f", `g\`}).Draw(t, label+".key")
		m[k] = genValue(t, depth, withNull, label+"."+k)
	}
	return m
}

func target(t *rapid.T) map[string]any { return genObject(t, 3, false, "target") }
func patch(t *rapid.T) map[string]any  { return genObject(t, 3, true, "patch") }

// hasNullMember reports whether any object outside arrays has a null member.
func hasNullMember(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, e := range m {
		if e == nil || hasNullMember(e) {
			return true
		}
	}
	return false
}

func TestMergePatchLaws(t *testing.T) {
	t.Run("Idempotent", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tg, p := target(t), patch(t)
			once := MergePatch(tg, p)
			if twice := MergePatch(once, p); !Equal(once, twice) {
				t.Fatalf("apply twice %v != once %v", twice, once)
			}
		})
	})
	t.Run("NullRemoves", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tg, p := target(t), patch(t)
			got := MergePatch(tg, p)
			for k, v := range p {
				if _, present := got[k]; v == nil && present {
					t.Fatalf("key %q patched with null is present", k)
				}
			}
		})
	})
	t.Run("NoNullMembers", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			if got := MergePatch(target(t), patch(t)); hasNullMember(got) {
				t.Fatalf("result has a null member: %v", got)
			}
		})
	})
	t.Run("EmptyPatchIsIdentity", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tg := target(t)
			if got := MergePatch(tg, map[string]any{}); !Equal(got, tg) {
				t.Fatalf("MergePatch(t, {}) = %v, want %v", got, tg)
			}
		})
	})
	t.Run("DisjointCommute", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tg, p1, p2 := target(t), patch(t), patch(t)
			for k := range p1 {
				delete(p2, k)
			}
			a := MergePatch(MergePatch(tg, p1), p2)
			b := MergePatch(MergePatch(tg, p2), p1)
			if !Equal(a, b) {
				t.Fatalf("p1 then p2 = %v, p2 then p1 = %v", a, b)
			}
		})
	})
	t.Run("InputsUntouched", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tg, p := target(t), patch(t)
			tc, pc := Clone(tg), Clone(p)
			got := MergePatch(tg, p)
			if !Equal(tg, tc) || !Equal(p, pc) {
				t.Fatal("MergePatch modified its inputs")
			}
			// The result shares nothing: changing it leaves the inputs alone.
			scribble(got)
			if !Equal(tg, tc) || !Equal(p, pc) {
				t.Fatal("the result aliases an input")
			}
		})
	})
	t.Run("AgreesWithReference", func(t *testing.T) {
		// evanphx/json-patch's MergePatch is an independent RFC 7396
		// implementation.
		rapid.Check(t, func(t *rapid.T) {
			tg, p := target(t), patch(t)
			tb, _ := json.Marshal(tg)
			pb, _ := json.Marshal(p)
			rb, err := jsonpatch.MergePatch(tb, pb)
			if err != nil {
				t.Fatalf("reference: %v", err)
			}
			want, err := Decode(rb)
			if err != nil {
				t.Fatal(err)
			}
			if got := MergePatch(tg, p); !Equal(got, want) {
				t.Fatalf("MergePatch(%s, %s) = %v, reference %s", tb, pb, got, rb)
			}
		})
	})
	t.Run("EffectiveIsFold", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			levels := []map[string]any{target(t), target(t), target(t)}
			want := MergePatch(MergePatch(MergePatch(nil, levels[0]), levels[1]), levels[2])
			if got := Effective(levels...); !Equal(got, want) {
				t.Fatalf("Effective = %v, fold = %v", got, want)
			}
		})
	})
}

func scribble(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			scribble(e)
			x[k] = "scribbled"
		}
		x["new"] = true
	case []any:
		for i := range x {
			scribble(x[i])
			x[i] = "scribbled"
		}
	}
}

func TestDiffLaws(t *testing.T) {
	t.Run("EmptyIffEqual", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a, b := target(t), target(t)
			if rapid.Bool().Draw(t, "same") {
				b = Clone(a).(map[string]any)
			}
			d := Diff(a, b)
			if (len(d) == 0) != Equal(a, b) {
				t.Fatalf("Diff(%v, %v) = %v but Equal = %v", a, b, d, Equal(a, b))
			}
		})
	})
	t.Run("Antisymmetric", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a, b := target(t), target(t)
			ab, ba := Diff(a, b), Diff(b, a)
			if len(ab) != len(ba) {
				t.Fatalf("|Diff(a,b)| = %d, |Diff(b,a)| = %d", len(ab), len(ba))
			}
			for p, c := range ab {
				r, ok := ba[p]
				if !ok || !Equal(c.Old, r.New) || !Equal(c.New, r.Old) {
					t.Fatalf("path %s: %v vs reversed %v", p, c, r)
				}
			}
		})
	})
	t.Run("PathsRoundTrip", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			keys := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "", ".", `\`, `a.b\.c`, `x\`}), 1, 4).Draw(t, "keys")
			if got := SplitPath(JoinPath(keys...)); !slices.Equal(got, keys) {
				t.Fatalf("SplitPath(JoinPath(%q)) = %q", keys, got)
			}
		})
	})
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
	}{
		{in: `{"agents":{"k8s_agent":{"timeout":30}}}`},
		{in: `{}`},
		{in: `null`, wantErr: true},
		{in: `[1]`, wantErr: true},
		{in: `{"a":1} {"b":2}`, wantErr: true},
		{in: `{"a":`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Decode(%s) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err == nil && tt.in == `{"agents":{"k8s_agent":{"timeout":30}}}` {
				n := got["agents"].(map[string]any)["k8s_agent"].(map[string]any)["timeout"]
				if n != json.Number("30") {
					t.Errorf("timeout decoded as %#v, want json.Number", n)
				}
			}
		})
	}
}

func TestEqualNumbers(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{json.Number("30"), 30.0, true},
		{json.Number("30"), 30, true},
		{json.Number("1.0"), json.Number("1"), true},
		{json.Number("1.5"), 1.5, true},
		{json.Number("2"), "2", false},
		{"2", json.Number("2"), false},
		{[]string{"a"}, []any{"a"}, true},
		{[]any{"a"}, []string{"b"}, false},
		{map[string]any{"a": nil}, map[string]any{}, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// FuzzMergePatch feeds arbitrary JSON objects: MergePatch never panics, is
// idempotent, leaves no null members, and Diff of the result against itself
// is empty.
func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(`{"a":{"b":1},"c":[1,2]}`), []byte(`{"a":{"b":null,"d":2},"c":null}`))
	f.Add([]byte(`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"}}`), []byte(`{"author":{"familyName":null},"tags":["example"]}`))
	f.Add([]byte(`{}`), []byte(`{"x":{"y":{"z":null}}}`))
	f.Add([]byte(`{"a":"x"}`), []byte(`{"a":{"b":[null,{"c":null}]}}`))
	f.Fuzz(func(t *testing.T, tb, pb []byte) {
		tg, err := Decode(tb)
		if err != nil || hasNullMember(tg) {
			return
		}
		p, err := Decode(pb)
		if err != nil {
			return
		}
		got := MergePatch(tg, p)
		if hasNullMember(got) {
			t.Fatalf("null member in %v", got)
		}
		if again := MergePatch(got, p); !Equal(got, again) {
			t.Fatalf("not idempotent: %v then %v", got, again)
		}
		if d := Diff(got, got); len(d) != 0 {
			t.Fatalf("Diff(x, x) = %v", d)
		}
		if eff := Effective(tg, p); !Equal(eff, got) {
			t.Fatalf("Effective(t, p) = %v, MergePatch = %v", eff, got)
		}
		_ = ChangedFields(Diff(tg, got))
		// Validation of arbitrary input must not panic either.
		_, _ = ValidatePatch(tg, p, Options{})
	})
}
