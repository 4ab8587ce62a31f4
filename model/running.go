package model

// RunningDigest is what a trusted source (the container runtime, asked through SSM or the
// Docker Engine API) reports an instance runs. It is evidence, never a claim: an instance
// cannot lie through it. Unknown says why the source could not tell; it is a value, not an
// error, and never counts as a mismatch.
type RunningDigest struct {
	// TargetID is the Target.ID the result is about.
	TargetID string `json:"target"`
	// Source names the trusted source: "ssm" or "docker".
	Source string `json:"source"`
	// ImageID is the container's image ID (its config digest), canonical.
	ImageID string `json:"image_id,omitempty"`
	// RepoDigests are the image's repository digests as the runtime lists them
	// ("repo@sha256:…"). Results naming one image share the list: it is read-only.
	RepoDigests []string `json:"repo_digests,omitempty"`
	// Unknown says why the source could not tell what the instance runs; "" when it could.
	Unknown string `json:"unknown,omitempty"`
}

// Known reports whether the source could tell what the instance runs.
func (r RunningDigest) Known() bool {
	return r.Unknown == "" && (r.ImageID != "" || len(r.RepoDigests) > 0)
}
