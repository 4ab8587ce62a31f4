package registry_test

import (
	"testing"

	"github.com/polygraph-dev/polygraph/internal/depcheck"
)

// TestImports keeps registry a library below the CLI: of polygraph's packages it may use only
// the leaves model, manifest and config, and the AWS configuration loader for the Amazon
// ECR keychain (never the HTTP prober, verify or the CLI), and regtest none at all.
func TestImports(t *testing.T) {
	depcheck.Check(t, ".", "model", "manifest", "config", "internal/safeio", "internal/awsconf")
	depcheck.Check(t, "./regtest")
}
