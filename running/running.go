// Package running asks trusted sources which image each instance actually runs: the container
// runtime, through SSM Run Command or the Docker Engine API. Their answers are evidence, kept
// apart from what an instance claims about itself; "could not tell" is an answer, not an error.
package running

import (
	"context"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Source is a trusted source of the digest each instance runs. Sources work in batches (SSM
// takes 50 instance IDs a call), so they take every target at once.
type Source interface {
	// Name names the source in findings and errors: "ssm", "docker".
	Name() string
	// RunningDigests returns one result per target, in the targets' order. It returns an error
	// only for misconfiguration; an instance the source could not ask is a result with
	// Unknown set.
	RunningDigests(ctx context.Context, targets []model.Target) ([]model.RunningDigest, error)
}

// share makes results that name the same image share its strings: every instance of a fleet
// runs one or two images, and each result holding copies of its own (or, from SSM, pieces of
// its command's whole output) costs about 500 bytes per instance for the rest of the run.
// Unknown reasons name their instance and are left alone.
func share(rs []model.RunningDigest) {
	ids := map[string]string{}
	repos := map[string][]string{}
	var key strings.Builder
	for i := range rs {
		r := &rs[i]
		if r.ImageID != "" {
			if same, ok := ids[r.ImageID]; ok {
				r.ImageID = same
			} else {
				r.ImageID = strings.Clone(r.ImageID)
				ids[r.ImageID] = r.ImageID
			}
		}
		if len(r.RepoDigests) == 0 {
			continue
		}
		key.Reset()
		for _, d := range r.RepoDigests {
			key.WriteString(d)
			key.WriteByte('\n') // never part of a repository digest
		}
		if same, ok := repos[key.String()]; ok {
			r.RepoDigests = same
		} else {
			own := make([]string, len(r.RepoDigests))
			for j, d := range r.RepoDigests {
				own[j] = strings.Clone(d)
			}
			r.RepoDigests = own
			repos[key.String()] = own
		}
	}
}
