package verify

import (
	"testing"

	"github.com/polygraph-dev/polygraph/internal/depcheck"
)

// The judge must stay pure: no network, no process, no TLS, and of polygraph's packages only
// the model.
func TestImports(t *testing.T) {
	depcheck.Check(t, ".", "model")
	depcheck.Forbid(t, ".", "net", "os/exec", "crypto/tls")
}
