package testkit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// Spec describes one simulated instance.
type Spec struct {
	// ID names the instance; the default is "web-N".
	ID string
	// Build is what it serves at the manifest path.
	Build *Build
	// Version is the version it claims (at /version, /_meta and the X-App-Version header).
	Version string
	// Digest is the image digest it reports about itself (at /_meta and X-Image-Digest).
	Digest string
	// Latency is added before every answer.
	Latency time.Duration
	// Dead instances refuse connections.
	Dead bool
	// Hang instances accept connections and never answer.
	Hang bool
	// Status, when set, answers every request with this status code.
	Status int
	// HangAccept instances listen but never accept: connections complete in the kernel's
	// backlog and then nothing happens, not even a TLS handshake.
	HangAccept bool
	// FailFirst answers the first FailFirst requests with FailStatus (default 503), with
	// RetryAfter as the Retry-After header when set; later requests are answered normally.
	FailFirst  int
	FailStatus int
	// FailRequests lists request numbers (1 for the first) answered with FailStatus too, as
	// an instance that answers, then fails for a moment, then answers again.
	FailRequests []int
	RetryAfter   string
	// ResetMidBody sends the manifest's headers and half its bytes, then resets the connection.
	ResetMidBody bool
	// Truncate declares a Content-Length longer than the manifest it sends, then closes.
	Truncate bool
	// BodySize, when set, streams this many bytes at the manifest path instead of the build,
	// generated on the fly and never held in memory. Chunked omits the Content-Length.
	BodySize int64
	Chunked  bool
	// GzipBomb, when set, answers the manifest path gzip-encoded with a valid JSON document that
	// decodes to this many bytes (whatever Accept-Encoding said).
	GzipBomb int64
	// RedirectLoop answers the manifest path with a redirect to itself, forever.
	RedirectLoop bool
	// RedirectTo answers the manifest path with a redirect to this URL.
	RedirectTo string
	// Drip sends the manifest one byte per Drip.
	Drip time.Duration
	// Cert is the certificate an https fleet's instance presents; the default is the fleet's
	// shared certificate.
	Cert CertKind
	// LaunchedAt is reported as the instance's launch time.
	LaunchedAt time.Time
	// Labels are carried into targets.
	Labels map[string]string
	// Runtime, when set, is what the instance's Docker Engine API reports it runs, served on
	// the instance's own address (see Fleet.docker); nil answers "No such container".
	Runtime *Runtime
}

// Instance is one running simulated instance.
type Instance struct {
	Spec
	// Address is its host:port on a loopback address of its own.
	Address string
	// Requests counts the requests it answered (or began to).
	Requests atomic.Int64

	mu sync.Mutex
}

// Set changes an instance's spec while it runs (for example to re-deploy another build).
func (in *Instance) Set(f func(*Spec)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	f(&in.Spec)
}

func (in *Instance) spec() Spec {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.Spec
}

// Fleet is a set of simulated instances, each served on its own loopback address.
type Fleet struct {
	Instances []*Instance
	// ManifestPath is where instances serve their build's manifest.
	ManifestPath string

	// Scheme is http, or https for a fleet started with FleetOptions.TLS.
	Scheme string
	// Host is the name https certificates are issued for (FleetOptions.Host).
	Host string
	// CAPEM is the PEM of the CA that issued the fleet's certificates (https fleets only), for
	// probe.tls.ca_file; CAPool holds the same CA.
	CAPEM  []byte
	CAPool *x509.CertPool

	// InFlight is the number of requests being answered across the fleet; MaxInFlight the most
	// there ever were at once.
	InFlight, MaxInFlight atomic.Int64

	srv       *http.Server
	byAddr    map[string]*Instance
	done      chan struct{}
	wg        sync.WaitGroup
	listeners []net.Listener
}

// FleetOptions configures StartFleetWith.
type FleetOptions struct {
	// ManifestPath is where instances serve their build's manifest; the default is
	// "/asset-manifest.json".
	ManifestPath string
	// TLS serves https with certificates issued in-process by a CA of the fleet's own.
	TLS bool
	// Host is the name the certificates cover (probe.host), beside every instance's address.
	Host string
	// SamePort binds every instance on one port (each on its own address), as a fleet
	// discovered from EC2 with one fleet.ec2.port.
	SamePort bool
}

// next hands out loopback addresses: 127.0.1.1, 127.0.1.2, ... 127.0.1.254, 127.0.2.1, ...
var next atomic.Uint32

// NextAddr returns a loopback IP no other fleet of this process uses.
func NextAddr() string {
	n := next.Add(1) - 1
	third, fourth := 1+n/254, 1+n%254
	second := third / 256
	third %= 256
	return fmt.Sprintf("127.%d.%d.%d", second, third, fourth)
}

// listen binds the next loopback address, on the port of the first listener when samePort
// is set (trying later addresses when that port is taken there).
func listen(before []net.Listener, samePort bool) (net.Listener, error) {
	if !samePort || len(before) == 0 {
		return net.Listen("tcp", NextAddr()+":0")
	}
	port := before[0].Addr().(*net.TCPAddr).Port
	var err error
	for range 20 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", fmt.Sprintf("%s:%d", NextAddr(), port)); err == nil {
			return ln, nil
		}
	}
	return nil, err
}

// StartFleet starts one server per spec, each on its own loopback address with an ephemeral
// port. Close stops them.
func StartFleet(specs []Spec, manifestPath string) (*Fleet, error) {
	return StartFleetWith(specs, FleetOptions{ManifestPath: manifestPath})
}

// StartFleetWith starts one server per spec, each on its own loopback address with an
// ephemeral port, over http or https. Close stops them.
func StartFleetWith(specs []Spec, fo FleetOptions) (*Fleet, error) {
	if fo.ManifestPath == "" {
		fo.ManifestPath = "/asset-manifest.json"
	}
	f := &Fleet{ManifestPath: fo.ManifestPath, Scheme: "http", Host: fo.Host, byAddr: map[string]*Instance{}, done: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // handshakes refused by the prober are expected
	lns := make([]net.Listener, len(specs))
	var ips []net.IP
	for i, s := range specs {
		if s.ID == "" {
			s.ID = fmt.Sprintf("web-%d", i+1)
		}
		in := &Instance{Spec: s}
		ln, err := listen(lns[:i], fo.SamePort)
		if err != nil {
			f.closeListeners(lns)
			return nil, fmt.Errorf("binding instance %s: %w", s.ID, err)
		}
		lns[i] = ln
		in.Address = ln.Addr().String()
		ips = append(ips, ln.Addr().(*net.TCPAddr).IP)
		f.Instances = append(f.Instances, in)
		f.byAddr[in.Address] = in
	}
	var certs *fleetCerts
	if fo.TLS {
		var err error
		if certs, err = newFleetCerts(fo.Host, ips); err != nil {
			f.closeListeners(lns)
			return nil, err
		}
		f.Scheme, f.CAPEM = "https", certs.ca.pem
		f.CAPool = x509.NewCertPool()
		f.CAPool.AddCert(certs.ca.cert)
	}
	for _, in := range f.Instances {
		if in.GzipBomb > 0 {
			gzipBomb(in.GzipBomb) // compress before serving, not on the first request's clock
		}
	}
	for i, in := range f.Instances {
		ln := lns[i]
		switch {
		case in.Dead:
			ln.Close() // nothing listens there any more: connections are refused
			continue
		case in.HangAccept:
			f.listeners = append(f.listeners, ln) // never accepted; closed by Close
			continue
		}
		if certs != nil {
			cert, err := certs.get(in.Cert)
			if err != nil {
				f.closeListeners(lns[i:])
				f.Close()
				return nil, err
			}
			ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.srv.Serve(ln)
		}()
	}
	return f, nil
}

func (f *Fleet) closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// Close stops every instance.
func (f *Fleet) Close() {
	select {
	case <-f.done:
		return
	default:
	}
	close(f.done)
	f.closeListeners(f.listeners)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		f.srv.Close()
	}
	f.wg.Wait()
}

// Targets returns the fleet as probe targets.
func (f *Fleet) Targets() []model.Target {
	ts := make([]model.Target, len(f.Instances))
	for i, in := range f.Instances {
		s := in.spec()
		ts[i] = model.Target{ID: s.ID, Address: in.Address, Labels: s.Labels, LaunchedAt: s.LaunchedAt, Source: "static"}
	}
	return ts
}

// Instance returns the instance with the given ID, or nil.
func (f *Fleet) Instance(id string) *Instance {
	for _, in := range f.Instances {
		if in.ID == id {
			return in
		}
	}
	return nil
}

func (f *Fleet) serve(w http.ResponseWriter, r *http.Request) {
	addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	in := f.byAddr[addrString(addr)]
	if in == nil {
		http.Error(w, "no such instance", http.StatusMisdirectedRequest)
		return
	}
	n := in.Requests.Add(1)
	defer trackInFlight(&f.InFlight, &f.MaxInFlight)()
	s := in.spec()
	if s.Hang {
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if s.Version != "" {
		w.Header().Set("X-App-Version", s.Version)
	}
	if s.Digest != "" {
		w.Header().Set("X-Image-Digest", s.Digest)
	}
	if s.Status != 0 {
		http.Error(w, http.StatusText(s.Status), s.Status)
		return
	}
	if int(n) <= s.FailFirst || slices.Contains(s.FailRequests, int(n)) {
		status := s.FailStatus
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		if s.RetryAfter != "" {
			w.Header().Set("Retry-After", s.RetryAfter)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	if r.URL.Path == f.ManifestPath && f.fault(w, r, s) {
		return
	}
	if f.docker(w, r, s) {
		return
	}
	switch r.URL.Path {
	case f.ManifestPath:
		if s.Build == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", s.Build.ContentType)
		w.Write(s.Build.Manifest)
	case "/version":
		writeJSON(w, map[string]string{"version": s.Version})
	case "/_meta":
		writeJSON(w, map[string]any{"version": s.Version, "image": map[string]string{"digest": s.Digest}})
	default:
		// An SPA fallback: every other path answers 200 with the index page.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><html><head><title>store</title></head><body><div id=root></div></body></html>\n"))
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		return
	}
}

// trackInFlight counts a request in flight and keeps the maximum; call the result when done.
func trackInFlight(cur, peak *atomic.Int64) func() {
	n := cur.Add(1)
	for {
		p := peak.Load()
		if n <= p || peak.CompareAndSwap(p, n) {
			break
		}
	}
	return func() { cur.Add(-1) }
}
