package probe_test

import (
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/probe"
)

// FuzzResolve checks the forgery guard's invariant on any reference: whatever it accepts lies
// under a base URL, on the base's scheme and host, with a path that stays under the base path
// once percent-decoded.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"/static/js/a.js", "/js/app.js?id=abc", "http://127.0.0.1:9/store/a.js", "//127.0.0.1:9/store/a.js",
		"http://127.0.0.1:9/store/%2e%2e/admin", "/static/..%2fadmin", "/a\\..\\b", "http://127.0.0.1:9@evil/store/a.js",
		"data:text/javascript,1", "file:///etc/passwd", "/static/a.js#frag", "http://127.0.0.1:9/store/a.js?x=../../",
		"/%", "/a/%2E%2e/b", "HTTP://127.0.0.1:9/store/a.js", "http://127.0.0.1:9/store/./a.js",
	} {
		f.Add(s)
	}
	bases := []string{"http://127.0.0.1:9/store/", "http://127.0.0.1:10/backup/"}
	c, err := probe.NewCDN(bases)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		urls, reason := c.Resolve(ref)
		if reason != "" {
			if urls != nil {
				t.Fatalf("refused %q but returned %v", ref, urls)
			}
			return
		}
		if len(urls) != len(bases) {
			t.Fatalf("%q: %d URLs", ref, len(urls))
		}
		for i, raw := range urls {
			base, _ := url.Parse(bases[i])
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("%q -> %q: %v", ref, raw, err)
			}
			if u.Scheme != base.Scheme || u.Host != base.Host || u.User != nil {
				t.Fatalf("%q -> %q leaves %s", ref, raw, bases[i])
			}
			p := u.Path // decoded
			if !strings.HasPrefix(p, base.Path) || path.Clean(p) != p || strings.ContainsAny(p, "\\\x00") {
				t.Fatalf("%q -> %q: path %q escapes or is not clean", ref, raw, p)
			}
		}
	})
}
