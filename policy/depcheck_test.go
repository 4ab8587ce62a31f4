package policy

import (
	"testing"

	"github.com/polygraph-dev/polygraph/internal/depcheck"
)

// TestDependencies keeps policy a library of its own: it may use config, model, the safeio
// leaf and the AWS configuration loader, but none of the fleet verifier's packages, the
// renderers nor the command.
func TestDependencies(t *testing.T) {
	depcheck.Check(t, ".", "config", "model", "internal/safeio", "internal/awsconf")
}
