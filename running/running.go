// Package running asks trusted sources which image each instance actually runs: the container
// runtime, through SSM Run Command or the Docker Engine API. Their answers are evidence, kept
// apart from what an instance claims about itself; "could not tell" is an answer, not an error.
package running

import (
	"context"

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
