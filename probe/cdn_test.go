package probe_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

func startCDN(t *testing.T, paths ...string) *testkit.CDN {
	t.Helper()
	c, err := testkit.StartCDN("/store/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.Add(paths...)
	return c
}

func assetsOf(paths ...string) []model.Asset {
	out := make([]model.Asset, len(paths))
	for i, p := range paths {
		out[i] = model.Asset{Ref: p}
	}
	return out
}

func TestHEADFallsBackToARangedGET(t *testing.T) {
	for _, status := range []int{http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		cdn := startCDN(t, "/a.js")
		cdn.RefuseHEADWith(status)
		c, err := probe.NewCDN([]string{cdn.URL}, probe.WithBackoff(probe.NoWait, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		res := c.Check(context.Background(), assetsOf("/a.js", "/gone.js"))
		if s := stateOf(res, "/a.js"); s != model.AssetOK {
			t.Errorf("HEAD %d: /a.js is %s", status, s)
		}
		if s := res.Checks["/gone.js"].State; s != model.AssetMissing {
			t.Errorf("HEAD %d: /gone.js is %s", status, s)
		}
		// One HEAD and one ranged GET per asset; 405 and 501 are not retried.
		if h, g, n := cdn.HEADs.Load(), cdn.Ranged.Load(), cdn.Requests.Load(); h != 2 || g != 2 || n != 4 || res.Requests != 4 {
			t.Errorf("HEAD %d: %d HEADs, %d ranged GETs, %d requests (%d counted)", status, h, g, n, res.Requests)
		}
		c.Close()
	}
}

func TestReplicasAndFailover(t *testing.T) {
	primary := startCDN(t, "/ok.js", "/lagging.js", "/failing.js", "/missing-everywhere.js")
	replica := startCDN(t, "/ok.js", "/failing.js")
	primary.Remove("/missing-everywhere.js")
	primary.Fail("/failing.js", http.StatusServiceUnavailable)
	c, err := probe.NewCDN([]string{primary.URL, replica.URL}, probe.WithRetries(1), probe.WithBackoff(probe.NoWait, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Check(context.Background(), assetsOf("/ok.js", "/lagging.js", "/failing.js", "/missing-everywhere.js", "/ok.js"))
	want := map[string]struct {
		state   model.AssetState
		replica model.AssetState
	}{
		"/ok.js":                 {model.AssetOK, model.AssetOK},
		"/lagging.js":            {model.AssetOK, model.AssetMissing}, // asset-replica-missing
		"/failing.js":            {model.AssetDegraded, model.AssetOK},
		"/missing-everywhere.js": {model.AssetMissing, model.AssetMissing},
	}
	for ref, w := range want {
		ac := res.Checks[ref]
		if w.state == model.AssetOK && w.replica == model.AssetOK {
			if ac != nil {
				t.Errorf("%s is fine everywhere but recorded: %+v", ref, ac)
			}
			continue
		}
		if ac == nil || ac.State != w.state || len(ac.Replicas) != 1 || ac.Replicas[0].State != w.replica {
			t.Errorf("%s: %+v, want %s with replica %s", ref, ac, w.state, w.replica)
		}
	}
	// Each unique URL once, the failing one retried once.
	if n := primary.Hits("/ok.js") + replica.Hits("/ok.js"); n != 2 {
		t.Errorf("/ok.js asked %d times, want once per origin", n)
	}
	if n := primary.Hits("/failing.js"); n != 2 {
		t.Errorf("/failing.js asked %d times on the primary, want 2 (one retry)", n)
	}
	if s503 := res.Checks["/failing.js"].Primary.Status; s503 != 503 {
		t.Errorf("the primary's last answer is not kept: %d", s503)
	}
}

func TestCDNConcurrencyPerHost(t *testing.T) {
	paths := make([]string, 40)
	for i := range paths {
		paths[i] = "/a" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".js"
	}
	cdn := startCDN(t, paths...)
	cdn.SetLatency(10 * time.Millisecond)
	c, err := probe.NewCDN([]string{cdn.URL}, probe.WithConcurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Check(context.Background(), assetsOf(paths...))
	for _, p := range paths {
		if stateOf(res, p) != model.AssetOK {
			t.Fatalf("%s: %+v", p, res.Checks[p])
		}
	}
	if m := cdn.MaxInFlight.Load(); m > 3 {
		t.Errorf("%d requests in flight on one host, want at most 3", m)
	}
}

// TestCDNRateLimit: at 5 requests a second (burst 5), a run with a 2s deadline sends about
// 15 requests; the rest are reported unchecked (not missing) without being sent, and the run
// ends by its deadline. Time queued behind the limiter does not count against the per-request
// timeout: no request times out or is retried while waiting its turn.
func TestCDNRateLimit(t *testing.T) {
	paths := make([]string, 40)
	for i := range paths {
		paths[i] = "/r" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".js"
	}
	cdn := startCDN(t, paths...)
	c, err := probe.NewCDN([]string{cdn.URL}, probe.WithRate(5), probe.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	res := c.Check(ctx, assetsOf(paths...))
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("took %s past a 2s deadline", took)
	}
	for _, ac := range res.Checks {
		if ac.State == model.AssetMissing || strings.Contains(ac.Primary.Error, "timed out") || strings.Contains(ac.Primary.Error, "exceed context deadline") {
			t.Errorf("%s: %s %s", ac.Ref, ac.State, ac.Primary.Error)
		}
	}
	// 5 at once (the burst), then one every 200ms until the deadline: 14 or 15 sent.
	if n := res.Requests; n < 12 || n > 16 || int(cdn.Requests.Load()) > n {
		t.Errorf("%d requests sent (%d received); want 12..16 at 5/s in 2s", n, cdn.Requests.Load())
	}
}

// TestOneBadOriginKeepsOthersAlive: go-retryablehttp closes its client's idle connections
// whenever a request fails with an error. With one transport per origin host, a dead primary
// does not make the replica's idle connections (idle while the rate limiter spaces requests)
// be dropped and redialled asset after asset.
func TestOneBadOriginKeepsOthersAlive(t *testing.T) {
	paths := make([]string, 30)
	for i := range paths {
		paths[i] = "/k" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".js"
	}
	replica := startCDN(t, paths...)
	dead := startCDN(t)
	dead.Close() // nothing listens there any more
	rd := &recordingDialer{}
	c, err := probe.NewCDN([]string{dead.URL, replica.URL}, probe.WithConcurrency(2), probe.WithRetries(0),
		probe.WithRate(20), probe.WithDialer(rd.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Check(context.Background(), assetsOf(paths...))
	for _, p := range paths {
		if s := res.Checks[p].State; s != model.AssetDegraded {
			t.Fatalf("%s: %s", p, s)
		}
	}
	replicaAddr := strings.TrimSuffix(strings.TrimPrefix(replica.URL, "http://"), "/store/")
	n := 0
	for _, a := range rd.dialled() {
		if a == replicaAddr {
			n++
		}
	}
	if n > 4 {
		t.Errorf("the replica was dialled %d times for %d assets at concurrency 2: its connections were dropped", n, len(paths))
	}
}

// TestCDNRedirectsStayOnTheBase: a CDN redirect is followed only onto a base URL of the same
// origin; a redirect elsewhere (another host, or outside the base path) is not followed.
func TestCDNRedirectsStayOnTheBase(t *testing.T) {
	var other, origin atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin.Add(1)
		switch r.URL.Path {
		case "/store/away.js":
			http.Redirect(w, r, elsewhere.URL+"/store/away.js", http.StatusFound)
		case "/store/up.js":
			http.Redirect(w, r, "/admin/up.js", http.StatusFound)
		case "/store/moved.js":
			http.Redirect(w, r, "/store/v2/moved.js", http.StatusMovedPermanently)
		case "/store/v2/moved.js":
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := probe.NewCDN([]string{srv.URL + "/store/"}, probe.WithBackoff(probe.NoWait, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Check(context.Background(), assetsOf("/away.js", "/up.js", "/moved.js"))
	for ref, want := range map[string]model.AssetState{"/away.js": model.AssetUnchecked, "/up.js": model.AssetUnchecked, "/moved.js": model.AssetOK} {
		if got := stateOf(res, ref); got != want {
			t.Errorf("%s: %s, want %s (%+v)", ref, got, want, res.Checks[ref])
		}
	}
	if other.Load() != 0 || origin.Load() != 4 {
		t.Errorf("elsewhere saw %d requests, the origin %d (want 0 and 4)", other.Load(), origin.Load())
	}
}

// stateOf is an asset's state in a result: the recorded check, or OK for an asset checked and
// found fine (only problems are recorded).
func stateOf(res *model.CDNResult, ref string) model.AssetState {
	if ac := res.Checks[ref]; ac != nil {
		return ac.State
	}
	return model.AssetOK
}

// TestCDNLongHeadersAreRead: CDN connections read through a 2 KiB buffer; a CDN answering
// with many kilobytes of headers (cache and tracing headers, cookies) on kept-alive
// connections is read whole, answer after answer.
func TestCDNLongHeadersAreRead(t *testing.T) {
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Trace", strings.Repeat("t", 6000))
		w.Header().Set("Set-Cookie", "edge="+strings.Repeat("c", 3000))
		if r.URL.Path == "/gone.js" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("/* asset */"))
	}))
	defer cdn.Close()
	c, err := probe.NewCDN([]string{cdn.URL}, probe.WithConcurrency(2), probe.WithBackoff(probe.NoWait, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	paths := []string{"/gone.js"}
	for i := range 20 {
		paths = append(paths, fmt.Sprintf("/a%d.js", i))
	}
	res := c.Check(context.Background(), assetsOf(paths...))
	for _, p := range paths[1:] {
		if s := stateOf(res, p); s != model.AssetOK {
			t.Errorf("%s is %s", p, s)
		}
	}
	if s := res.Checks["/gone.js"].State; s != model.AssetMissing {
		t.Errorf("/gone.js is %s", s)
	}
}

// TestAnswersAreAskedOnce: checks sharing Answers ask each question once. A check made ahead
// with part of the assets leaves its answers; the check of all of them asks only the rest,
// with every count as if it had asked everything itself. A check cut short leaves no answer
// for the requests it cut, so they are asked again.
func TestAnswersAreAskedOnce(t *testing.T) {
	cdn := startCDN(t, "/a.js", "/b.js", "/c.js")
	all := assetsOf("/a.js", "/b.js", "/c.js", "/gone.js")
	plain, err := probe.NewCDN([]string{cdn.URL}, probe.WithBackoff(probe.NoWait, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	want := plain.Check(context.Background(), all)
	cdn.Requests.Store(0)

	answers := probe.NewAnswers()
	ahead, err := probe.NewCDN([]string{cdn.URL}, probe.WithBackoff(probe.NoWait, 0, 0), probe.WithAnswers(answers))
	if err != nil {
		t.Fatal(err)
	}
	ahead.Check(context.Background(), all[:2])
	ahead.Close()
	if n := cdn.Requests.Load(); n != 2 {
		t.Fatalf("the check ahead sent %d requests for 2 assets", n)
	}
	final, err := probe.NewCDN([]string{cdn.URL}, probe.WithBackoff(probe.NoWait, 0, 0), probe.WithAnswers(answers))
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	got := final.Check(context.Background(), all)
	if n := cdn.Requests.Load(); n != 4 {
		t.Errorf("%d requests in all for 4 assets: answers were asked twice", n)
	}
	got.Requests, want.Requests = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the check with answers ahead differs from one that asked everything:\n got %+v\nwant %+v", got, want)
	}

	// A check ended before its requests were answered leaves nothing behind.
	slow := startCDN(t, "/a.js")
	slow.SetLatency(time.Minute)
	cut := probe.NewAnswers()
	c, err := probe.NewCDN([]string{slow.URL}, probe.WithBackoff(probe.NoWait, 0, 0), probe.WithAnswers(cut))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c.Check(ctx, assetsOf("/a.js"))
	slow.SetLatency(0)
	if res := c.Check(context.Background(), assetsOf("/a.js")); stateOf(res, "/a.js") != model.AssetOK {
		t.Errorf("/a.js after a check cut short: %+v", res)
	}
}
