package model

import (
	"encoding/json"
	"time"
)

// ReportSchema is the schema name of the verify report.
const ReportSchema = "polygraph.report/v1"

// Severity of a finding.
type Severity string

// Severities, from worst to mildest.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Kind is the type of a finding (SPEC §5).
type Kind string

// Finding kinds.
const (
	KindUnreachable         Kind = "unreachable"
	KindDigestMismatch      Kind = "digest-mismatch"
	KindDigestUnchecked     Kind = "digest-unchecked"
	KindContentMismatch     Kind = "content-mismatch"
	KindVersionLie          Kind = "version-lie"
	KindContentDrift        Kind = "content-drift"
	KindAssetMissing        Kind = "asset-missing"
	KindAssetUnchecked      Kind = "asset-unchecked"
	KindAssetReplicaMissing Kind = "asset-replica-missing"
	KindAssetDegraded       Kind = "asset-degraded"
	KindAssetIntegrity      Kind = "asset-integrity"
	KindTagMoved            Kind = "tag-moved"
	KindManifestInvalid     Kind = "manifest-invalid"
	KindCertExpiring        Kind = "cert-expiring"
	KindCertMismatch        Kind = "cert-mismatch"
	KindCertInvalid         Kind = "cert-invalid"
)

// Instance statuses.
const (
	StatusOK          = "ok"
	StatusMismatch    = "mismatch"
	StatusUnreachable = "unreachable"
	StatusError       = "error"
)

// Verdicts.
const (
	VerdictPass = "pass"
	VerdictWarn = "warn"
	VerdictFail = "fail"
	// VerdictError means the run could not verify at all; Report.Error says why.
	VerdictError = "error"
)

// Report is the verify report (schema polygraph.report/v1).
type Report struct {
	Schema  string `json:"schema"`
	Verdict string `json:"verdict"`
	// Error says why the run could not verify at all (exit 3); empty otherwise.
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	DurationMS int64      `json:"duration_ms"`
	Release    Release    `json:"release"`
	Instances  []Instance `json:"instances"`
	Groups     []Group    `json:"groups"`
	CDN        CDNSummary `json:"cdn"`
	Findings   []Finding  `json:"findings"`
	Summary    Summary    `json:"summary"`

	// list, when set, gives the instances in place of Instances (see SetInstanceList).
	list InstanceList
}

// InstanceList gives a report's instances one at a time, in the report's order.
type InstanceList interface {
	Len() int
	At(i int) Instance
}

// SetInstanceList makes l the source of the report's instances in place of Instances, which
// it leaves empty (nil when l is nil): a report of a large fleet is then rendered one
// instance at a time, each built when it is read, instead of holding all of them (about 270
// bytes each). Read the instances with NumInstances and InstanceAt, or AllInstances; the
// renderers and MarshalJSON do.
func (r *Report) SetInstanceList(l InstanceList) {
	r.list, r.Instances = l, nil
	if l != nil {
		r.Instances = []Instance{}
	}
}

// NumInstances returns the number of instances in the report.
func (r *Report) NumInstances() int {
	if r.list != nil {
		return r.list.Len()
	}
	return len(r.Instances)
}

// InstanceAt returns the i-th instance.
func (r *Report) InstanceAt(i int) Instance {
	if r.list != nil {
		return r.list.At(i)
	}
	return r.Instances[i]
}

// MarshalJSON writes the report as encoding/json would, with the instances of the list when
// one is set.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report // without this method
	p := plain(r)
	if r.list != nil {
		p.Instances = r.AllInstances()
	}
	return json.Marshal(p)
}

// AllInstances returns every instance in a slice, built from the list when one is set.
func (r *Report) AllInstances() []Instance {
	if r.list == nil {
		return r.Instances
	}
	out := make([]Instance, r.list.Len())
	for i := range out {
		out[i] = r.list.At(i)
	}
	return out
}

// Instance is one instance as the report shows it.
type Instance struct {
	ID              string            `json:"id"`
	Address         string            `json:"address"`
	Labels          map[string]string `json:"labels,omitempty"`
	LaunchedAt      *time.Time        `json:"launched_at,omitempty"`
	ReportedVersion string            `json:"reported_version,omitempty"`
	ReportedDigest  string            `json:"reported_digest,omitempty"`
	RunningDigest   string            `json:"running_digest,omitempty"`
	ManifestSHA256  string            `json:"manifest_sha256,omitempty"`
	AssetsSHA256    string            `json:"assets_sha256,omitempty"`
	Assets          int               `json:"assets"`
	Format          string            `json:"format,omitempty"`
	Group           int               `json:"group,omitempty"`
	TLS             *TLSInfo          `json:"tls,omitempty"`
	Status          string            `json:"status"`
	Error           string            `json:"error,omitempty"`
}

// Group is a set of instances serving the same evidence.
type Group struct {
	ID             int      `json:"id"`
	Instances      []string `json:"instances"`
	ManifestSHA256 string   `json:"manifest_sha256"`
	AssetsSHA256   string   `json:"assets_sha256"`
	RunningDigests []string `json:"running_digests"`
	MatchesRelease bool     `json:"matches_release"`
}

// CDNSummary counts the CDN work of a run.
type CDNSummary struct {
	Checked int `json:"checked"`
	Missing int `json:"missing"`
	// Unchecked counts assets that could not be checked (5xx, timeouts, the deadline): unknown,
	// not missing.
	Unchecked int `json:"unchecked"`
	Skipped   int `json:"skipped"`
	// IntegrityChecked counts assets whose bytes were checked against the manifest's hash.
	IntegrityChecked int `json:"integrity_checked"`
	Requests         int `json:"requests"`
}

// Finding is one typed, checked discrepancy.
type Finding struct {
	Kind      Kind              `json:"kind"`
	Severity  Severity          `json:"severity"`
	Instance  string            `json:"instance,omitempty"`
	Instances []string          `json:"instances,omitempty"`
	URL       string            `json:"url,omitempty"`
	Status    int               `json:"status,omitempty"`
	Message   string            `json:"message"`
	Evidence  map[string]string `json:"evidence,omitempty"`
}

// Summary counts instances by status, and findings.
type Summary struct {
	Instances   int `json:"instances"`
	OK          int `json:"ok"`
	Mismatch    int `json:"mismatch"`
	Unreachable int `json:"unreachable"`
	Error       int `json:"error"`
	Findings    int `json:"findings"`
}

// Worst returns the worst severity among the findings ("" when there are none).
func (r *Report) Worst() Severity {
	var worst Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > worst.Rank() {
			worst = f.Severity
		}
	}
	return worst
}

// Failed reports whether any finding is at or above the threshold. A threshold of "" or
// "never" never fails.
func (r *Report) Failed(threshold Severity) bool {
	if threshold == "" || threshold == "never" {
		return false
	}
	return r.Worst().Rank() >= threshold.Rank()
}

// Exit codes (SPEC §2), as ExitCode decides them.
const (
	ExitOK           = 0 // verified, nothing at or above the threshold
	ExitFindings     = 1 // findings at or above the threshold
	ExitUsage        = 2 // usage or configuration error
	ExitUnverifiable = 3 // could not verify at all
)

// ExitCode is the one decision of a run's exit code from its report: 3 when it could not verify
// at all (verdict "error"), else 1 when findings reach the threshold, else 3 when a part of the
// evidence could not be gathered at all (Error set: a primary CDN that never answered), else 0.
// Findings that give 1 take precedence over an Error that leaves the verdict judged.
func (r *Report) ExitCode(threshold Severity) int {
	switch {
	case r.Verdict == VerdictError:
		return ExitUnverifiable
	case r.Failed(threshold):
		return ExitFindings
	case r.Error != "":
		return ExitUnverifiable
	}
	return ExitOK
}
