// Package running reads the digest each instance really runs from a trusted source (the
// container runtime through AWS Systems Manager, or the Docker Engine API): evidence the
// instance cannot lie through, kept apart from what it claims.
package running

import (
	"context"

	"github.com/polygraph-dev/polygraph/model"
)

// Source is a trusted source of the digest each instance runs (evidence, never a claim).
type Source interface {
	Name() string // "ssm", "docker"
	// RunningDigests returns one result per target, in order. An error only for
	// misconfiguration; "could not tell" is a result with Unknown set.
	RunningDigests(ctx context.Context, targets []model.Target) ([]model.RunningDigest, error)
}
