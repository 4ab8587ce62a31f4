package run_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/registry"
)

// dialLog records every dial per address and refuses anything outside 127.0.0.0/8: tests send
// traffic to loopback only, even by mistake.
type dialLog struct {
	mu sync.Mutex
	n  map[string]int
}

func newDialLog() *dialLog { return &dialLog{n: map[string]int{}} }

func (d *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.n[addr]++
	d.mu.Unlock()
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("test dialer: %s is not loopback", addr)
	}
	nd := net.Dialer{Timeout: 5 * time.Second}
	return nd.DialContext(ctx, network, addr)
}

func (d *dialLog) count(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[addr]
}

// world is a fleet, its CDN and the config pointing polygraph at them.
type world struct {
	fleet *testkit.Fleet
	cdn   *testkit.CDN
	build *testkit.Build
	cfg   *config.Config
	dials *dialLog
}

type worldOpts struct {
	tls     bool
	caFile  bool   // write the fleet's CA to probe.tls.ca_file
	timeout string // probe.timeout
	retries int
	extra   string // more YAML under probe:
}

func startWorld(t *testing.T, specs []testkit.Spec, wo worldOpts) *world {
	t.Helper()
	b := testkit.CRABuild("store-web v1", 12, 4)
	for i := range specs {
		if specs[i].Build == nil {
			specs[i].Build = b
		}
	}
	cdn, err := testkit.StartCDN("/store/", b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cdn.Close)
	f, err := testkit.StartFleetWith(specs, testkit.FleetOptions{TLS: wo.tls, Host: "store.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	if wo.timeout == "" {
		wo.timeout = "2s"
	}
	if wo.retries == 0 {
		wo.retries = 3
	}
	var y strings.Builder
	y.WriteString("release:\n  version: v1\nfleet:\n  static:\n")
	for _, in := range f.Instances {
		fmt.Fprintf(&y, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	fmt.Fprintf(&y, "probe:\n  scheme: %s\n  host: store.example.com\n  timeout: %s\n  retries: %d\n", f.Scheme, wo.timeout, wo.retries)
	dir := t.TempDir()
	if wo.caFile {
		if err := os.WriteFile(filepath.Join(dir, "ca.pem"), f.CAPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		y.WriteString("  tls: {ca_file: ca.pem}\n")
	}
	y.WriteString(wo.extra)
	fmt.Fprintf(&y, "cdn:\n  base_urls: [%q]\n", cdn.URL)
	cfg, err := config.Parse([]byte(y.String()), filepath.Join(dir, "polygraph.yaml"), dir)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y.String())
	}
	return &world{fleet: f, cdn: cdn, build: b, cfg: cfg, dials: newDialLog()}
}

// slack is how late a run may end after its deadline in these tests: they share a small
// machine with other jobs, and the runtime needs a moment to unwind.
const slack = 500 * time.Millisecond

// verify runs polygraph over the world with fast backoff and a deadline, and checks the run
// ended by it (plus a small slack), the only timed assertion.
func (w *world) verify(t *testing.T, deadline time.Duration, opts ...probe.Option) *model.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	popts := append([]probe.Option{probe.WithBackoff(probe.NoWait, 0, 0), probe.WithDialer(w.dials.dial)}, opts...)
	rep, err := run.Verify(ctx, w.cfg, run.Options{Probe: popts, Registry: loopbackRegistry})
	if took := time.Since(start); took > deadline+slack {
		t.Errorf("the run took %s, past its deadline of %s", took, deadline)
	}
	if rep == nil {
		t.Fatalf("no report: %v", err)
	}
	return rep
}

// kinds returns the finding kinds about instance id (as the instance, or among instances).
func kinds(rep *model.Report, id string) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Instance == id || slices.Contains(f.Instances, id) {
			out = append(out, string(f.Kind))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name string
		spec testkit.Spec
		wo   worldOpts
		opts []probe.Option
		// want is the finding kinds about the faulty instance (web-2).
		want []string
		// requests is the number of HTTP requests web-2's server must have seen, and dials
		// the number of connections the prober opened to it (-1: do not check).
		requests, dials int
		// msg is a substring of web-2's finding messages.
		msg string
	}{
		{name: "refused", spec: testkit.Spec{Dead: true}, want: []string{"unreachable"}, requests: 0, dials: 4, msg: "connection refused"},
		{name: "hanging accept", spec: testkit.Spec{HangAccept: true}, want: []string{"unreachable"}, requests: 0, dials: 4, msg: "timed out"},
		{name: "hanging handler", spec: testkit.Spec{Hang: true}, want: []string{"unreachable"}, requests: 4, dials: 4, msg: "timed out"},
		{name: "reset mid-body", spec: testkit.Spec{ResetMidBody: true}, want: []string{"unreachable"}, requests: 4, dials: 4, msg: "connection reset"},
		{name: "truncated body", spec: testkit.Spec{Truncate: true}, want: []string{"unreachable"}, requests: 4, dials: 4, msg: "cut short"},
		{name: "slow drip", spec: testkit.Spec{Drip: 100 * time.Millisecond}, want: []string{"unreachable"}, requests: 4, dials: 4, msg: "timed out while reading"},
		{name: "503 then 200", spec: testkit.Spec{FailFirst: 1}, want: nil, requests: 2, dials: -1},
		{name: "always 503", spec: testkit.Spec{Status: 503}, want: []string{"unreachable"}, requests: 4, dials: -1, msg: "503"},
		{name: "501 is not retried", spec: testkit.Spec{Status: 501}, want: []string{"unreachable"}, requests: 1, dials: 1, msg: "501"},
		{name: "404 is not retried", spec: testkit.Spec{Status: 404}, want: []string{"manifest-invalid"}, requests: 1, dials: 1, msg: "404"},
		{
			name: "429 with a long Retry-After, capped", spec: testkit.Spec{FailFirst: 1, FailStatus: 429, RetryAfter: "3600"},
			opts: []probe.Option{probe.WithMaxRetryAfter(20 * time.Millisecond)}, want: nil, requests: 2, dials: -1,
		},
		{name: "300 MB body", spec: testkit.Spec{BodySize: 300 << 20}, wo: worldOpts{extra: "  max_body: 1MiB\n"}, want: []string{"manifest-invalid"}, requests: 1, dials: 1, msg: "exceeds the size cap"},
		{name: "300 MB chunked body", spec: testkit.Spec{BodySize: 300 << 20, Chunked: true}, wo: worldOpts{extra: "  max_body: 1MiB\n"}, want: []string{"manifest-invalid"}, requests: 1, dials: 1, msg: "exceeds the size cap"},
		{name: "gzip bomb", spec: testkit.Spec{GzipBomb: 1 << 30}, wo: worldOpts{extra: "  max_body: 1MiB\n"}, want: []string{"manifest-invalid"}, requests: 1, dials: 1, msg: "exceeds the size cap"},
		{name: "redirect loop", spec: testkit.Spec{RedirectLoop: true}, want: []string{"manifest-invalid"}, requests: 5, dials: 1, msg: "redirected"},
		{name: "redirect to another host", spec: testkit.Spec{RedirectTo: "http://127.0.0.1:9/asset-manifest.json"}, want: []string{"manifest-invalid"}, requests: 1, dials: 1, msg: "not followed"},
		{
			name: "expired certificate", spec: testkit.Spec{Cert: testkit.CertExpired}, wo: worldOpts{tls: true, caFile: true},
			want: []string{"cert-expiring", "cert-invalid", "cert-mismatch"}, requests: 0, dials: 1, msg: "expired",
		},
		{
			name: "certificate for another host", spec: testkit.Spec{Cert: testkit.CertWrongHost}, wo: worldOpts{tls: true, caFile: true},
			want: []string{"cert-invalid", "cert-mismatch"}, requests: 0, dials: 1, msg: "wrong-host.example.net",
		},
		{
			name: "untrusted certificate", spec: testkit.Spec{Cert: testkit.CertUntrusted}, wo: worldOpts{tls: true, caFile: true},
			want: []string{"cert-invalid", "cert-mismatch"}, requests: 0, dials: 1, msg: "unknown authority",
		},
		{
			name: "insecure_skip_verify accepts an untrusted certificate", spec: testkit.Spec{Cert: testkit.CertUntrusted},
			wo: worldOpts{tls: true, extra: "  tls: {insecure_skip_verify: true}\n"}, want: []string{"cert-mismatch"}, requests: 1, dials: 1,
		},
		{
			name: "a different valid certificate", spec: testkit.Spec{Cert: testkit.CertOther}, wo: worldOpts{tls: true, caFile: true},
			want: []string{"cert-mismatch"}, requests: 1, dials: 1,
		},
		{
			name: "certificate expiring soon", spec: testkit.Spec{Cert: testkit.CertExpiring}, wo: worldOpts{tls: true, caFile: true},
			want: []string{"cert-expiring", "cert-mismatch"}, requests: 1, dials: 1, msg: "expires",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			specs := []testkit.Spec{{ID: "web-1"}, tc.spec, {ID: "web-3"}}
			specs[1].ID = "web-2"
			w := startWorld(t, specs, tc.wo)
			rep := w.verify(t, 15*time.Second, tc.opts...)
			got := kinds(rep, "web-2")
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings about web-2: %v, want %v\n%s", got, tc.want, findingsText(rep))
			}
			for _, id := range []string{"web-1", "web-3"} {
				if k := kinds(rep, id); len(k) != 0 {
					t.Errorf("findings about healthy %s: %v\n%s", id, k, findingsText(rep))
				}
			}
			in := w.fleet.Instance("web-2")
			if n := int(in.Requests.Load()); n != tc.requests {
				t.Errorf("web-2 saw %d requests, want %d (no retry storm)", n, tc.requests)
			}
			if n := w.dials.count(in.Address); tc.dials >= 0 && n != tc.dials {
				t.Errorf("web-2 was dialled %d times, want %d", n, tc.dials)
			}
			if tc.msg != "" && !strings.Contains(findingsText(rep), tc.msg) {
				t.Errorf("no finding mentions %q:\n%s", tc.msg, findingsText(rep))
			}
		})
	}
}

func findingsText(rep *model.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "  %s %s%v: %s\n", f.Kind, f.Instance, f.Instances, f.Message)
	}
	return b.String()
}

// TestRunEndsByItsDeadline: a fleet that accepts and never answers, a per-request timeout far
// past the run's deadline, and one that drips a byte a second: the run still ends by its deadline, with
// a report of what it saw.
func TestRunEndsByItsDeadline(t *testing.T) {
	specs := []testkit.Spec{{ID: "web-1", Hang: true}, {ID: "web-2", HangAccept: true}, {ID: "web-3", Drip: time.Second}}
	w := startWorld(t, specs, worldOpts{timeout: "1m"})
	rep := w.verify(t, time.Second)
	for _, id := range []string{"web-1", "web-2", "web-3"} {
		if k := kinds(rep, id); !slices.Equal(k, []string{"unreachable"}) {
			t.Errorf("%s: %v", id, k)
		}
	}
	if n := strings.Count(findingsText(rep), "no answer by the run's deadline"); n != 2 {
		t.Errorf("%d findings say the deadline passed, want 2 (web-1, web-2):\n%s", n, findingsText(rep))
	}
}

// TestUntrustedFleet: without probe.tls.ca_file, every certificate of a private CA fails
// verification. That is a cert-invalid finding per instance (exit 1), not "could not verify"
// (exit 3), and no content is fetched over the untrusted connections.
func TestUntrustedFleet(t *testing.T) {
	w := startWorld(t, []testkit.Spec{{ID: "web-1"}, {ID: "web-2"}}, worldOpts{tls: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := run.Verify(ctx, w.cfg, run.Options{Probe: []probe.Option{probe.WithBackoff(probe.NoWait, 0, 0), probe.WithDialer(w.dials.dial)}, Registry: loopbackRegistry})
	if err != nil || rep == nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, id := range []string{"web-1", "web-2"} {
		if k := kinds(rep, id); !slices.Equal(k, []string{"cert-invalid"}) {
			t.Errorf("%s: %v\n%s", id, k, findingsText(rep))
		}
		if n := w.fleet.Instance(id).Requests.Load(); n != 0 {
			t.Errorf("%s answered %d requests over an untrusted connection", id, n)
		}
	}
	for _, in := range rep.Instances {
		if in.TLS == nil || in.TLS.SHA256 == "" || in.TLS.VerifyError == "" || !in.TLS.MatchesHost || in.Status != model.StatusError {
			t.Errorf("%s: status %s, tls %+v", in.ID, in.Status, in.TLS)
		}
	}
}

// TestReplicasEndToEnd: a primary failing with 503 on one asset while the replica serves it is
// asset-degraded (a warning), not asset-missing; an asset the replica lacks is
// asset-replica-missing; each unique URL is asked once per origin (plus one retry of the 503).
func TestReplicasEndToEnd(t *testing.T) {
	w := startWorld(t, []testkit.Spec{{ID: "web-1"}, {ID: "web-2"}}, worldOpts{retries: 1})
	replica, err := testkit.StartCDN("/mirror/", w.build)
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	failing, lagging := w.build.Assets[0], w.build.Assets[1]
	w.cdn.Fail(failing, 503)
	replica.Remove(lagging)
	w.cfg.CDN.BaseURLs = append(w.cfg.CDN.BaseURLs, replica.URL)
	rep := w.verify(t, 15*time.Second)
	byKind := map[model.Kind][]model.Finding{}
	for _, f := range rep.Findings {
		byKind[f.Kind] = append(byKind[f.Kind], f)
	}
	if d := byKind[model.KindAssetDegraded]; len(d) != 1 || !strings.HasSuffix(d[0].URL, failing) || !slices.Equal(d[0].Instances, []string{"web-1", "web-2"}) {
		t.Errorf("asset-degraded: %+v", d)
	}
	if r := byKind[model.KindAssetReplicaMissing]; len(r) != 1 || !strings.HasPrefix(r[0].URL, replica.URL) || !strings.HasSuffix(r[0].URL, lagging) {
		t.Errorf("asset-replica-missing: %+v", r)
	}
	if len(byKind[model.KindAssetMissing]) != 0 || len(byKind[model.KindAssetUnchecked]) != 0 || rep.Verdict != "warn" {
		t.Errorf("verdict %s:\n%s", rep.Verdict, findingsText(rep))
	}
	for _, a := range w.build.Assets {
		want := 1
		if a == failing {
			want = 2
		}
		if n := w.cdn.Hits(a); n != want {
			t.Errorf("%s asked %d times on the primary, want %d", a, n, want)
		}
		if n := replica.Hits(a); n != 1 {
			t.Errorf("%s asked %d times on the replica, want 1", a, n)
		}
	}
}

// loopbackRegistry keeps any registry traffic of these tests on loopback.
var loopbackRegistry = []registry.Option{registry.WithTransport(testkit.LoopbackTransport()), registry.WithCacheDir("")}
