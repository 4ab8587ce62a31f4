package verify

import (
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// runningEvidence is a trusted source's answer about one instance, weighed against the release.
type runningEvidence struct {
	source  string
	shown   string // the running_digest the report shows ("" when unknown)
	other   bool   // known, and not one digest of it is in the release digest set
	unknown string // why the source could not tell
}

// weigh reads a trusted source's answer. The instance runs the release when any digest the
// runtime recorded (image ID, any repository digest) is in the release digest set: Docker
// records the config digest as the image ID and the index digest among the repo digests,
// containerd the index or the platform manifest. The digest shown is the repository digest of
// the release's repository when the image has one, else the image ID.
func (j *judge) weigh(r model.RunningDigest) runningEvidence {
	ev := runningEvidence{source: r.Source}
	if !r.Known() {
		ev.unknown = r.Unknown
		if ev.unknown == "" {
			ev.unknown = "no digest in its answer"
		}
		return ev
	}
	var digests []string
	if d, ok := model.CanonicalDigest(r.ImageID); ok {
		digests = append(digests, d)
		ev.shown = d
	}
	repo := repository(j.rel.Image)
	for i, rd := range r.RepoDigests {
		d, ok := model.CanonicalDigest(rd)
		if !ok {
			continue
		}
		digests = append(digests, d)
		if (repo != "" && repository(rd) == repo) || (ev.shown == "" && i == 0) {
			ev.shown = d
		}
	}
	if len(digests) == 0 {
		ev.unknown = "its answer holds no sha256 digest"
		return ev
	}
	ev.other = true
	for _, d := range digests {
		if j.rel.HasDigest(d) {
			ev.other = false
		}
	}
	return ev
}

// repository is the repository part of an image reference: no tag, no digest.
func repository(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return ref
}
