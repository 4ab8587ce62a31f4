// Package jsonfields lets tests pin the field names of polygraph's JSON documents (the verify
// report, the release record, the policy report) to golden files, so that a renamed, dropped
// or retyped field fails a test before it fails a user's pipeline.
package jsonfields

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files of JSON field names")

// MapKey is the key Fill puts in every map, and the name Paths gives a map's members.
const MapKey = "*"

// Fill sets every exported field reachable from v (a pointer) to a value that is not zero:
// strings "x", numbers 1, booleans true, one element in every slice, one MapKey entry in every
// map, pointers allocated, times at a fixed instant. Every omitempty field is then written.
func Fill(v any) {
	fill(reflect.ValueOf(v).Elem(), 0)
}

var timeType = reflect.TypeOf(time.Time{})

func fill(v reflect.Value, depth int) {
	if depth > 20 {
		return
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		k.SetString(MapKey)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// Paths lists every member of a JSON document with its JSON type, one "path: type" line each,
// sorted: "instances[].labels.*: string". Arrays are described by their first element.
func Paths(t testing.TB, doc []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var out []string
	walk(v, "", &out)
	sort.Strings(out)
	return out
}

func walk(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if path != "" {
			*out = append(*out, path+": object")
		}
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walk(e, p, out)
		}
	case []any:
		*out = append(*out, path+": array")
		if len(x) > 0 {
			walk(x[0], path+"[]", out)
		}
	case string:
		*out = append(*out, path+": string")
	case float64:
		*out = append(*out, path+": number")
	case bool:
		*out = append(*out, path+": boolean")
	case nil:
		*out = append(*out, path+": null")
	default:
		*out = append(*out, fmt.Sprintf("%s: %T", path, v))
	}
}

// Golden compares lines with the golden file (one line each), or rewrites the file when the
// test runs with -update. A difference names each field added or gone.
func Golden(t testing.TB, file string, lines []string) {
	t.Helper()
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	Compare(t, file, lines)
}

// Compare compares lines with the golden file, never rewriting it.
func Compare(t testing.TB, file string, lines []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading the golden file (run go test -update to write it): %v", err)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		want[l] = true
	}
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
		if !want[l] {
			t.Errorf("%s: field %s is new or changed: a field users read must not be renamed or retyped (if it is an addition, run go test -update)", file, l)
		}
	}
	for l := range want {
		if !have[l] {
			t.Errorf("%s: field %s is gone: a field users read must not be renamed or dropped", file, l)
		}
	}
}
