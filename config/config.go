package config

import (
	"time"
)

// Config is polygraph.yaml (SPEC §3).
type Config struct {
	Release Release `yaml:"release"`
	Fleet   Fleet   `yaml:"fleet"`
	Probe   Probe   `yaml:"probe"`
	CDN     CDN     `yaml:"cdn"`
	Compare string  `yaml:"compare"`
	Hook    Hook    `yaml:"hook"`
	Policy  Policy  `yaml:"policy"`
	// Diagnose tunes `polygraph diagnose`.
	Diagnose Diagnose `yaml:"diagnose"`
	// Registry configures access to OCI registries (release record, release.image, --resolve).
	Registry Registry `yaml:"registry"`

	// File is the path the config was loaded from ("" when built in code).
	File string `yaml:"-"`
	// Dir is the directory relative paths resolve against.
	Dir string `yaml:"-"`
	// Warnings name settings the config accepts but that have no effect as combined
	// ("file:line: message"); callers log them.
	Warnings []string `yaml:"-"`
}

// Release says what should be running.
type Release struct {
	Image    string `yaml:"image"`
	Version  string `yaml:"version"`
	Record   string `yaml:"record"`
	Platform string `yaml:"platform"`
	// ManifestFiles is release.manifest_file: where the served manifest lives inside the
	// image, or with probe.manifest.paths one file per path, in the paths' order.
	ManifestFiles Files `yaml:"manifest_file"`
}

// Fleet lists the sources of instances; results are merged and de-duplicated.
type Fleet struct {
	Static       []StaticInstance `yaml:"static"`
	EC2          *EC2             `yaml:"ec2"`
	TargetGroups []string         `yaml:"target_groups"`
}

// StaticInstance is one instance listed by hand.
type StaticInstance struct {
	ID      string            `yaml:"id"`
	Address string            `yaml:"address"`
	Labels  map[string]string `yaml:"labels"`
	// Line is where the entry stands in the config file (0 when built in code).
	Line int `yaml:"-"`
}

// EC2 discovers instances with DescribeInstances.
type EC2 struct {
	Region            string              `yaml:"region"`
	AutoScalingGroups []string            `yaml:"auto_scaling_groups"`
	Filters           map[string][]string `yaml:"filters"`
	Address           string              `yaml:"address"`
	Port              int                 `yaml:"port"`
}

// Probe says how instances are asked.
type Probe struct {
	Scheme      string            `yaml:"scheme"`
	Host        string            `yaml:"host"`
	Manifest    Manifest          `yaml:"manifest"`
	Version     Claim             `yaml:"version"`
	Digest      Digest            `yaml:"digest"`
	Concurrency int               `yaml:"concurrency"`
	Timeout     Duration          `yaml:"timeout"`
	Retries     *int              `yaml:"retries"`
	RetryBudget *float64          `yaml:"retry_budget"`
	TLS         TLS               `yaml:"tls"`
	MaxBody     ByteSize          `yaml:"max_body"`
	Headers     map[string]string `yaml:"headers"`
	Runtime     Runtime           `yaml:"runtime"`
}

// Runtime names the trusted source of the digest each instance runs (evidence, never a
// claim). probe.digest.source ssm|docker is a shorthand for it.
type Runtime struct {
	Source     string     `yaml:"source"`      // ssm | docker
	Container  string     `yaml:"container"`   // a name, an ID or label=KEY=VALUE
	Engine     string     `yaml:"engine"`      // for ssm: docker (default) | containerd | podman | nerdctl
	DockerHost string     `yaml:"docker_host"` // for docker: tcp://{host}:2376
	TLS        RuntimeTLS `yaml:"tls"`         // for docker
}

// RuntimeTLS holds the Docker Engine API's CA and client certificate files.
type RuntimeTLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Manifest locates and parses the static-asset manifest.
type Manifest struct {
	Path string `yaml:"path"`
	// Paths are several manifest paths per instance, instead of Path: each is fetched and
	// compared, their assets unioned.
	Paths       []string `yaml:"paths"`
	Format      string   `yaml:"format"`
	AssetPrefix string   `yaml:"asset_prefix"`
	// MaxAssets is the most asset references a manifest may hold (default 100000).
	MaxAssets int `yaml:"max_assets"`
}

// Claim locates a claim: a JSON pointer into a response body, or a header.
type Claim struct {
	Path    string `yaml:"path"`
	Pointer string `yaml:"pointer"`
	Header  string `yaml:"header"`
}

// Digest locates the digest an instance runs or claims.
type Digest struct {
	Source    string `yaml:"source"`
	Path      string `yaml:"path"`
	Pointer   string `yaml:"pointer"`
	Header    string `yaml:"header"`
	Container string `yaml:"container"`
	Tag       string `yaml:"tag"`
}

// TLS configures https probing.
type TLS struct {
	CAFile             string   `yaml:"ca_file"`
	InsecureSkipVerify bool     `yaml:"insecure_skip_verify"`
	ExpiryWarning      Duration `yaml:"expiry_warning"`
}

// CDN lists the origins assets must exist on.
type CDN struct {
	BaseURLs        []string `yaml:"base_urls"`
	Concurrency     int      `yaml:"concurrency"`
	Rate            float64  `yaml:"rate"`
	CheckReplicas   *bool    `yaml:"check_replicas"`
	VerifyIntegrity bool     `yaml:"verify_integrity"`
	CheckSourceMaps bool     `yaml:"check_source_maps"`
	// Exclude lists globs of root-relative asset paths served by the origin: never looked up
	// on the CDN, counted as skipped.
	Exclude []string `yaml:"exclude"`
}

// Hook configures the Auto Scaling lifecycle hook.
type Hook struct {
	ReadyTimeout      Duration `yaml:"ready_timeout"`
	HeartbeatInterval Duration `yaml:"heartbeat_interval"`
	Expect            string   `yaml:"expect"`
	OnError           string   `yaml:"on_error"`
	// Concurrency is how many messages `hook serve` handles at once.
	Concurrency int `yaml:"concurrency"`
	// DrainTimeout is how long `hook serve` lets in-flight actions finish after SIGTERM.
	DrainTimeout Duration `yaml:"drain_timeout"`
}

// Policy configures `policy check`.
type Policy struct {
	RequireDigest     *bool       `yaml:"require_digest"`
	AllowedRegistries []string    `yaml:"allowed_registries"`
	Exceptions        []Exception `yaml:"exceptions"`
	// Exclude lists globs of paths `policy check` skips (deliberately bad test data), as
	// --skip-path does; every skipped file is counted in the summary.
	Exclude []string `yaml:"exclude"`
}

// Exception exempts images matching a pattern from the policy until it expires.
type Exception struct {
	Image   string `yaml:"image"`
	Reason  string `yaml:"reason"`
	Expires Date   `yaml:"expires"`
	// Line is where the exception stands in the config file.
	Line int `yaml:"-"`
}

// Diagnose tunes `polygraph diagnose`.
type Diagnose struct {
	// SearchTags is how many tags (the last ones in the registry's listing) attribution may
	// read when a group's digest does not identify its image.
	SearchTags *int `yaml:"search_tags"`
}

// Defaults.
const (
	DefaultSearchTags      = 20
	MaxSearchTags          = 1000
	DefaultConcurrency     = 64
	DefaultTimeout         = 5 * time.Second
	DefaultRetries         = 3
	DefaultRetryBudget     = 0.2
	DefaultCDNConcurrency  = 32
	DefaultExpiryWarning   = 336 * time.Hour
	DefaultMaxBody         = 16 << 20
	DefaultPlatform        = "linux/amd64"
	DefaultManifestPath    = "/asset-manifest.json"
	DefaultMaxAssets       = 100000
	DefaultHookConcurrency = 4
	DefaultDrainTimeout    = 30 * time.Second
)
