package verify

import (
	"fmt"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// running takes the trusted runtime source's answers into the observations' RunningDigest
// (on a copy: the caller's observations are not changed) and raises digest-unchecked for
// every instance the source could not tell about: unknown, never wrong.
func (j *judge) running() {
	if len(j.in.Running) == 0 {
		return
	}
	byID := make(map[string]model.RunningDigest, len(j.in.Running))
	for _, r := range j.in.Running {
		byID[r.TargetID] = r
	}
	obs := make([]model.Observation, len(j.in.Observations))
	copy(obs, j.in.Observations)
	for i := range obs {
		id := obs[i].Target.ID
		r, ok := byID[id]
		if !ok {
			continue
		}
		if r.Unknown != "" {
			j.add(model.Finding{Kind: model.KindDigestUnchecked, Severity: model.SeverityWarning, Instance: id,
				Message:  fmt.Sprintf("%s: %s could not tell which image runs: %s", id, r.Source, r.Unknown),
				Evidence: map[string]string{"source": r.Source}})
			continue
		}
		obs[i].RunningDigest = PickRunning(&j.rel, r)
	}
	j.in.Observations = obs
}

// PickRunning chooses the digest that stands for what an instance runs: one of the release
// digest set when the image ID or any repo digest is in it (the release repository's repo
// digest first); otherwise the repo digest of the release's repository, else the image ID,
// else the first repo digest. Digests are canonical sha256:<hex>.
func PickRunning(rel *model.Release, r model.RunningDigest) string {
	repo := repository(rel.Image)
	var own, others []string
	for _, rd := range r.RepoDigests {
		i := strings.LastIndex(rd, "@")
		if i < 0 {
			continue
		}
		if repo != "" && rd[:i] == repo {
			own = append(own, rd[i+1:])
		} else {
			others = append(others, rd[i+1:])
		}
	}
	candidates := append(append(own, r.ImageID), others...)
	for _, d := range candidates {
		if d != "" && rel.HasDigest(d) {
			return d
		}
	}
	for _, d := range candidates {
		if d != "" {
			return d
		}
	}
	return ""
}

// repository strips the tag and digest from an image reference.
func repository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		ref = ref[:i]
	}
	return ref
}
