package probe_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// recordingDialer records every address dialled and refuses anything outside loopback, so a
// bug cannot send traffic elsewhere even by accident.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errNotLoopback}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *recordingDialer) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

type loopbackOnly struct{}

func (loopbackOnly) Error() string { return "test dialer: refusing a non-loopback address" }

var errNotLoopback = loopbackOnly{}

func TestResolveRefusesForgery(t *testing.T) {
	// The bases are loopback addresses; look-alike hosts are never resolved or dialled.
	const primary, replica = "http://127.0.0.1:9/store/", "http://127.0.0.1:10/backup/"
	c, err := probe.NewCDN([]string{primary, replica})
	if err != nil {
		t.Fatal(err)
	}
	ok := []struct{ ref, want string }{
		{"/static/js/a.js", primary + "static/js/a.js"},
		{"/js/app.js?id=abc", primary + "js/app.js?id=abc"},
		{"http://127.0.0.1:9/store/static/a.js", primary + "static/a.js"},
		{"//127.0.0.1:9/store/static/a.js", primary + "static/a.js"},
		{"/static/a%20b.js", primary + "static/a%20b.js"},
	}
	for _, tc := range ok {
		urls, reason := c.Resolve(tc.ref)
		if reason != "" || len(urls) != 2 || urls[0] != tc.want {
			t.Errorf("Resolve(%q) = %v, %q; want %s", tc.ref, urls, reason, tc.want)
		}
	}
	refused := []string{
		"https://127.0.0.1:9/store/a.js",             // other scheme
		"http://127.0.0.2:9/store/a.js",              // other host
		"http://127.0.0.1:9/other/a.js",              // outside the base path
		"http://127.0.0.1:9/store/../admin",          // .. escaping the base
		"http://127.0.0.1:9/store/%2e%2e/admin",      // percent-encoded dot segment
		"http://127.0.0.1:9/store/%2E%2E%2Fadmin",    // encoded slash too
		"/static/../../admin",                        // root-relative escape
		"/static/%2e%2e/%2e%2e/admin",                // encoded, root-relative
		"/static/..%2f..%2fadmin",                    // encoded slashes
		"/static/.%2e/admin",                         // half-encoded
		"/static/a\\..\\..\\admin",                   // backslashes
		"/static/%5c..%5cadmin",                      // encoded backslashes
		"/static/a.js%00.png",                        // NUL
		"//evil.invalid/a.js",                        // protocol-relative elsewhere
		"http://127.0.0.1:9@evil.invalid/store/a.js", // userinfo trick
		"http://127.0.0.1:9/store/@evil.invalid/a",   // fine path, but see below: allowed
		"http://127.0.0.1:9.evil.invalid/store/a.js", // look-alike host
		"http://user:pw@127.0.0.1:9/store/a.js",      // userinfo on the right host
		"data:text/javascript,alert(1)",              // data:
		"file:///etc/passwd",                         // file:
		"javascript:alert(1)",                        // javascript:
		"/static/",                                   // a directory
		"/static//a.js",                              // empty segment
		"/./static/a.js",                             // dot segment
		"static/a.js",                                // relative, never resolved here
	}
	for _, ref := range refused {
		if ref == "http://127.0.0.1:9/store/@evil.invalid/a" {
			// An "@" in the path is just a path character: it stays on the base host.
			if urls, reason := c.Resolve(ref); reason != "" || !strings.HasPrefix(urls[0], primary) {
				t.Errorf("Resolve(%q) = %v, %q; want it under %s", ref, urls, reason, primary)
			}
			continue
		}
		if urls, reason := c.Resolve(ref); reason == "" {
			t.Errorf("Resolve(%q) = %v; want it refused", ref, urls)
		}
	}
}

// TestCheckNeverDialsRefusedURLs runs a hostile manifest's references through Check with a
// recording dialer: refused references are counted as skipped and never dialled; only the
// CDN's loopback address is.
func TestCheckNeverDialsRefusedURLs(t *testing.T) {
	cdn, err := testkit.StartCDN("/store/")
	if err != nil {
		t.Fatal(err)
	}
	defer cdn.Close()
	cdn.Add("/static/a.js")
	rd := &recordingDialer{}
	c, err := probe.NewCDN([]string{cdn.URL}, probe.WithDialer(rd.dial), probe.WithBackoff(probe.NoWait, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := strings.TrimSuffix(cdn.URL, "/store/")
	hostile := []string{
		"data:text/javascript,alert(1)", "file:///etc/passwd", "//evil.invalid/x.js",
		base + "@evil.invalid/store/x.js", strings.Replace(base, "127.0.0.1", "127.0.0.1.evil.invalid", 1) + "/store/x.js",
		base + "/store/%2e%2e/secret", "/static/..%2fsecret", "/static/a\\..\\..\\secret",
		"https://127.0.0.2/store/x.js", "http://169.254.169.254/latest/meta-data/",
	}
	assets := []model.Asset{{Ref: "/static/a.js"}}
	for _, h := range hostile {
		assets = append(assets, model.Asset{Ref: h})
	}
	res := c.Check(context.Background(), assets)
	if res.Skipped != len(hostile) {
		t.Errorf("skipped %d, want %d", res.Skipped, len(hostile))
	}
	if got := res.Checks["/static/a.js"]; got != nil || res.Checked != 1 {
		t.Errorf("the legitimate asset should be checked and fine: %+v (checked %d)", got, res.Checked)
	}
	want := strings.TrimPrefix(base, "http://")
	for _, a := range rd.dialled() {
		if a != want {
			t.Errorf("dialled %s; only the CDN %s may be dialled", a, want)
		}
	}
	if len(rd.dialled()) == 0 {
		t.Error("the CDN was never dialled")
	}
	if n := cdn.Requests.Load(); n != 1 {
		t.Errorf("the CDN saw %d requests, want 1", n)
	}
}
