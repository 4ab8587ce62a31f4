package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// seeds adds every test-data manifest to f, through add.
func seeds(f *testing.F, add func(name string, body []byte)) {
	filepath.WalkDir("testdata", func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || strings.Contains(p, "fuzz") {
			return nil
		}
		if ext := filepath.Ext(p); ext == ".json" || ext == ".html" {
			b, err := os.ReadFile(p)
			if err == nil {
				add(filepath.Base(p), b)
			}
		}
		return nil
	})
}

var fuzzPaths = []string{"/", "/asset-manifest.json", "/.vite/manifest.json", "/shop/ngsw.json", "/assets/.manifest.json",
	"/mix-manifest.json", "/parcel-manifest.json", "/build-manifest.json", "/a/b/index.html", "/assets/.sprockets-manifest-x.json"}

// FuzzParse feeds any bytes to every format (and auto) and checks the invariants callers rely
// on: no panic; errors are *InvalidError; assets are sorted, unique, requestable refs whose
// integrity VerifyIntegrity accepts; parsing is deterministic (pooled buffers are not shared).
func FuzzParse(f *testing.F) {
	seeds(f, func(name string, b []byte) {
		for i, p := range fuzzPaths {
			if strings.HasSuffix(p, name) || i == 0 {
				f.Add(b, uint8(0), uint8(i))
			}
		}
	})
	f.Add([]byte(`{"a":"../../x","b":"\\..\\y","c":"%2e%2e/z","d":"//h/p","e":"data:,","f":null}`), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, fi, pi uint8) {
		formats := append([]Format{Auto}, Formats()...)
		f := formats[int(fi)%len(formats)]
		opts := Options{Path: fuzzPaths[int(pi)%len(fuzzPaths)], SourceMaps: pi&0x80 != 0}
		if pi&0x40 != 0 {
			opts.AssetPrefix = "/p/"
		}
		checkParse(t, f, body, opts)
	})
}

// FuzzParseHTML is FuzzParse for the HTML extractor, seeded with pages.
func FuzzParseHTML(f *testing.F) {
	seeds(f, func(name string, b []byte) {
		if strings.HasSuffix(name, ".html") || bytes.HasPrefix(bytes.TrimSpace(b), []byte("<")) {
			f.Add(b, "/shop/products/index.html")
		}
	})
	f.Add([]byte(`<base href="//cdn.example.com/x/"><img srcset=" a.png 1x,b.png,, c.png (x,y) 2x"><script type=importmap>{"imports":{"a":"./a.js"},"integrity":{"./a.js":"sha384-x"}}</script>`), "/")
	f.Add([]byte(`<base href="../../../"><link rel="stylesheet icon" href="a.css"><template><script src=t.js></script></template>`), "/a/b/c")
	f.Fuzz(func(t *testing.T, body []byte, page string) {
		checkParse(t, "html", body, Options{Path: page})
	})
}

func checkParse(t *testing.T, f Format, body []byte, opts Options) {
	m, err := Parse(f, body, opts)
	if err != nil {
		var ie *InvalidError
		if !errors.As(err, &ie) {
			t.Fatalf("Parse(%s) error %v is not an *InvalidError", f, err)
		}
		return
	}
	for i, a := range m.Assets {
		if i > 0 && m.Assets[i-1].Ref >= a.Ref {
			t.Fatalf("assets not sorted and unique: %q, %q", m.Assets[i-1].Ref, a.Ref)
		}
		checkRef(t, a.Ref)
		if a.Integrity != "" {
			if err := VerifyIntegrity(a.Integrity, nil); errors.Is(err, ErrNoIntegrity) {
				t.Fatalf("%s: integrity %q is unusable: %v", a.Ref, a.Integrity, err)
			}
		}
	}
	again, err := Parse(f, body, opts)
	if err != nil || !reflect.DeepEqual(m, again) {
		t.Fatalf("second parse differs: %v\n%+v\n%+v", err, m, again)
	}
}

// checkRef asserts a ref is safe to request: root-relative or http(s), no dot segments in its
// path, nothing a request line cannot carry.
func checkRef(t *testing.T, ref string) {
	t.Helper()
	p := ref
	switch {
	case strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"):
	case strings.HasPrefix(ref, "https://"), strings.HasPrefix(ref, "http://"), strings.HasPrefix(ref, "//"):
		rest := ref[strings.Index(ref, "//")+2:]
		i := strings.IndexAny(rest, "/")
		if i <= 0 {
			t.Fatalf("ref %q has no host or path", ref)
		}
		p = rest[i:]
	default:
		t.Fatalf("ref %q is neither root-relative nor http(s)", ref)
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		if strings.Contains(p[i:], "#") {
			t.Fatalf("ref %q keeps a fragment", ref)
		}
		p = p[:i]
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			t.Fatalf("ref %q has a dot segment", ref)
		}
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			t.Fatalf("ref %q holds byte %#x", ref, c)
		}
	}
}

// FuzzJSON checks the decoder against encoding/json: the same documents are valid, and valid
// ones decode to the same values (last duplicate key wins, invalid UTF-8 is U+FFFD).
func FuzzJSON(f *testing.F) {
	seeds(f, func(_ string, b []byte) { f.Add(b) })
	for _, s := range []string{`"\ud83d\ude00\ud800\u0041\udc00x"`, `[1e5,-0.5E-3,0,-0]`, `{"a":1,"a":{"b":[]}}`, "\"\xff\xfe\"", `[true,false,null]`, `{"":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := getDoc()
		defer d.release()
		v, err := d.decode(b)
		valid := json.Valid(b)
		if err != nil {
			if valid && !strings.Contains(err.Error(), "nested deeper") {
				t.Fatalf("rejected valid JSON: %v", err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON")
		}
		var want any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := toAny(d, v); !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n%#v\nwant\n%#v", got, want)
		}
	})
}

func toAny(d *jdoc, v jv) any {
	switch v.kind {
	case jNull:
		return nil
	case jTrue:
		return true
	case jFalse:
		return false
	case jNum:
		return json.Number(d.bytes(v))
	case jStr:
		return d.string(v)
	case jArr:
		out := []any{}
		for _, e := range d.members(v) {
			out = append(out, toAny(d, e.val))
		}
		return out
	default:
		out := map[string]any{}
		d.each(v, func(k, val jv) { out[d.string(k)] = toAny(d, val) })
		return out
	}
}

// FuzzResolve checks the concatenation fast path against net/url resolution.
func FuzzResolve(f *testing.F) {
	for _, v := range []string{"/static/js/a.js", "static/a.js", "a.js?id=1", "/a/./b", "a/../b", "/x[1].js", "a.js?", "?q", "/a//b", "a;b=c", "/a?b?c", "~/x", "@x/y.js"} {
		f.Add("/", v)
		f.Add("/_next/", v)
	}
	f.Add("/a/b/index.html", "x.js")
	f.Add("https://cdn.example.com/x/", "y.js")
	f.Fuzz(func(t *testing.T, base, v string) {
		r := getResolver(Options{Path: "/"})
		defer r.release()
		if !fastPath(base, []byte(v)) {
			return
		}
		want := v
		if v[0] != '/' {
			want = base + v
		}
		got, reason := r.slow(base, false, v)
		if reason != "" || got != want {
			t.Fatalf("fast path %q, net/url %q (%s)", want, got, reason)
		}
	})
}

// FuzzVerifyIntegrity checks that no integrity value panics and that a matching value matches.
func FuzzVerifyIntegrity(f *testing.F) {
	f.Add("sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC sha256-x", []byte("x"))
	f.Add("md5:0123456789abcdef0123", []byte(""))
	f.Add("sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709", []byte(""))
	f.Fuzz(func(t *testing.T, integrity string, body []byte) {
		err := VerifyIntegrity(integrity, body)
		var ie *IntegrityError
		if err != nil && !errors.Is(err, ErrNoIntegrity) && !errors.As(err, &ie) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		if ie != nil && !slices.Contains([]string{"md5", "sha1", "sha256", "sha384", "sha512"}, ie.Algorithm) {
			t.Fatalf("algorithm %q", ie.Algorithm)
		}
	})
}

// FuzzDetect checks auto-detection on flat JSON objects of any strings: whatever it decides,
// a document it accepts yields at least one reference, and one it refuses is an *InvalidError.
// A flat object whose every value lacks a file extension is never read as webpack.
func FuzzDetect(f *testing.F) {
	f.Add("version", "1701", "id", "7c2b3a52")
	f.Add("main.js", "/static/js/main.4f2a.js", "version", "1.2.3")
	f.Add("a", "b.c", "d", "e/f.g?x=1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		b, _ := json.Marshal(map[string]string{k1: v1, k2: v2})
		m, err := Parse(Auto, b, Options{Path: "/manifest.json"})
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InvalidError", err)
			}
			return
		}
		if len(m.Assets) == 0 {
			t.Fatalf("accepted %s with no reference", b)
		}
		if m.Format == "webpack" && !looksLikeAssetPath([]byte(v1)) && !looksLikeAssetPath([]byte(v2)) {
			t.Fatalf("read %s as webpack though no value looks like an asset path", b)
		}
	})
}
