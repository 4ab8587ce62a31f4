package probe

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// Prober fetches manifests and claims from instances.
type Prober struct {
	o        options
	requests atomic.Int64
	fds      fdWatch
	large    chan struct{} // large-body slots, see smallBody
	// unannounced holds, per path, the size of the last body whose length the answer did not
	// give (chunked, or encoded): the first guess for the next one (readBody). A manifest and
	// a claim endpoint differ in size, so each path has its own.
	unannounced sync.Map // path -> *atomic.Int64

	mu     sync.Mutex
	parsed map[parseKey]*parsed // identical bytes are parsed once
	unions map[string]*parsed   // by the manifests' keys, for probe.manifest.paths
	certs  map[model.TLSInfo]*model.TLSInfo
	chains map[[sha256.Size]byte]chainVerdict // see verifyChain
}

// parseKey identifies a manifest by its bytes, the Content-Type it was served with (which
// format detection weighs) and its path (which relative references resolve against).
type parseKey struct {
	sum         [sha256.Size]byte
	contentType string
	path        string
}

// parsed is one distinct manifest, shared by every instance that serves it: its hex digest
// too, so 10,000 instances of one build hold one copy of it.
type parsed struct {
	sum        string
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
	return &Prober{o: build(opts), parsed: map[parseKey]*parsed{}, unions: map[string]*parsed{}, certs: map[model.TLSInfo]*model.TLSInfo{},
		chains: map[[sha256.Size]byte]chainVerdict{},
		large:  make(chan struct{}, largeBodies)}
}

// Requests returns the number of HTTP requests sent to instances so far: every attempt and
// every redirect hop, including those whose connection failed.
func (p *Prober) Requests() int { return int(p.requests.Load()) }

// OutOfFiles reports whether a dial failed because polygraph ran out of file descriptors
// (ErrNoFileDescriptors): the observations of such a run blame instances for a local limit.
func (p *Prober) OutOfFiles() bool { return p.fds.hit.Load() }

// Probe probes every target, at most the configured concurrency at once, and returns one
// observation per target in the targets' order. Failing to reach a target is recorded in its
// observation. When ctx ends, targets not yet probed are recorded as unreachable, and Probe
// returns promptly: every request, dial, handshake and body read is bound to ctx.
func (p *Prober) Probe(ctx context.Context, targets []model.Target) []model.Observation {
	return p.ProbeCompact(ctx, targets).All()
}

// ProbeCompact is Probe with the observations left as compact records (see Observations), for
// a caller that reads each observation as it needs it rather than holding them all.
func (p *Prober) ProbeCompact(ctx context.Context, targets []model.Target) *Observations {
	recs := newRecords(&p.o, len(targets))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(p.o.concurrency, len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				o := p.probe(ctx, targets[i])
				if p.o.onDone != nil {
					p.o.onDone(o)
				}
				recs.put(i, o)
			}
		}()
	}
	for i := range targets {
		if ctx.Err() != nil {
			recs.put(i, model.Observation{Target: targets[i], Error: "not probed: " + deadlineWords(ctx)})
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			recs.put(i, model.Observation{Target: targets[i], Error: "not probed: " + deadlineWords(ctx)})
		}
	}
	close(work)
	wg.Wait()
	return &Observations{recs: recs, targets: targets}
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

func (p *Prober) newInstance(t model.Target) *instance {
	o := &p.o
	in := &instance{p: p, t: t, bodies: map[string]*response{}}
	tr := &http.Transport{
		Proxy:                  nil, // instances are dialled directly, never through a proxy
		DialContext:            p.fds.dial(o.dial),
		MaxIdleConns:           1,
		MaxIdleConnsPerHost:    1,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// One small request and one answer per connection: Go's 4 KiB buffers each way would
		// be 80 MB allocated per 10,000 instances. Longer header lines are read in pieces,
		// and a body bigger than the buffer is read straight into the body's own.
		WriteBufferSize:       512,
		ReadBufferSize:        1024,
		MaxConnsPerHost:       1,
		IdleConnTimeout:       o.timeout,
		TLSHandshakeTimeout:   o.timeout,
		ResponseHeaderTimeout: o.timeout,
		ForceAttemptHTTP2:     false,
		DisableCompression:    true, // we ask for and decode gzip/deflate ourselves, capped
	}
	if o.scheme == "https" {
		tr.TLSClientConfig = in.tlsConfig()
	}
	in.tr = tr
	// The per-request timeout is the transport's (see countingTransport), as for the CDN:
	// http.Client.Timeout would keep two more goroutines alive for every request in flight
	// (its deadline timer and the legacy Request.Cancel watcher), about 2 MB of stacks at a
	// concurrency of 128.
	hc := &http.Client{
		Transport:     &countingTransport{next: tr, counters: []*atomic.Int64{&p.requests, &in.requests}, timeout: o.timeout},
		CheckRedirect: sameHostRedirects,
	}
	in.client = retryClient(hc, o)
	return in
}

func (p *Prober) probe(ctx context.Context, t model.Target) model.Observation {
	if t.Unreachable != "" {
		// The fleet source knows there is nothing to dial (an instance with no address of the
		// configured kind): evidence, recorded without a request.
		return model.Observation{Target: t, Error: t.Unreachable}
	}
	in := p.newInstance(t)
	defer in.tr.CloseIdleConnections()
	defer in.release()
	o := &p.o
	obs := model.Observation{Target: t, ManifestURL: o.scheme + "://" + t.Address + o.manifestPath}
	r := in.get(ctx, o.manifestPath)
	obs.Attempts = int(in.requests.Load())
	in.mu.Lock()
	cert, certErr := in.cert, in.certErr
	in.mu.Unlock()
	if cert != nil {
		info := certInfo(cert, hostOnly(o.host))
		if certErr != nil {
			info.VerifyError = certErr.Error()
		}
		obs.TLS = p.sameTLS(info)
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
		pm := p.parse(o.manifestPath, sha256.Sum256(r.body), r.body, r.header.Get("Content-Type"))
		obs.ManifestSHA256 = pm.sum
		obs.ManifestBytes = int64(len(r.body))
		if pm.invalid != "" {
			obs.ManifestInvalid = pm.invalid
		} else {
			obs.ManifestFormat, obs.Assets, obs.AssetsSHA256, obs.SkippedAssets = pm.format, pm.assets, pm.assetsHash, pm.skipped
			if len(o.morePaths) > 0 {
				p.moreManifests(ctx, in, &obs, pm)
			}
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
func (p *Prober) parse(path string, sum [sha256.Size]byte, body []byte, contentType string) *parsed {
	// Identical bytes (served with the same Content-Type, which detection weighs, at the same
	// path, which relative references resolve against) are parsed once, even when many
	// instances answer with a new build at the same moment.
	key := parseKey{sum, contentType, path}
	p.mu.Lock()
	pm, ok := p.parsed[key]
	if !ok {
		pm = &parsed{sum: hex.EncodeToString(sum[:])}
		p.parsed[key] = pm
	}
	p.mu.Unlock()
	pm.once.Do(func() {
		o := &p.o
		m, err := manifest.Parse(manifest.Format(o.format), body, manifest.Options{
			Path: path, AssetPrefix: o.assetPrefix, ContentType: contentType, SourceMaps: o.sourceMaps, MaxAssets: o.maxAssets,
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
