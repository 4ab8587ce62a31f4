package probe

import "testing"

func TestExcluded(t *testing.T) {
	globs := []string{"/index.html", "/favicon.*", "/images/**", "/**/*.map", "/a/**/z.js"}
	for ref, want := range map[string]bool{
		"/index.html":                         true,
		"/index.html?v=1":                     true,
		"/favicon.ico":                        true,
		"/images/logo.png":                    true,
		"/images/a/b/c.svg":                   true,
		"/static/js/main.js.map":              true,
		"/main.js.map":                        true,
		"/a/z.js":                             true,
		"/a/b/c/z.js":                         true,
		"https://cdn.example.com/index.html":  true,
		"/static/js/main.js":                  false,
		"/sub/index.html":                     false,
		"/favicon/x.ico":                      false,
		"/imagesx/logo.png":                   false,
		"/a/b/y.js":                           false,
		"https://cdn.example.com/app/main.js": false,
	} {
		if got := excluded(globs, ref); got != want {
			t.Errorf("excluded(%q) = %v, want %v", ref, got, want)
		}
	}
	if excluded(nil, "/index.html") {
		t.Error("no globs excluded something")
	}
}
