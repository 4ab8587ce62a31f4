package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps policy a library of its own: it may use config, but none of the fleet
// verifier's packages nor the command.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/polygraph-dev/polygraph/") {
			continue
		}
		switch strings.TrimPrefix(dep, "github.com/polygraph-dev/polygraph/") {
		case "policy", "config", "model", "internal/safeio", "internal/awsconf":
		default:
			t.Errorf("policy imports %s", dep)
		}
	}
}
