package probe_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

func fleet(t *testing.T, specs []testkit.Spec) *testkit.Fleet {
	t.Helper()
	b := testkit.CRABuild("build", 6, 2)
	for i := range specs {
		if specs[i].Build == nil {
			specs[i].Build = b
		}
	}
	f, err := testkit.StartFleet(specs, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// TestDeadFleetCostsAboutOneAttemptPerInstance: with 3 retries each, 100 dead instances would
// cost 400 requests; the run's budget (20% of answers + 10) holds them to 110, since a dead
// fleet answers nothing.
func TestDeadFleetCostsAboutOneAttemptPerInstance(t *testing.T) {
	specs := make([]testkit.Spec, 100)
	for i := range specs {
		specs[i].Dead = true
	}
	f := fleet(t, specs)
	for _, tc := range []struct {
		name     string
		budget   *probe.Budget
		min, max int
	}{
		{"default budget", probe.NewBudget(0.2, 10), 110, 110},
		{"no budget to speak of", probe.NewBudget(0, 1<<40), 400, 400},
	} {
		rd := &recordingDialer{}
		p := probe.New(probe.WithRetries(3), probe.WithBackoff(probe.NoWait, 0, 0), probe.WithBudget(tc.budget), probe.WithDialer(rd.dial))
		obs := p.Probe(context.Background(), f.Targets())
		for _, o := range obs {
			if o.Reached || !strings.Contains(o.Error, "connection refused") {
				t.Fatalf("%s: %s: %+v", tc.name, o.Target.ID, o)
			}
		}
		if n := p.Requests(); n < tc.min || n > tc.max || len(rd.dialled()) != n {
			t.Errorf("%s: %d requests (%d dials), want %d..%d", tc.name, n, len(rd.dialled()), tc.min, tc.max)
		}
	}
}

// TestProbeEndsByItsDeadline: hanging instances and a per-request timeout far past the run's
// deadline; Probe returns by the deadline and says what it saw.
func TestProbeEndsByItsDeadline(t *testing.T) {
	specs := make([]testkit.Spec, 20)
	for i := range specs {
		specs[i].Hang = i%2 == 0
		specs[i].HangAccept = i%2 == 1
	}
	f := fleet(t, specs)
	p := probe.New(probe.WithConcurrency(4), probe.WithTimeout(time.Minute), probe.WithBackoff(probe.NoWait, 0, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	obs := p.Probe(ctx, f.Targets())
	if took := time.Since(start); took > time.Second { // the deadline + 500ms slack
		t.Errorf("Probe took %s past a 500ms deadline", took)
	}
	for _, o := range obs {
		if o.Reached || o.Error == "" {
			t.Errorf("%s: %+v", o.Target.ID, o)
		}
	}
	if n := p.Requests(); n > 4 {
		t.Errorf("%d requests; at most the 4 in flight were sent", n)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	specs := make([]testkit.Spec, 30)
	for i := range specs {
		specs[i].Latency = 20 * time.Millisecond
	}
	f := fleet(t, specs)
	p := probe.New(probe.WithConcurrency(5))
	for _, o := range p.Probe(context.Background(), f.Targets()) {
		if !o.Reached || o.ManifestInvalid != "" {
			t.Fatalf("%s: %+v", o.Target.ID, o)
		}
	}
	if m := f.MaxInFlight.Load(); m > 5 || m < 2 {
		t.Errorf("at most %d requests in flight, want 2..5", m)
	}
}

// TestRetriedBodiesAreNotRead: go-retryablehttp drains a retried response (up to 4 KiB) and
// closes it; a 503 with a huge body costs neither time nor memory, and the last response is
// kept when retries run out.
func TestRetriedBodiesAreNotRead(t *testing.T) {
	var requests, written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			chunk := make([]byte, 32<<10)
			for range 10000 { // 320 MB, if anyone read it
				if _, err := w.Write(chunk); err != nil {
					return
				}
				written.Add(int64(len(chunk)))
			}
			return
		}
		w.Write([]byte(`{"files": {"main.js": "/static/js/main.js"}}`))
	}))
	defer srv.Close()
	p := probe.New(probe.WithBackoff(probe.NoWait, 0, 0))
	o := p.Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if !o.Reached || o.ManifestInvalid != "" || len(o.Assets) != 1 {
		t.Fatalf("%+v", o)
	}
	if o.Attempts != 2 || requests.Load() != 2 {
		t.Errorf("%d attempts, %d requests; want 2", o.Attempts, requests.Load())
	}
	if w := written.Load(); w > 64<<20 {
		t.Errorf("the server wrote %d MB of the 503's body: the client read it", w>>20)
	}
}

func TestLastResponseKeptWhenRetriesRunOut(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	p := probe.New(probe.WithRetries(2), probe.WithBackoff(probe.NoWait, 0, 0))
	o := p.Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if o.Reached || !strings.Contains(o.Error, "429") || o.Attempts != 3 || requests.Load() != 3 {
		t.Errorf("%d requests: %+v", requests.Load(), o)
	}
}

func TestGzipManifestIsDecoded(t *testing.T) {
	b := testkit.CRABuild("gz", 6, 2)
	var enc atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped(b.Manifest))
	}))
	defer srv.Close()
	o := probe.New().Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if !o.Reached || o.ManifestInvalid != "" || len(o.Assets) != 6 || o.ManifestBytes != int64(len(b.Manifest)) {
		t.Errorf("%+v", o)
	}
	if enc.Load() != "gzip, deflate" {
		t.Errorf("Accept-Encoding %q", enc.Load())
	}
}

func TestHugeHeadersAreRefused(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("X-Big", strings.Repeat("x", 1<<20))
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	o := probe.New(probe.WithBackoff(probe.NoWait, 0, 0)).Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if o.Reached || !strings.Contains(o.Error, "headers exceeded") || requests.Load() != 1 {
		t.Errorf("%d requests: %+v", requests.Load(), o)
	}
}

// TestLongHeadersAreRead: the transport reads through a 1 KiB buffer, far smaller than the
// headers real sites send (a content security policy of many kilobytes, a cookie per
// feature); everything within the 64 KiB cap is read whole.
func TestLongHeadersAreRead(t *testing.T) {
	b := testkit.CRABuild("long", 6, 2)
	csp := "default-src 'self'; script-src " + strings.Repeat("https://cdn.example.test/x ", 600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		for i := range 20 {
			w.Header().Add("Set-Cookie", fmt.Sprintf("feature%d=%s", i, strings.Repeat("v", 1000)))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b.Manifest)
	}))
	defer srv.Close()
	o := probe.New().Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if !o.Reached || o.ManifestInvalid != "" || len(o.Assets) != 6 || o.ManifestBytes != int64(len(b.Manifest)) {
		t.Errorf("%+v", o)
	}
}

// TestErrorBodiesAreNotRead: the body of a final non-2xx answer is not read (beyond 4 KiB), so
// a hostile error page of any size costs nothing.
func TestErrorBodiesAreNotRead(t *testing.T) {
	var requests, written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader([]int{http.StatusNotFound, http.StatusServiceUnavailable}[requests.Load()%2])
		chunk := make([]byte, 32<<10)
		for range 10000 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
		}
	}))
	defer srv.Close()
	o := probe.New(probe.WithRetries(0)).Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if o.Reached || !strings.Contains(o.Error, "503") || requests.Load() != 1 {
		t.Errorf("%d requests: %+v", requests.Load(), o)
	}
	o = probe.New(probe.WithRetries(0)).Probe(context.Background(), []model.Target{{ID: "a", Address: strings.TrimPrefix(srv.URL, "http://")}})[0]
	if !o.Reached || !strings.Contains(o.ManifestInvalid, "404") {
		t.Errorf("%+v", o)
	}
	if w := written.Load(); w > 64<<20 {
		t.Errorf("the server wrote %d MB of error pages: the client read them", w>>20)
	}
}

// TestWrongSchemeIsNotRetried: probing https against an http instance is a configuration
// mistake; asking again gives the same answer.
func TestWrongSchemeIsNotRetried(t *testing.T) {
	f := fleet(t, []testkit.Spec{{}})
	p := probe.New(probe.WithScheme("https"), probe.WithBackoff(probe.NoWait, 0, 0))
	o := p.Probe(context.Background(), f.Targets())[0]
	if o.Reached || !strings.Contains(o.Error, "HTTP response to HTTPS client") || p.Requests() != 1 {
		t.Errorf("%d requests: %+v", p.Requests(), o)
	}
}
