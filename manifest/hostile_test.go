package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestInvalid(t *testing.T) {
	html := readSample(t, "edge-cases/spa-fallback-200-html-served-as-asset-manifest.json")
	tests := []struct {
		name   string
		format Format
		path   string
		body   []byte
		want   string // in the error message
	}{
		{"UTF-16 LE BOM", Auto, "/m.json", []byte("\xff\xfe{\x00}\x00"), "UTF-16"},
		{"UTF-16 BE BOM", "webpack", "/m.json", []byte("\xfe\xff\x00{\x00}"), "UTF-16"},
		{"UTF-16 without BOM", Auto, "/m.json", []byte("{\x00\"\x00a\x00"), "NUL bytes"},
		{"HTML for a .json path", Auto, "/asset-manifest.json", html, "HTML page was served where a JSON manifest was expected"},
		{"HTML for a configured JSON format", "vite", "/.vite/manifest", html, "HTML page was served"},
		{"HTML names the content type", Auto, "/asset-manifest.json", html, `content-type "text/html; charset=utf-8"`},
		{"HTML for a .json path with a query", Auto, "/asset-manifest.json?v=1", html, "HTML page was served"},
		{"truncated", Auto, "/.vite/manifest.json", readSample(t, "edge-cases/truncated-vite-manifest.json"), "truncated"},
		{"truncated string", "webpack", "/m.json", []byte(`{"a.js": "/a`), "truncated"},
		{"zero bytes", Auto, "/m.json", nil, "empty body"},
		{"whitespace", "vite", "/m.json", []byte(" \n\t"), "empty body"},
		{"BOM only", Auto, "/m.json", []byte("\xef\xbb\xbf"), "empty body"},
		{"null", Auto, "/m.json", []byte("null"), "the JSON is null"},
		{"number", "webpack", "/m.json", []byte("42"), "the JSON is a number"},
		{"array", Auto, "/m.json", []byte("[]"), "the JSON is an array"},
		{"empty object, auto", Auto, "/m.json", []byte("{}"), "empty JSON object"},
		{"plain text", Auto, "/m.json", []byte("Forbidden"), "not JSON"},
		{"XML error page", Auto, "/m.json", []byte("<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>"), "not JSON"},
		{"trailing garbage", Auto, "/m.json", []byte(`{"a.js": "/a.js"} x`), "after the top-level value"},
		{"two objects", Auto, "/m.json", []byte(`{"a.js": "/a.js"}{}`), "after the top-level value"},
		{"JS-wrapped", Auto, "/_buildManifest.js", []byte(`self.__BUILD_MANIFEST={"/":[]}`), "not JSON"},
		{"deep nesting", Auto, "/m.json", []byte(strings.Repeat("[", 100000)), "nested deeper"},
		{"wrong configured format", "vite", "/m.json", readSample(t, "webpack/asset-manifest.json"), "looks like a webpack manifest"},
		{"no format matches", Auto, "/m.json", []byte(`{"a": 1, "b": [2]}`), "no known manifest format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.format, tt.body, Options{Path: tt.path, ContentType: "text/html; charset=utf-8"})
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, %+v; want *InvalidError", err, m)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
	// A JSON Content-Type with an HTML body is the same mistake, whatever the path.
	if _, err := Parse(Auto, html, Options{Path: "/manifest", ContentType: "application/json"}); !errors.As(err, new(*InvalidError)) || !strings.Contains(err.Error(), "HTML page") {
		t.Errorf("HTML with a JSON content type: got %v", err)
	}
	if _, err := Parse("webpack5", []byte(`{}`), Options{}); err == nil || errors.As(err, new(*InvalidError)) {
		t.Errorf("unknown format: got %v, want a plain error", err)
	}
}

func TestHTMLAutoDetection(t *testing.T) {
	html := readSample(t, "edge-cases/spa-fallback-200-html-served-as-asset-manifest.json")
	for _, p := range []string{"/", "/index.html", "/shop/"} {
		m, err := Parse(Auto, html, Options{Path: p})
		if err != nil || m.Format != "html" || len(m.Assets) != 2 {
			t.Errorf("%s: %v %+v", p, err, m)
		}
	}
}

func TestHostileValues(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		path   string
		body   string
		refs   []string
		skip   map[string]string // value -> reason substring
		warn   string
	}{
		{
			name: "duplicate keys keep the last", format: Auto, path: "/manifest.json",
			body: string(readSample(t, "edge-cases/duplicate-keys.json")),
			refs: []string{"/static/css/main.4e5f6a7b.css", "/static/js/main.8c9d0e1f.js"},
			warn: `duplicate key "main.js"`,
		},
		{
			name: "duplicate keys in a large object", format: "webpack", path: "/m.json",
			body: `{"a":"/a","b":"/b","c":"/c","d":"/d","e":"/e","f":"/f","g":"/g","h":"/h","i":"/i","a":"/z"}`,
			refs: []string{"/b", "/c", "/d", "/e", "/f", "/g", "/h", "/i", "/z"},
			warn: `duplicate key "a"`,
		},
		{
			name: "typed values only", format: "webpack", path: "/m.json",
			body: `{"a": "/a.js", "n": null, "x": 42, "o": {"src": 1}, "l": ["/l.js"], "t": true}`,
			refs: []string{"/a.js"},
			skip: map[string]string{"n": "null", "x": "number", "o": "object", "l": "array", "t": "true"},
		},
		{
			name: "dot-dot never escapes the root", format: "webpack", path: "/a/b/manifest.json",
			body: `{"1": "../../x.js", "2": "../../../y.js", "3": "/../z.js", "4": "/s/../../w.js", "5": "%2e%2e/%2e%2e/%2e%2e/etc/passwd", "6": "https://cdn.example.com/app/../admin/x.js", "7": "/ok/./v.js"}`,
			refs: []string{"/ok/v.js", "/x.js"},
			skip: map[string]string{"../../../y.js": "escapes", "/../z.js": "escapes", "/s/../../w.js": "escapes",
				"%2e%2e/%2e%2e/%2e%2e/etc/passwd": "escapes", "https://cdn.example.com/app/../admin/x.js": ". or .."},
		},
		{
			name: "dot-dot never escapes a conventional prefix", format: "sprockets", path: "/assets/.sprockets-manifest.json",
			body: `{"files": {}, "assets": {"a.js": "../secret.js", "b.js": "x/../b.js", "c.js": "x/../../c.js"}}`,
			refs: []string{"/assets/b.js"},
			skip: map[string]string{"../secret.js": "escapes", "x/../../c.js": "escapes"},
		},
		{
			name: "backslashes read as slashes", format: "webpack", path: "/m.json",
			body: `{"a": "static\\js\\a.js", "b": "..\\..\\..\\etc\\passwd"}`,
			refs: []string{"/static/js/a.js"},
			skip: map[string]string{`..\..\..\etc\passwd`: "escapes"},
			warn: "backslashes",
		},
		{
			name: "percent-encoding without double encoding", format: "webpack", path: "/m.json",
			body: `{"1": "/caf%C3%A9.png", "2": "/café.png", "3": "/100%.png", "4": "/a b.png", "5": "/a%2Fb.js", "6": "/q.js?x=a b&y=é", "7": "/logo%20(1).svg", "8": "/\u00e9\u0301.js"}`,
			refs: []string{"/100%25.png", "/a%20b.png", "/a%2Fb.js", "/caf%C3%A9.png", "/logo%20(1).svg", "/q.js?x=a%20b&y=%C3%A9", "/%C3%A9%CC%81.js"},
		},
		{
			name: "schemes and hosts", format: "webpack", path: "/m.json",
			body: `{"1": "data:text/css,x", "2": "javascript:alert(1)", "3": "mailto:a@b", "4": "//evil.example/x.js", "5": "https://user:pw@cdn.example.com/x.js", "6": "ftp://cdn.example.com/x.js", "7": "http:x.js", "8": "https://", "9": "DATA:,x"}`,
			refs: []string{"//evil.example/x.js"},
			skip: map[string]string{"data:text/css,x": "data:", "javascript:alert(1)": "scheme", "mailto:a@b": "scheme",
				"https://user:pw@cdn.example.com/x.js": "userinfo", "ftp://cdn.example.com/x.js": "scheme", "http:x.js": "hierarchical",
				"https://": "host", "DATA:,x": "data:"},
		},
		{
			name: "directories and fragments", format: "webpack", path: "/m.json",
			body: `{"1": "/static/", "2": "static/", "3": "/s.svg#icon", "4": "/x.js?", "5": "#frag", "6": "?q"}`,
			refs: []string{"/s.svg", "/x.js?"},
			skip: map[string]string{"/static/": "directory", "static/": "directory", "#frag": "directory", "?q": "directory"},
		},
		{
			name: "NUL and control characters", format: "webpack", path: "/m.json",
			body: `{"1": "/a\u0000b.js", "2": "/c\td.js", "3": "/e\u2028f.js"}`,
			refs: []string{"/a%00b.js", "/c%09d.js", "/e%E2%80%A8f.js"},
		},
		{
			name: "invalid UTF-8 becomes U+FFFD", format: "webpack", path: "/m.json",
			body: "{\"a\": \"/x\xff.js\"}",
			refs: []string{"/x%EF%BF%BD.js"},
		},
		{
			name: "mix with a hostile id", format: "mix", path: "/mix-manifest.json",
			body: `{"/a.js": "/a.js?id=zz", "/b.js": "/b.js?id=ABCDEF0123456789ABCDEF0123456789", "/c.js": "/c.js?id=%ZZ"}`,
			refs: []string{"/a.js?id=zz", "/b.js?id=ABCDEF0123456789ABCDEF0123456789", "/c.js?id=%ZZ"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.format, []byte(tt.body), Options{Path: tt.path})
			if err != nil {
				t.Fatal(err)
			}
			got := refs(m.Assets)
			want := slices.Clone(tt.refs)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("refs:\n got %q\nwant %q", got, want)
			}
			for v, reason := range tt.skip {
				i := slices.IndexFunc(m.Skipped, func(s Skip) bool { return s.Value == v })
				if i < 0 || !strings.Contains(m.Skipped[i].Reason, reason) {
					t.Errorf("%q: want skipped for %q; skipped: %+v", v, reason, m.Skipped)
				}
			}
			if tt.warn != "" && !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, tt.warn) }) {
				t.Errorf("no warning %q in %q", tt.warn, m.Warnings)
			}
		})
	}
}

func TestProtocolRelative(t *testing.T) {
	body := []byte(`{"a": "//cdn.example.com/a.js"}`)
	for scheme, want := range map[string]string{"": "//cdn.example.com/a.js", "http": "http://cdn.example.com/a.js", "HTTPS": "https://cdn.example.com/a.js", "ftp": "//cdn.example.com/a.js"} {
		m, err := Parse("webpack", body, Options{Path: "/m.json", Scheme: scheme})
		if err != nil || len(m.Assets) != 1 || m.Assets[0].Ref != want {
			t.Errorf("scheme %q: %v %+v, want %s", scheme, err, m, want)
		}
	}
}

func TestMixIntegrityForms(t *testing.T) {
	m, err := Parse("mix", []byte(`{"/b.js": "/b.js?id=ABCDEF0123456789ABCDEF0123456789", "/c.js": "/c.js?v=1&id=0123456789abcdef0123"}`), Options{Path: "/mix-manifest.json"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"md5:abcdef0123456789abcdef0123456789", "md5:0123456789abcdef0123"}
	for i, a := range m.Assets {
		if a.Integrity != want[i] {
			t.Errorf("%s integrity %q, want %q", a.Ref, a.Integrity, want[i])
		}
	}
}

// TestLargeManifests parses 100,000-entry manifests of several formats, in well under a
// second each on a laptop (the limit here is generous for slow CI machines).
func TestLargeManifests(t *testing.T) {
	const n = 100000
	gen := map[Format]func(i int) string{
		"webpack": func(i int) string {
			return fmt.Sprintf("%q: \"/static/js/chunk-%d.0123abcd.js\"", fmt.Sprint("chunk", i), i)
		},
		"vite": func(i int) string {
			return fmt.Sprintf("\"src/c%d.tsx\": {\"file\": \"assets/c%d-AbCd1234.js\", \"src\": \"src/c%d.tsx\", \"imports\": [\"_shared.js\"], \"css\": [\"assets/c%d.css\"]}", i, i, i, i)
		},
		"sprockets": nil,
	}
	for f, entry := range gen {
		if entry == nil {
			continue
		}
		var sb strings.Builder
		sb.WriteString("{")
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteString(",\n")
			}
			sb.WriteString(entry(i))
		}
		sb.WriteString("}")
		body := []byte(sb.String())
		start := time.Now()
		m, err := Parse(Auto, body, Options{Path: "/.vite/manifest.json", MaxAssets: 4 * n})
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if m.Format != f || len(m.Assets) < n {
			t.Errorf("%s: format %s, %d assets", f, m.Format, len(m.Assets))
		}
		t.Logf("%s: %d entries, %d bytes, %d assets in %v", f, n, len(body), len(m.Assets), took)
		if took > 10*time.Second {
			t.Errorf("%s took %v", f, took)
		}
	}
}
