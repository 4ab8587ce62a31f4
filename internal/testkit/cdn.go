package testkit

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CDN is a simulated CDN origin serving assets under a path prefix on a loopback address.
type CDN struct {
	// URL is the base URL to configure in cdn.base_urls ("http://127.0.0.1:PORT/store/").
	URL string
	// Prefix is the path prefix assets are served under ("/store/").
	Prefix string
	// Requests counts every request; HEADs counts HEAD requests.
	Requests atomic.Int64
	HEADs    atomic.Int64
	// Ranged counts GETs with "Range: bytes=0-0".
	Ranged atomic.Int64
	// InFlight is the number of requests being answered; MaxInFlight the most at once.
	InFlight, MaxInFlight atomic.Int64

	mu            sync.Mutex
	present       map[string]bool
	failing       map[string]int
	latency       time.Duration
	missingStatus int
	refuseHEAD    int
	perPath       map[string]int
	srv           *http.Server
	ln            net.Listener
}

// StartCDN serves every asset of the given builds under prefix (default "/store/"). Missing
// assets answer 403, as S3 behind CloudFront does.
func StartCDN(prefix string, builds ...*Build) (*CDN, error) {
	if prefix == "" {
		prefix = "/store/"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &CDN{Prefix: prefix, present: map[string]bool{}, failing: map[string]int{}, perPath: map[string]int{}, missingStatus: http.StatusForbidden, ln: ln}
	c.URL = "http://" + ln.Addr().String() + prefix
	for _, b := range builds {
		c.Add(b.Assets...)
	}
	c.srv = &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go c.srv.Serve(ln)
	return c, nil
}

// Add publishes asset paths (root-relative, as in Build.Assets).
func (c *CDN) Add(paths ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		c.present[strings.TrimPrefix(p, "/")] = true
	}
}

// Remove unpublishes asset paths.
func (c *CDN) Remove(paths ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		delete(c.present, strings.TrimPrefix(p, "/"))
	}
}

// Fail makes a path answer status (for example 503) until Fail(path, 0).
func (c *CDN) Fail(path string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if status == 0 {
		delete(c.failing, strings.TrimPrefix(path, "/"))
		return
	}
	c.failing[strings.TrimPrefix(path, "/")] = status
}

// SetLatency adds latency to every answer.
func (c *CDN) SetLatency(d time.Duration) { c.mu.Lock(); c.latency = d; c.mu.Unlock() }

// SetMissingStatus sets the status of missing assets (403 by default; 404 and 410 are common).
func (c *CDN) SetMissingStatus(s int) { c.mu.Lock(); c.missingStatus = s; c.mu.Unlock() }

// RefuseHEAD makes the CDN answer HEAD with 405, as some origins do.
func (c *CDN) RefuseHEAD(on bool) {
	c.RefuseHEADWith(map[bool]int{true: http.StatusMethodNotAllowed}[on])
}

// RefuseHEADWith makes the CDN answer HEAD with status (405 or 501); 0 answers HEAD normally.
func (c *CDN) RefuseHEADWith(status int) { c.mu.Lock(); c.refuseHEAD = status; c.mu.Unlock() }

// Hits returns how many requests asked for path.
func (c *CDN) Hits(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perPath[strings.TrimPrefix(path, "/")]
}

// Close stops the CDN.
func (c *CDN) Close() { c.srv.Close() }

// ServeHTTP answers asset requests.
func (c *CDN) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.Requests.Add(1)
	defer trackInFlight(&c.InFlight, &c.MaxInFlight)()
	if r.Method == http.MethodHead {
		c.HEADs.Add(1)
	}
	if r.Method == http.MethodGet && r.Header.Get("Range") == "bytes=0-0" {
		c.Ranged.Add(1)
	}
	p := strings.TrimPrefix(r.URL.Path, c.Prefix)
	c.mu.Lock()
	c.perPath[p]++
	latency, refuseHEAD, fail, ok, missing := c.latency, c.refuseHEAD, c.failing[p], c.present[p], c.missingStatus
	c.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	switch {
	case !strings.HasPrefix(r.URL.Path, c.Prefix):
		http.Error(w, "not found", http.StatusNotFound)
	case r.Method == http.MethodHead && refuseHEAD != 0:
		http.Error(w, http.StatusText(refuseHEAD), refuseHEAD)
	case fail != 0:
		http.Error(w, http.StatusText(fail), fail)
	case !ok:
		http.Error(w, "AccessDenied", missing)
	default:
		body := AssetBody("/" + p)
		if r.Header.Get("Range") == "bytes=0-0" {
			w.Header().Set("Content-Range", "bytes 0-0/"+strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(body[:1])
			return
		}
		w.Write(body)
	}
}

// ResetHits forgets the per-path request counts.
func (c *CDN) ResetHits() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.perPath = map[string]int{}
}
