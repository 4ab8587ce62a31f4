package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	// LaunchedAt is reported as the instance's launch time.
	LaunchedAt time.Time
	// Labels are carried into targets.
	Labels map[string]string
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

	srv    *http.Server
	byAddr map[string]*Instance
	done   chan struct{}
	wg     sync.WaitGroup
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

// StartFleet starts one server per spec, each on its own loopback address with an ephemeral
// port. Close stops them.
func StartFleet(specs []Spec, manifestPath string) (*Fleet, error) {
	if manifestPath == "" {
		manifestPath = "/asset-manifest.json"
	}
	f := &Fleet{ManifestPath: manifestPath, byAddr: map[string]*Instance{}, done: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	for i, s := range specs {
		if s.ID == "" {
			s.ID = fmt.Sprintf("web-%d", i+1)
		}
		in := &Instance{Spec: s}
		ln, err := net.Listen("tcp", NextAddr()+":0")
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("binding instance %s: %w", s.ID, err)
		}
		in.Address = ln.Addr().String()
		f.Instances = append(f.Instances, in)
		f.byAddr[in.Address] = in
		if s.Dead {
			ln.Close() // nothing listens there any more: connections are refused
			continue
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.srv.Serve(ln)
		}()
	}
	return f, nil
}

// Close stops every instance.
func (f *Fleet) Close() {
	select {
	case <-f.done:
		return
	default:
	}
	close(f.done)
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
	in.Requests.Add(1)
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
