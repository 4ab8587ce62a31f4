package registry

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polygraph-dev/polygraph/manifest"
)

// Defaults of a Client.
const (
	// DefaultMaxFileSize caps a file read out of an image (WithMaxFileSize).
	DefaultMaxFileSize = 16 << 20
	// DefaultMaxLayerSize caps the uncompressed bytes read from one layer (WithMaxLayerSize).
	DefaultMaxLayerSize = 16 << 30
	// DefaultPlatform is the platform whose file is read when none is given.
	DefaultPlatform = "linux/amd64"
	// maxBlobSize caps manifests and config blobs read from the registry.
	maxBlobSize = 8 << 20
)

// DefaultBackoff is the retry schedule of the registry library, which retries network errors,
// 408, 429 and 5xx answers: three attempts, waiting 1s then 3s.
var DefaultBackoff = remote.Backoff{Duration: time.Second, Factor: 3, Jitter: 0.1, Steps: 3}

// Client talks to OCI registries. It holds one remote.Puller, so a run pings each registry and
// exchanges a token once, and a disk cache of immutable results keyed by digest. A Client is
// safe for concurrent use; make one per run.
type Client struct {
	o      options
	puller *remote.Puller
	cache  *diskCache // nil when caching is off
	log    *slog.Logger
}

// Option configures a Client.
type Option func(*options)

type options struct {
	keychain    authn.Keychain
	transport   http.RoundTripper
	logger      *slog.Logger
	cacheDir    string
	cacheSet    bool
	maxFileSize int64
	maxLayer    int64
	platform    string
	backoff     remote.Backoff
	version     string
	now         func() time.Time
	insecure    []string
	format      manifest.Format
	manifest    *manifest.Options
	paths       []string
}

// WithKeychain sets where credentials come from. The default is Keychain(): the Docker config
// (docker login, credential helpers), then Amazon ECR through the AWS credential chain.
func WithKeychain(k authn.Keychain) Option { return func(o *options) { o.keychain = k } }

// WithTransport sets the HTTP transport. The registry library wraps it with its retries
// (WithRetryBackoff) and the User-Agent. The default is remote.DefaultTransport.
func WithTransport(t http.RoundTripper) Option { return func(o *options) { o.transport = t } }

// WithLogger sets the logger for debug records (requests are not logged). The default is to
// discard them.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithCacheDir sets the directory where results keyed by digest (manifests, config blobs, the
// outcome of looking a path up in a layer, the files read) are kept between runs. An empty dir
// turns the cache off. The default is $XDG_CACHE_HOME/polygraph/registry (on Linux
// ~/.cache/polygraph/registry; see os.UserCacheDir), or no cache when there is no home.
func WithCacheDir(dir string) Option {
	return func(o *options) { o.cacheDir, o.cacheSet = dir, true }
}

// WithMaxFileSize caps the size of a file read out of an image. The default is 16 MiB.
func WithMaxFileSize(n int64) Option { return func(o *options) { o.maxFileSize = n } }

// WithMaxLayerSize caps the uncompressed bytes read from one layer while looking for a file,
// so a decompression bomb cannot run a scan until the deadline. The default is 16 GiB.
func WithMaxLayerSize(n int64) Option { return func(o *options) { o.maxLayer = n } }

// WithPlatform sets the platform (os/arch[/variant]) used when ReadFile or Record is given an
// empty platform. The default is linux/amd64.
func WithPlatform(p string) Option { return func(o *options) { o.platform = p } }

// WithRetryBackoff sets the registry library's retry schedule (there are no retries of ours
// on top). Steps is the number of attempts; a Steps of 1 disables retries. A run's context
// deadline is honoured between attempts to within one wait. The default is DefaultBackoff.
func WithRetryBackoff(b remote.Backoff) Option { return func(o *options) { o.backoff = b } }

// WithPolygraphVersion sets the polygraph_version written into release records, and the
// User-Agent sent to registries ("polygraph/VERSION"). The default is empty: the field is
// omitted and the User-Agent is "polygraph".
func WithPolygraphVersion(v string) Option { return func(o *options) { o.version = v } }

// WithClock sets the clock that stamps recorded_at. The default is time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithManifestFormat sets how Record parses the manifest file: its format and the options that
// resolve its paths (set Path to the URL path the instances serve it at, probe.manifest.path,
// so the asset-set hash matches what the prober computes). The default is manifest.Auto with
// Path "/" plus the file's base name.
func WithManifestFormat(f manifest.Format, opts manifest.Options) Option {
	return func(o *options) { o.format, o.manifest = f, &opts }
}

// WithManifestPaths sets the URL path each manifest file is served at when Record reads
// several (probe.manifest.paths), in the order of the files: each is parsed with the options of
// WithManifestFormat and its own Path. The default is none: Record then reads one file.
func WithManifestPaths(paths ...string) Option {
	return func(o *options) { o.paths = append([]string(nil), paths...) }
}

// New makes a Client.
func New(opts ...Option) (*Client, error) {
	o := options{
		transport:   remote.DefaultTransport,
		maxFileSize: DefaultMaxFileSize,
		maxLayer:    DefaultMaxLayerSize,
		platform:    DefaultPlatform,
		backoff:     DefaultBackoff,
		now:         time.Now,
		format:      manifest.Auto,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxFileSize <= 0 || o.maxLayer <= 0 {
		return nil, fmt.Errorf("size limits must be positive, got file %d, layer %d", o.maxFileSize, o.maxLayer)
	}
	if o.backoff.Steps < 1 {
		return nil, fmt.Errorf("retry backoff needs at least one step, got %d", o.backoff.Steps)
	}
	if _, err := parsePlatform(o.platform); err != nil {
		return nil, err
	}
	log := o.logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.keychain == nil {
		o.keychain = Keychain()
	}
	if !o.cacheSet {
		if dir, err := os.UserCacheDir(); err == nil {
			o.cacheDir = filepath.Join(dir, "polygraph", "registry")
		}
	}
	userAgent := "polygraph"
	if o.version != "" {
		userAgent += "/" + o.version
	}
	p, err := remote.NewPuller(
		remote.WithAuthFromKeychain(o.keychain),
		remote.WithTransport(plainHTTPGuard{next: o.transport, listed: o.insecure}),
		remote.WithRetryBackoff(o.backoff),
		remote.WithUserAgent(userAgent),
	)
	if err != nil {
		return nil, fmt.Errorf("configuring the registry client: %w", err)
	}
	c := &Client{o: o, puller: p, log: log}
	if o.cacheDir != "" {
		c.cache = &diskCache{dir: filepath.Join(o.cacheDir, "v1"), log: log}
	}
	return c, nil
}

// parseRef parses a reference. A registry allowed plain HTTP (WithInsecureRegistries) is
// marked insecure, so the library falls back to HTTP when HTTPS fails; for any other registry
// the transport refuses the fallback the library would attempt on its own.
func (c *Client) parseRef(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err == nil && plainHTTPAllowed(c.o.insecure, r.Context().RegistryStr(), "") {
		r, err = name.ParseReference(ref, name.Insecure)
	}
	if err != nil {
		return nil, &ReferenceError{Ref: ref, Err: err}
	}
	return r, nil
}
