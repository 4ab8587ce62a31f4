package model

// RunningDigest is what a trusted source (the container runtime, asked through SSM or the
// Docker Engine API) says one target runs. It is evidence, never a claim.
type RunningDigest struct {
	TargetID string `json:"target"`
	Source   string `json:"source"` // "ssm" | "docker"
	// ImageID is the image's canonical config digest, sha256:<hex>.
	ImageID string `json:"image_id,omitempty"`
	// RepoDigests are "repo@sha256:<hex>" as the runtime lists them.
	RepoDigests []string `json:"repo_digests,omitempty"`
	// Unknown says why the source could not tell; "" when it could.
	Unknown string `json:"unknown,omitempty"`
}
