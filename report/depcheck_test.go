package report

import (
	"testing"

	"github.com/polygraph-dev/polygraph/internal/depcheck"
)

// The renderers use, of polygraph's packages, only the models they render: model, and the
// policy report (policy, with the config it reads and the libraries it uses).
func TestImports(t *testing.T) {
	depcheck.Check(t, ".", "model", "policy", "config", "internal/safeio", "internal/awsconf")
}
