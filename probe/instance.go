package probe

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// Prober fetches manifests and claims from instances.
type Prober struct {
	o        options
	requests atomic.Int64
	large    chan struct{} // large-body slots, see smallBody

	mu     sync.Mutex
	parsed map[string]*parsed // by manifest sha256 and Content-Type: identical bytes are parsed once
}

type parsed struct {
	once       sync.Once
	format     string
	assets     []model.Asset
	assetsHash string
	skipped    int
	invalid    string
}

// largeBodies is how many bodies over smallBody may be buffered at once, run-wide.
const largeBodies = 4

// New returns a Prober.
func New(opts ...Option) *Prober {
	return &Prober{o: build(opts), parsed: map[string]*parsed{}, large: make(chan struct{}, largeBodies)}
}

// Requests returns the number of HTTP requests sent to instances so far: every attempt and
// every redirect hop, including those whose connection failed.
func (p *Prober) Requests() int { return int(p.requests.Load()) }

// Probe probes every target, at most the configured concurrency at once, and returns one
// observation per target in the targets' order. Failing to reach a target is recorded in its
// observation. When ctx ends, targets not yet probed are recorded as unreachable, and Probe
// returns promptly: every request, dial, handshake and body read is bound to ctx.
func (p *Prober) Probe(ctx context.Context, targets []model.Target) []model.Observation {
	obs := make([]model.Observation, len(targets))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(p.o.concurrency, len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				obs[i] = p.probe(ctx, targets[i])
				if p.o.onDone != nil {
					p.o.onDone(obs[i])
				}
			}
		}()
	}
	for i := range targets {
		if ctx.Err() != nil {
			obs[i] = model.Observation{Target: targets[i], Error: "not probed: " + deadlineWords(ctx)}
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			obs[i] = model.Observation{Target: targets[i], Error: "not probed: " + deadlineWords(ctx)}
		}
	}
	close(work)
	wg.Wait()
	return obs
}

func deadlineWords(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "the run's deadline passed"
	}
	return "the run was cancelled"
}

// instance is one instance's HTTP session: its own transport, so its connection is reused for
// its own requests and closed after, and one bad instance cannot disturb another's pool.
type instance struct {
	p        *Prober
	t        model.Target
	client   *retryablehttp.Client
	tr       *http.Transport
	bodies   map[string]*response
	requests atomic.Int64

	mu      sync.Mutex
	cert    *x509.Certificate
	certErr error // verification error of the first certificate seen
}

type response struct {
	status   int
	header   http.Header
	body     []byte
	err      error
	attempts int
}

// CertError is the error of a TLS handshake polygraph aborted because the instance's
// certificate failed verification. The certificate is still recorded as evidence.
type CertError struct {
	Addr string
	Err  error
}

func (e *CertError) Error() string {
	return fmt.Sprintf("certificate of %s fails verification: %s", e.Addr, e.Err)
}

func (e *CertError) Unwrap() error { return e.Err }

func (p *Prober) newInstance(t model.Target) *instance {
	o := &p.o
	in := &instance{p: p, t: t, bodies: map[string]*response{}}
	tr := &http.Transport{
		Proxy:                  nil, // instances are dialled directly, never through a proxy
		DialContext:            o.dial,
		MaxIdleConns:           1,
		MaxIdleConnsPerHost:    1,
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxConnsPerHost:        1,
		IdleConnTimeout:        o.timeout,
		TLSHandshakeTimeout:    o.timeout,
		ResponseHeaderTimeout:  o.timeout,
		ForceAttemptHTTP2:      false,
		DisableCompression:     true, // we ask for and decode gzip/deflate ourselves, capped
	}
	if o.scheme == "https" {
		tr.TLSClientConfig = in.tlsConfig()
	}
	in.tr = tr
	hc := &http.Client{
		Transport:     &countingTransport{next: tr, counters: []*atomic.Int64{&p.requests, &in.requests}},
		Timeout:       o.timeout,
		CheckRedirect: sameHostRedirects,
	}
	in.client = retryClient(hc, o)
	return in
}

// tlsConfig verifies the certificate itself (the documented VerifyConnection pattern), so
// that a certificate failing verification is still recorded as evidence before the handshake
// is aborted: no request is sent over an unverified connection, so its content is never
// trusted. With insecure_skip_verify the handshake goes on and no verification error is
// recorded.
func (in *instance) tlsConfig() *tls.Config {
	o := &in.p.o
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tls != nil {
		tc = o.tls.Clone()
	}
	insecure := tc.InsecureSkipVerify
	name := hostOnly(o.host)
	if name == "" {
		name = hostOnly(in.t.Address)
	}
	tc.ServerName = name
	tc.InsecureSkipVerify = true //nolint:gosec // verified in VerifyConnection below
	roots := tc.RootCAs
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &CertError{Addr: in.t.Address, Err: errors.New("no certificate presented")}
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		vo := x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: inter}
		if tc.Time != nil {
			vo.CurrentTime = tc.Time()
		}
		_, err := leaf.Verify(vo)
		if insecure {
			err = nil
		}
		in.mu.Lock()
		if in.cert == nil {
			in.cert, in.certErr = leaf, err
		}
		in.mu.Unlock()
		if err != nil {
			return &CertError{Addr: in.t.Address, Err: err}
		}
		return nil
	}
	return tc
}

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
	)
	req.SetResponseHandler(func(resp *http.Response) error {
		read = true
		body, bodyErr = in.readIfUseful(ctx, resp)
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
		body, bodyErr = in.readIfUseful(ctx, resp)
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

// readIfUseful reads a 2xx body (capped); other answers are judged by their status alone, so
// of a hostile error page at most 4 KiB is read, to let the connection be reused.
func (in *instance) readIfUseful(ctx context.Context, resp *http.Response) ([]byte, error) {
	if resp.StatusCode/100 == 2 {
		return readBody(ctx, resp, in.p.o.maxBody, in.p.large)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return nil, nil
}

// brokeOff says in plain words why a body broke off.
func brokeOff(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "cut short: fewer bytes than announced"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "timeout"):
		return "timed out while reading it"
	case strings.Contains(msg, "connection reset"):
		return "connection reset"
	}
	return msg
}

// maxHeaderBytes caps the response headers of instances and CDN origins alike (Go's default is
// 10 MB, a lot of memory times the connections in flight).
const maxHeaderBytes = 64 << 10

// describe turns a client error into plain words naming the request ("GET http://...").
func describe(ctx context.Context, err error, what string, st *tries) error {
	if ctx.Err() != nil {
		if st != nil && st.lastStatus != 0 {
			return &wordsErr{msg: fmt.Sprintf("%s: answered %d, then %s before a usable answer", what, st.lastStatus, deadlineWords(ctx)), err: err}
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &wordsErr{msg: what + ": no answer by the run's deadline", err: err}
		}
		return &wordsErr{msg: what + ": the run was cancelled", err: err}
	}
	err = cleanErr(err, what)
	if st != nil && st.n > 1 {
		return fmt.Errorf("%w (after %d attempts)", err, st.n)
	}
	return err
}

// cleanErr turns a client error into plain words naming the request ("GET http://..."),
// keeping the cause for errors.Is/As.
func cleanErr(err error, what string) error {
	var ce *CertError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", what, ce)
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := inner.Error()
	switch {
	case errors.Is(err, context.Canceled):
		msg = "the run was cancelled"
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "timeout"):
		msg = "timed out"
	case strings.Contains(msg, "connection refused"):
		msg = "connection refused"
	case strings.Contains(msg, "connection reset"):
		msg = "connection reset"
	}
	return &wordsErr{msg: what + ": " + msg, err: err}
}

type wordsErr struct {
	msg string
	err error
}

func (e *wordsErr) Error() string { return e.msg }
func (e *wordsErr) Unwrap() error { return e.err }

func (p *Prober) probe(ctx context.Context, t model.Target) model.Observation {
	if t.Unreachable != "" {
		// The fleet source knows there is nothing to dial (an instance with no address of the
		// configured kind): evidence, recorded without a request.
		return model.Observation{Target: t, Error: t.Unreachable}
	}
	in := p.newInstance(t)
	defer in.tr.CloseIdleConnections()
	o := &p.o
	obs := model.Observation{Target: t, ManifestURL: o.scheme + "://" + t.Address + o.manifestPath}
	r := in.get(ctx, o.manifestPath)
	obs.Attempts = int(in.requests.Load())
	in.mu.Lock()
	cert, certErr := in.cert, in.certErr
	in.mu.Unlock()
	if cert != nil {
		obs.TLS = certInfo(cert, hostOnly(o.host))
		if certErr != nil {
			obs.TLS.VerifyError = certErr.Error()
		}
	}
	var ce *CertError
	switch {
	case r.status == 0 && errors.As(r.err, &ce):
		// Evidence collected, content never requested over an untrusted connection.
		obs.Error = fmt.Sprintf("%s: not fetched, the certificate fails verification: %s", obs.ManifestURL, ce.Err)
		return obs
	case r.status == 0:
		obs.Error = r.err.Error()
		return obs
	case r.status >= 500 || r.status == http.StatusTooManyRequests:
		obs.Error = fmt.Sprintf("GET %s answered %d %s after %d attempt(s)", obs.ManifestURL, r.status, http.StatusText(r.status), obs.Attempts)
		return obs
	case r.err != nil && !errors.Is(r.err, ErrTooLarge) && !errors.Is(r.err, ErrEncoding):
		// The answer broke off (reset, truncated, deadline mid-body): nothing usable was said.
		obs.Error = fmt.Sprintf("GET %s answered %d but the body broke off (%s) after %d attempt(s)", obs.ManifestURL, r.status, brokeOff(r.err), obs.Attempts)
		return obs
	}
	obs.Reached = true
	obs.HTTPStatus = r.status
	switch {
	case r.err != nil:
		obs.ManifestInvalid = r.err.Error()
	case r.status >= 300 && r.status < 400:
		obs.ManifestInvalid = fmt.Sprintf("GET %s redirected (%d) to %q, not followed", obs.ManifestURL, r.status, r.header.Get("Location"))
	case r.status != http.StatusOK:
		obs.ManifestInvalid = fmt.Sprintf("GET %s answered %d %s", obs.ManifestURL, r.status, http.StatusText(r.status))
	default:
		sum := sha256.Sum256(r.body)
		obs.ManifestSHA256 = hex.EncodeToString(sum[:])
		obs.ManifestBytes = int64(len(r.body))
		pm := p.parse(obs.ManifestSHA256, r.body, r.header.Get("Content-Type"))
		if pm.invalid != "" {
			obs.ManifestInvalid = pm.invalid
		} else {
			obs.ManifestFormat, obs.Assets, obs.AssetsSHA256, obs.SkippedAssets = pm.format, pm.assets, pm.assetsHash, pm.skipped
		}
	}
	obs.ReportedVersion, obs.VersionError = in.claim(ctx, o.version, r)
	switch o.digest.Source {
	case "http", "header":
		obs.ReportedDigest, obs.DigestError = in.claim(ctx, o.digest.Claim, r)
	case "ec2-tag":
		obs.ReportedDigest = t.ReportedDigest
	}
	if obs.ReportedDigest != "" {
		// A claim is compared in canonical form however the instance spells it; a value that is
		// no digest is no claim at all, never a mismatch.
		if d, ok := model.CanonicalDigest(obs.ReportedDigest); ok {
			obs.ReportedDigest = d
		} else {
			o.logger.Info("reported digest is not a sha256 digest; ignored", "instance", t.ID, "value", obs.ReportedDigest)
			obs.DigestError = fmt.Sprintf("reported digest %q is not a sha256 digest", obs.ReportedDigest)
			obs.ReportedDigest = ""
		}
	}
	return obs
}

// parse parses manifest bytes once per distinct content.
func (p *Prober) parse(sum string, body []byte, contentType string) *parsed {
	// Identical bytes (served with the same Content-Type, which detection weighs) are parsed
	// once, even when many instances answer with a new build at the same moment.
	key := sum + "\x00" + contentType
	p.mu.Lock()
	pm, ok := p.parsed[key]
	if !ok {
		pm = &parsed{}
		p.parsed[key] = pm
	}
	p.mu.Unlock()
	pm.once.Do(func() {
		o := &p.o
		m, err := manifest.Parse(manifest.Format(o.format), body, manifest.Options{
			Path: o.manifestPath, AssetPrefix: o.assetPrefix, ContentType: contentType, SourceMaps: o.sourceMaps,
		})
		if err != nil {
			pm.invalid = err.Error()
			return
		}
		pm.format, pm.assets, pm.skipped = string(m.Format), m.Assets, len(m.Skipped)
		pm.assetsHash = manifest.AssetsSHA256(m.Assets)
	})
	return pm
}

// claim reads a claim: from the JSON body of c.Path at c.Pointer, or a header of that
// response (of the manifest response when c.Path is empty).
func (in *instance) claim(ctx context.Context, c Claim, manifestResp *response) (value, problem string) {
	if c.Path == "" && c.Header == "" {
		return "", ""
	}
	r := manifestResp
	if c.Path != "" {
		r = in.get(ctx, c.Path)
	}
	where := in.p.o.scheme + "://" + in.t.Address + c.Path
	switch {
	case r.err != nil:
		return "", r.err.Error()
	case r.status != http.StatusOK:
		return "", fmt.Sprintf("GET %s answered %d", where, r.status)
	}
	if c.Pointer != "" && c.Path != "" {
		var doc any
		if err := json.Unmarshal(r.body, &doc); err != nil {
			return "", fmt.Sprintf("GET %s: not JSON: %v", where, err)
		}
		v, err := pointer(doc, c.Pointer)
		if err != nil {
			return "", fmt.Sprintf("GET %s: %v", where, err)
		}
		return v, ""
	}
	v := r.header.Get(c.Header)
	if v == "" {
		return "", fmt.Sprintf("no %s header", c.Header)
	}
	return v, ""
}

// certInfo describes a leaf certificate.
func certInfo(cert *x509.Certificate, host string) *model.TLSInfo {
	sum := sha256.Sum256(cert.Raw)
	return &model.TLSInfo{
		NotAfter:    cert.NotAfter.UTC().Truncate(time.Second),
		SHA256:      hex.EncodeToString(sum[:]),
		Subject:     cert.Subject.CommonName,
		MatchesHost: host == "" || cert.VerifyHostname(host) == nil,
	}
}
