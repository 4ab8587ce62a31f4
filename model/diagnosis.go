package model

import "time"

// DiagnosisSchema is the schema name of the diagnosis (polygraph diagnose --output json).
const DiagnosisSchema = "polygraph.diagnosis/v1"

// Diagnosis explains a verify report: which instances serve what, which image produced it,
// and the likely causes with their evidence and the actions that fix them.
type Diagnosis struct {
	Schema  string `json:"schema"`
	Verdict string `json:"verdict"`
	// Report is the full verify report the diagnosis explains.
	Report *Report `json:"report"`
	// RecordedAt is when the release was recorded (release record), when known.
	RecordedAt *time.Time `json:"recorded_at,omitempty"`
	// Groups are the instances with the same served content; unreachable instances form none.
	Groups []DiagnosisGroup `json:"groups"`
	// Unreachable lists the instances that gave no usable answer.
	Unreachable []string `json:"unreachable,omitempty"`
	Causes      []Cause  `json:"causes"`
	// Registry counts the registry work attribution did.
	Registry RegistryWork `json:"registry"`
}

// DiagnosisGroup is one group of instances serving the same content, with what they claim,
// what they run, when they launched and which image produced their content.
type DiagnosisGroup struct {
	ID              int                 `json:"id"`
	Instances       []string            `json:"instances"`
	MatchesRelease  bool                `json:"matches_release"`
	ManifestSHA256  string              `json:"manifest_sha256"`
	AssetsSHA256    string              `json:"assets_sha256"`
	ClaimedVersions []string            `json:"claimed_versions"`
	ClaimedDigests  []string            `json:"claimed_digests,omitempty"`
	RunningDigests  []string            `json:"running_digests"`
	LaunchedFirst   *time.Time          `json:"launched_first,omitempty"`
	LaunchedLast    *time.Time          `json:"launched_last,omitempty"`
	Labels          map[string][]string `json:"labels"`
	AssetsMissing   int                 `json:"assets_missing"`
	Attribution     Attribution         `json:"attribution"`
}

// Attribution ways (Attribution.How).
const (
	HowRunningDigest  = "running-digest"
	HowReportedDigest = "reported-digest"
	HowTagSearch      = "tag-search"
	HowRelease        = "release"
	HowNone           = "none"
)

// Attribution says which image produced a group's content, and how that was learned.
type Attribution struct {
	Image  string   `json:"image,omitempty"`
	Digest string   `json:"digest,omitempty"`
	Tags   []string `json:"tags"`
	// How is running-digest, reported-digest, tag-search, release or none.
	How string `json:"how"`
	// Confirmed is true when the manifest file read from the image matches what the group
	// serves.
	Confirmed bool `json:"confirmed"`
	// Created is the image config's creation time, when known.
	Created *time.Time `json:"created,omitempty"`
	// Note says what was tried when nothing matched, or why a digest could not be read.
	Note string `json:"note,omitempty"`
}

// Cause kinds.
const (
	CauseTagRePushed          = "tag-re-pushed"
	CauseOldRelease           = "old-release"
	CauseUnknownBuild         = "unknown-build"
	CauseAssetsNotUploaded    = "assets-not-uploaded"
	CauseClaimsUnreliable     = "claims-unreliable"
	CauseInstancesUnreachable = "instances-unreachable"
)

// Cause is one likely cause, in plain language, with the evidence it rests on and what to do.
type Cause struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	// Groups names exactly the groups the cause explains.
	Groups []int `json:"groups"`
	// Instances lists the instances concerned when they form no group (unreachable ones).
	Instances []string `json:"instances,omitempty"`
	Evidence  []string `json:"evidence"`
	// NotEnoughEvidence says what the cause could not be checked against (a static fleet has
	// no launch times); empty when every part was checked.
	NotEnoughEvidence string   `json:"not_enough_evidence,omitempty"`
	Actions           []string `json:"actions"`
}

// RegistryWork counts what attribution asked the registry.
type RegistryWork struct {
	// Requests is the number of HTTP requests sent to registries (cache hits send none).
	Requests int `json:"requests"`
	// TagsListed is how many tags the listing returned; TagsSearched how many were inspected.
	TagsListed   int `json:"tags_listed"`
	TagsSearched int `json:"tags_searched"`
	// Errors lists what could not be read (the attribution of the groups concerned says so).
	Errors []string `json:"errors,omitempty"`
}
