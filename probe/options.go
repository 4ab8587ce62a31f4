package probe

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// Claim locates a claim an instance makes: a JSON pointer into the body of Path, or a response
// header (of Path, or of the manifest response when Path is empty).
type Claim struct {
	Path    string
	Pointer string
	Header  string
}

// DigestClaim locates the image digest an instance runs or reports.
type DigestClaim struct {
	// Source is http, header or ec2-tag (claims; the target carries ec2-tag digests).
	Source string
	Claim
}

// DialFunc dials a network address; tests inject one that records attempts.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Option configures a Prober or a CDN checker.
type Option func(*options)

type options struct {
	scheme        string
	host          string
	manifestPath  string
	morePaths     []string // probe.manifest.paths after the first
	format        string
	assetPrefix   string
	sourceMaps    bool
	maxAssets     int
	version       Claim
	digest        DigestClaim
	concurrency   int
	timeout       time.Duration
	retries       int
	backoff       Backoff
	waitMin       time.Duration
	waitMax       time.Duration
	maxRetryAfter time.Duration
	budget        *Budget
	maxBody       int64
	tls           *tls.Config
	headers       map[string]string
	logger        *slog.Logger
	dial          DialFunc
	onDone        func(model.Observation)
	rate          float64
	replicas      bool
	integrity     bool
	exclude       []string
	answers       *Answers
	ahead         <-chan struct{}
}

func defaults() options {
	return options{
		scheme:        "http",
		manifestPath:  "/asset-manifest.json",
		format:        "auto",
		concurrency:   64,
		timeout:       5 * time.Second,
		retries:       3,
		backoff:       FullJitter,
		waitMin:       100 * time.Millisecond,
		waitMax:       5 * time.Second,
		maxRetryAfter: 10 * time.Second,
		maxBody:       16 << 20,
		replicas:      true,
	}
}

// WithScheme sets http or https. The default is http.
func WithScheme(s string) Option { return func(o *options) { o.scheme = s } }

// WithHost sets the Host header and TLS SNI sent to every instance. The default is the
// instance's address.
func WithHost(h string) Option { return func(o *options) { o.host = h } }

// WithManifest sets the manifest's URL path, format and asset prefix override. The default is
// "/asset-manifest.json", "auto" and the format's conventional prefix.
func WithManifest(path, format, assetPrefix string) Option {
	return func(o *options) { o.manifestPath, o.format, o.assetPrefix = path, format, assetPrefix }
}

// WithManifestPaths sets several manifest URL paths per instance (Next.js app and pages
// routers, micro-frontends): each is fetched and parsed, and the observation carries their
// union (see Prober.Probe). It replaces the path given to WithManifest. The default is the
// one path of WithManifest.
func WithManifestPaths(paths []string) Option {
	return func(o *options) {
		if len(paths) > 0 {
			o.manifestPath, o.morePaths = paths[0], paths[1:]
		}
	}
}

// WithSourceMaps keeps .map files in asset lists. The default is to skip them.
func WithSourceMaps(on bool) Option { return func(o *options) { o.sourceMaps = on } }

// WithMaxAssets sets the most asset references a manifest may hold before it is
// manifest-invalid. The default is manifest.DefaultMaxAssets.
func WithMaxAssets(n int) Option { return func(o *options) { o.maxAssets = n } }

// WithVersionClaim reads the version claim. The default is no version claim.
func WithVersionClaim(c Claim) Option { return func(o *options) { o.version = c } }

// WithDigestClaim reads the digest claim. The default is no digest claim.
func WithDigestClaim(c DigestClaim) Option { return func(o *options) { o.digest = c } }

// WithConcurrency bounds the instances probed (or, for the CDN, requests per host) at once.
// The default is 64.
func WithConcurrency(n int) Option { return func(o *options) { o.concurrency = max(n, 1) } }

// WithTimeout bounds each request. The default is 5s.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithRetries sets the retries per request after the first attempt. The default is 3.
func WithRetries(n int) Option { return func(o *options) { o.retries = n } }

// WithBackoff sets the backoff policy and its bounds. The default is FullJitter between 100ms
// and 5s.
func WithBackoff(b Backoff, minWait, maxWait time.Duration) Option {
	return func(o *options) { o.backoff, o.waitMin, o.waitMax = b, minWait, maxWait }
}

// WithMaxRetryAfter caps how long a Retry-After header may make us wait. The default is 10s.
func WithMaxRetryAfter(d time.Duration) Option { return func(o *options) { o.maxRetryAfter = d } }

// WithBudget shares a retry budget across the run. The default is a budget of 20% + 10.
func WithBudget(b *Budget) Option { return func(o *options) { o.budget = b } }

// WithMaxBody caps every body read, after decompression. The default is 16 MiB.
func WithMaxBody(n int64) Option { return func(o *options) { o.maxBody = n } }

// WithTLS sets the TLS configuration (roots, verification). ServerName is always set to the
// host. The default is the system roots.
func WithTLS(c *tls.Config) Option { return func(o *options) { o.tls = c } }

// WithHeaders adds headers to every instance request. The default is none.
func WithHeaders(h map[string]string) Option { return func(o *options) { o.headers = h } }

// WithLogger sets the logger. The default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDialer replaces the network dialer, for tests. The default is net.Dialer.
func WithDialer(d DialFunc) Option { return func(o *options) { o.dial = d } }

// WithProgress calls f after each instance is probed. The default is none.
func WithProgress(f func(model.Observation)) Option { return func(o *options) { o.onDone = f } }

// WithRate limits CDN requests per second per host; 0 is unlimited. The default is 0.
func WithRate(perSecond float64) Option { return func(o *options) { o.rate = perSecond } }

// WithReplicas checks every asset on the replica origins too. The default is true.
func WithReplicas(on bool) Option { return func(o *options) { o.replicas = on } }

// WithIntegrity fetches the primary's bytes of every asset whose manifest entry carries a
// hash (SRI, ngsw SHA-1, Sprockets SHA-256, Mix md5) and checks them, instead of a HEAD. The
// default is false: existence only.
func WithIntegrity(on bool) Option { return func(o *options) { o.integrity = on } }

// WithAnswers makes a CDN checker take its answers from a, and leave its own there: checks
// of one run sharing an Answers ask each question once (see Answers). The default is none.
func WithAnswers(a *Answers) Option { return func(o *options) { o.answers = a } }

// WithAhead marks a CDN checker as the check made ahead: once stop is closed it asks no new
// question (the check at the end will), and only finishes those it is waiting for. The
// default is none.
func WithAhead(stop <-chan struct{}) Option { return func(o *options) { o.ahead = stop } }

// WithExclude lists globs of root-relative asset paths (cdn.exclude) the CDN check counts as
// skipped and never requests: path.Match patterns in which a "**" segment matches any number
// of segments. The default is none.
func WithExclude(globs []string) Option { return func(o *options) { o.exclude = globs } }

func build(opts []Option) options {
	o := defaults()
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.budget == nil {
		o.budget = NewBudget(0.2, 10)
	}
	if o.dial == nil {
		d := &net.Dialer{Timeout: o.timeout, KeepAlive: -1}
		o.dial = d.DialContext
	}
	return o
}
