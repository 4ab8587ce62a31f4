package registry_test

import (
	"testing"

	"github.com/polygraph-dev/polygraph/internal/depcheck"
)

// TestImports keeps registry a library below the CLI: of polygraph's packages it may use only
// the leaves model, manifest and config (never the HTTP prober, verify or the CLI), and
// regtest none at all.
func TestImports(t *testing.T) {
	depcheck.Check(t, ".", "model", "manifest", "config", "internal/safeio")
	depcheck.Check(t, "./regtest")
}
