package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"
)

// countingTransport counts every request it sends, waits for a rate limiter when set, and
// refuses any request to a host other than onlyHost (defence in depth behind CDN.Resolve).
// With timeout set, each request gets that long from the moment it is sent (after the rate
// limiter let it go) until its body is closed: time queued behind the limiter is not held
// against the request, and a request that would only be sent after the run's deadline is not
// sent at all.
type countingTransport struct {
	next     http.RoundTripper
	counters []*atomic.Int64
	limiter  *rate.Limiter
	onlyHost string
	timeout  time.Duration
}

// errRateDeadline is the error of a request the rate limiter would only release after the
// run's deadline.
var errRateDeadline = errors.New("not sent: the rate limit would not release it before the run's deadline")

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.onlyHost != "" && req.URL.Scheme+"://"+req.URL.Host != c.onlyHost {
		return nil, fmt.Errorf("%w: %s is not on %s", errRedirect, req.URL.Redacted(), c.onlyHost)
	}
	if c.limiter != nil {
		if err := c.limiter.Wait(req.Context()); err != nil {
			if req.Context().Err() != nil {
				return nil, req.Context().Err()
			}
			return nil, errRateDeadline
		}
	}
	for _, n := range c.counters {
		n.Add(1)
	}
	if c.timeout <= 0 {
		return c.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), c.timeout)
	resp, err := c.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// CloseIdleConnections forwards to the wrapped transport: go-retryablehttp calls it after a
// request fails with an error, which is why every origin has a transport of its own.
func (c *countingTransport) CloseIdleConnections() {
	if ci, ok := c.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// cancelOnClose ends a request's own timeout when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// sameHostRedirects follows redirects on the same host and scheme for at most 5 requests in
// all (so a redirect loop costs 5 requests), and never to another host or scheme: the 3xx
// answer is then the response.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return http.ErrUseLastResponse
	}
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// release hands the instance's bodies back for reuse, once its observation holds all it
// keeps of them.
func (in *instance) release() {
	for _, r := range in.bodies {
		putBody(r.body)
		r.body = nil
	}
}

// get fetches path once per instance (claims and the manifest may share a path).
func (in *instance) get(ctx context.Context, path string) *response {
	if r, ok := in.bodies[path]; ok {
		return r
	}
	r := in.fetch(ctx, path)
	in.bodies[path] = r
	return r
}

// fetch GETs path with retries. The body is read inside go-retryablehttp's response handler,
// so a body that breaks off (reset, truncated) is retried like any connection error.
func (in *instance) fetch(ctx context.Context, path string) *response {
	o := &in.p.o
	u := o.scheme + "://" + in.t.Address + path
	st := &tries{}
	ctx = context.WithValue(ctx, triesKey{}, st)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &response{err: fmt.Errorf("building request for %s: %w", u, err)}
	}
	if o.host != "" {
		req.Host = o.host
	}
	req.Header.Set("User-Agent", "polygraph")
	req.Header.Set("Accept", "application/json, text/html;q=0.5, */*;q=0.1")
	for k, v := range o.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept-Encoding", acceptEncoding)
	var (
		body    []byte
		bodyErr error
		read    bool
		guess   = in.p.sizeGuess(path)
	)
	req.SetResponseHandler(func(resp *http.Response) error {
		read = true
		body, bodyErr = in.readIfUseful(ctx, resp, guess)
		resp.Body.Close()
		return bodyErr
	})
	resp, err := in.client.Do(req)
	r := &response{attempts: st.n}
	if resp == nil {
		r.err = describe(ctx, err, "GET "+u, st)
		return r
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	if !read { // the last of retryable answers (503 after retries): kept, its status is what counts
		body, bodyErr = in.readIfUseful(ctx, resp, guess)
	}
	r.body = body
	switch {
	case bodyErr != nil && (errors.Is(bodyErr, ErrTooLarge) || errors.Is(bodyErr, ErrEncoding)):
		r.err = fmt.Errorf("GET %s: %w", u, bodyErr)
	case bodyErr != nil:
		r.err = bodyErr
	case err != nil:
		r.err = describe(ctx, err, "GET "+u, st)
	}
	return r
}

// sizeGuess returns the size guess of a path's unannounced bodies; paths are the config's
// (manifest and claim paths), a handful.
func (p *Prober) sizeGuess(path string) *atomic.Int64 {
	if g, ok := p.unannounced.Load(path); ok {
		return g.(*atomic.Int64)
	}
	g, _ := p.unannounced.LoadOrStore(path, new(atomic.Int64))
	return g.(*atomic.Int64)
}

// readIfUseful reads a 2xx body (capped), guess being the size guess of the path asked for
// (never of a path redirected to, which the instance chooses); other answers are judged by
// their status alone, so of a hostile error page at most 4 KiB is read, to let the
// connection be reused.
func (in *instance) readIfUseful(ctx context.Context, resp *http.Response, guess *atomic.Int64) ([]byte, error) {
	if resp.StatusCode/100 == 2 {
		return readBody(ctx, resp, in.p.o.maxBody, in.p.large, guess)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return nil, nil
}

// maxHeaderBytes caps the response headers of instances and CDN origins alike (Go's default is
// 10 MB, a lot of memory times the connections in flight).
const maxHeaderBytes = 64 << 10
