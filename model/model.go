package model

import "time"

// Target is one instance of the fleet, addressed directly (never through a load balancer).
type Target struct {
	// ID names the instance in findings (an EC2 instance ID, or the static entry's id).
	ID string
	// Address is host:port; the probe dials it directly.
	Address string
	// Labels are free-form key/value pairs carried into the report (az, asg, ...). Targets
	// from fleet.Discover with equal labels share one map: it is read-only.
	Labels map[string]string
	// LaunchedAt is when the instance started, when the source knows it.
	LaunchedAt time.Time
	// Source names the fleet source that found the target ("static", "ec2", ...).
	Source string
	// ReportedDigest is a digest claim known at discovery (the ec2-tag digest source).
	ReportedDigest string
	// Unreachable says why the source knows the target cannot be dialed (an EC2 instance with
	// no address of the configured kind); the prober records it without sending a request.
	Unreachable string
}

// Asset is one asset a manifest references.
type Asset struct {
	// Ref is the canonical reference: a root-relative path with its query ("/static/js/a.js",
	// "/js/app.js?id=abc") or an absolute URL exactly as the manifest gave it.
	Ref string
	// Integrity is a hash of the asset's bytes that the manifest carries, in SRI form
	// ("sha384-<base64>") or "<algo>:<hex>" (sha1, sha256, md5). Empty when none.
	Integrity string
}

// TLSInfo is the evidence of an instance's leaf certificate.
type TLSInfo struct {
	NotAfter    time.Time `json:"not_after"`
	SHA256      string    `json:"sha256"`
	Subject     string    `json:"subject,omitempty"`
	MatchesHost bool      `json:"matches_host"`
	VerifyError string    `json:"verify_error,omitempty"`
}

// Observation is everything a probe learned about one target. Failing to reach the target is
// evidence recorded here (Reached false, Error set), never an error of the run.
type Observation struct {
	Target Target

	// Reached is true when the instance answered the manifest request with an HTTP response.
	Reached bool
	// Error says why the instance could not be reached, or why its answer was unusable.
	Error string
	// Attempts is the number of HTTP requests sent for the manifest (retries included).
	Attempts int

	ManifestURL    string
	HTTPStatus     int
	ManifestFormat string
	ManifestSHA256 string
	ManifestBytes  int64
	// ManifestInvalid is non-empty when the instance answered but not with a usable manifest.
	ManifestInvalid string

	// Assets is the canonical asset list, shared between observations of the same build.
	Assets       []Asset
	AssetsSHA256 string
	// SkippedAssets counts manifest entries never requested (other hosts, data: URLs, ...).
	SkippedAssets int

	// ReportedVersion is the version the instance claims ("" when no claim is configured).
	ReportedVersion string
	VersionError    string
	// ReportedDigest is the digest the instance claims about itself.
	ReportedDigest string
	// DigestError says why the digest claim could not be read.
	DigestError string

	TLS *TLSInfo
}

// ReleaseRecord is the release record file (schema polygraph.release/v1), written at build time
// by `polygraph release record`.
type ReleaseRecord struct {
	Schema           string         `json:"schema"`
	Image            string         `json:"image"`
	Digest           string         `json:"digest"`
	Digests          []RecordDigest `json:"digests"`
	Platform         string         `json:"platform,omitempty"`
	ManifestFile     string         `json:"manifest_file,omitempty"`
	ManifestSHA256   string         `json:"manifest_sha256,omitempty"`
	AssetsSHA256     string         `json:"assets_sha256,omitempty"`
	Assets           int            `json:"assets"`
	RecordedAt       time.Time      `json:"recorded_at"`
	PolygraphVersion string         `json:"polygraph_version,omitempty"`

	// ManifestFiles replaces ManifestFile when the instances serve several manifests
	// (probe.manifest.paths): the files read from the image, and ManifestPaths the URL path
	// each is served at, in the same order. ManifestSHA256 and AssetsSHA256 are then those of
	// an instance serving them all (manifest.CombinedSHA256, manifest.Union).
	ManifestFiles []string `json:"manifest_files,omitempty"`
	ManifestPaths []string `json:"manifest_paths,omitempty"`
}

// RecordSchema is the schema name of release records.
const RecordSchema = "polygraph.release/v1"

// RecordDigest is one member of a release digest set.
type RecordDigest struct {
	Digest   string `json:"digest"`
	Kind     string `json:"kind"` // index | manifest | config
	Platform string `json:"platform,omitempty"`
}

// Release is what should be running, as the report shows it.
type Release struct {
	Image   string   `json:"image,omitempty"`
	Version string   `json:"version,omitempty"`
	Digest  string   `json:"digest,omitempty"`
	Digests []string `json:"digests,omitempty"`
	// ManifestSHA256 and AssetsSHA256 identify the served manifest; empty when unknown.
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
	AssetsSHA256   string `json:"assets_sha256,omitempty"`
	Assets         int    `json:"assets"`
	// Source is where the truth came from: record, registry or consensus.
	Source string `json:"source"`
	// TagDigest is what the release tag resolves to now, when it was resolved and differs
	// from the record.
	TagDigest string `json:"tag_digest,omitempty"`
}

// Release sources.
const (
	SourceRecord    = "record"
	SourceRegistry  = "registry"
	SourceConsensus = "consensus"
)

// HasDigest reports whether d is one of the release digest set, compared in canonical form
// (SameDigest): "repo@sha256:…", bare hex and upper case name the same digest.
func (r *Release) HasDigest(d string) bool {
	if SameDigest(d, r.Digest) {
		return true
	}
	for _, x := range r.Digests {
		if SameDigest(d, x) {
			return true
		}
	}
	return false
}

// FromRecord builds the expected release from a release record.
func FromRecord(rec *ReleaseRecord, version string) *Release {
	r := &Release{
		Image:          rec.Image,
		Version:        version,
		Digest:         rec.Digest,
		ManifestSHA256: rec.ManifestSHA256,
		AssetsSHA256:   rec.AssetsSHA256,
		Assets:         rec.Assets,
		Source:         SourceRecord,
	}
	for _, d := range rec.Digests {
		r.Digests = append(r.Digests, d.Digest)
	}
	if r.Digest != "" && !contains(r.Digests, r.Digest) {
		r.Digests = append([]string{r.Digest}, r.Digests...)
	}
	return r
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
