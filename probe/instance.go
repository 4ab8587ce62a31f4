package probe

import (
	"bytes"
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
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe/manifest"
)

// Prober fetches manifests and claims from instances.
type Prober struct {
	o        options
	attempts counter

	mu     sync.Mutex
	parsed map[string]*parsed // by manifest sha256: identical bytes are parsed once
}

type parsed struct {
	format     string
	assets     []model.Asset
	assetsHash string
	skipped    int
	invalid    string
}

// New returns a Prober.
func New(opts ...Option) *Prober {
	return &Prober{o: build(opts), parsed: map[string]*parsed{}}
}

// Requests returns the number of HTTP requests sent to instances so far.
func (p *Prober) Requests() int { return int(p.attempts.n.Load()) }

// Probe probes every target, at most the configured concurrency at once, and returns one
// observation per target in the targets' order. Failing to reach a target is recorded in its
// observation. When ctx ends, targets not yet probed are recorded as unreachable.
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
		work <- i
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
// its own requests and closed after.
type instance struct {
	p      *Prober
	t      model.Target
	client *retryablehttp.Client
	tr     *http.Transport
	bodies map[string]*response
	cert   *x509.Certificate
}

type response struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (p *Prober) newInstance(t model.Target) *instance {
	o := &p.o
	tr := &http.Transport{
		Proxy:                 nil, // instances are dialled directly, never through a proxy
		DialContext:           o.dial,
		MaxIdleConns:          1,
		MaxIdleConnsPerHost:   1,
		IdleConnTimeout:       o.timeout,
		TLSHandshakeTimeout:   o.timeout,
		ResponseHeaderTimeout: o.timeout,
		ForceAttemptHTTP2:     false,
	}
	if o.scheme == "https" {
		tc := &tls.Config{}
		if o.tls != nil {
			tc = o.tls.Clone()
		}
		tc.ServerName = hostOnly(o.host)
		if tc.ServerName == "" {
			tc.ServerName = hostOnly(t.Address)
		}
		tr.TLSClientConfig = tc
	}
	hc := &http.Client{Transport: tr, Timeout: o.timeout, CheckRedirect: sameHostRedirects}
	return &instance{
		p: p, t: t, tr: tr,
		client: retryClient(hc, o.retries, o.backoff, o.waitMin, o.waitMax, o.maxRetryAfter, o.budget, &p.attempts),
		bodies: map[string]*response{},
	}
}

// sameHostRedirects follows at most 5 redirects, and never to another host or scheme.
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

func (in *instance) fetch(ctx context.Context, path string) *response {
	o := &in.p.o
	u := o.scheme + "://" + in.t.Address + path
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
	resp, err := in.client.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return &response{err: cleanErr(err, "GET "+u)}
	}
	defer resp.Body.Close()
	r := &response{status: resp.StatusCode, header: resp.Header}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 && in.cert == nil {
		in.cert = resp.TLS.PeerCertificates[0]
	}
	body, err := readCapped(resp.Body, o.maxBody)
	r.body = body
	if err != nil {
		r.err = fmt.Errorf("reading %s: %w", u, err)
	}
	return r
}

// ErrTooLarge is returned when a body exceeds its cap.
var ErrTooLarge = errors.New("body exceeds the size cap")

// readCapped reads at most limit bytes; more is ErrTooLarge.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return buf.Bytes(), err
	}
	if n > limit {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// cleanErr turns a client error into plain words naming the request ("GET http://...").
func cleanErr(err error, what string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "Client.Timeout"):
		msg = "timed out"
	case strings.Contains(msg, "connection refused"):
		msg = "connection refused"
	case strings.Contains(msg, "connection reset"):
		msg = "connection reset"
	}
	return fmt.Errorf("%s: %s", what, msg)
}

func (p *Prober) probe(ctx context.Context, t model.Target) model.Observation {
	in := p.newInstance(t)
	defer in.tr.CloseIdleConnections()
	o := &p.o
	obs := model.Observation{Target: t, ManifestURL: o.scheme + "://" + t.Address + o.manifestPath}
	before := p.attempts.n.Load()
	r := in.get(ctx, o.manifestPath)
	obs.Attempts = int(p.attempts.n.Load() - before)
	switch {
	case r.err != nil && r.status == 0:
		obs.Error = r.err.Error()
		return obs
	case r.status >= 500:
		obs.Error = fmt.Sprintf("GET %s answered %d %s after %d attempt(s)", obs.ManifestURL, r.status, http.StatusText(r.status), obs.Attempts)
		return obs
	}
	obs.Reached = true
	obs.HTTPStatus = r.status
	if in.cert != nil {
		obs.TLS = certInfo(in.cert, hostOnly(o.host))
	}
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
	return obs
}

// parse parses manifest bytes once per distinct content.
func (p *Prober) parse(sum string, body []byte, contentType string) *parsed {
	p.mu.Lock()
	pm, ok := p.parsed[sum]
	p.mu.Unlock()
	if ok {
		return pm
	}
	o := &p.o
	pm = &parsed{}
	m, err := manifest.Parse(manifest.Format(o.format), body, manifest.Options{
		Path: o.manifestPath, AssetPrefix: o.assetPrefix, ContentType: contentType, SourceMaps: o.sourceMaps,
	})
	if err != nil {
		pm.invalid = err.Error()
	} else {
		pm.format, pm.assets, pm.skipped = string(m.Format), m.Assets, len(m.Skipped)
		pm.assetsHash = manifest.AssetsSHA256(m.Assets)
	}
	p.mu.Lock()
	p.parsed[sum] = pm
	p.mu.Unlock()
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
