package depcheck

import "testing"

// TestGraph pins the whole module to one direction: cmd -> internal/run -> stages -> leaves.
func TestGraph(t *testing.T) {
	CheckGraph(t)
}

func TestViolation(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		ok       bool
	}{
		{"cmd/polygraph", "internal/run", true},
		{"cmd/polygraph", "report", true},
		{"internal/run", "probe", true},
		{"internal/run", "model", true},
		{"probe", "manifest", true},
		{"registry", "manifest", true},
		{"registry", "config", true},
		{"registry/regtest", "registry", true},
		{"report", "policy", true},
		{"internal/testkit", "registry/regtest", true},
		{"bench/fleetbench", "bench", true},
		{"bench", "internal/testkit", true},
		{"manifest", "model", true},
		{"config", "internal/safeio", true},
		{"policy", "internal/safeio", true},
		{"model", "internal/safeio", false},

		{"verify", "probe", false},
		{"probe", "registry", false},
		{"policy", "report", false},
		{"model", "manifest", false},
		{"manifest", "config", false},
		{"config", "model", true},
		{"config", "registry", false},
		{"registry", "internal/run", false},
		{"verify", "cmd/polygraph", false},
		{"internal/testkit", "internal/run", false},
		{"internal/run", "internal/testkit", false},
		{"probe", "internal/testkit", false},
		{"internal/run", "bench", false},
		{"newthing", "model", false},
	} {
		v := Violation(tt.from, tt.to)
		if (v == "") != tt.ok {
			t.Errorf("Violation(%s, %s) = %q, want ok=%v", tt.from, tt.to, v, tt.ok)
		}
	}
}

// Check and Forbid must fail when the rule is broken; recorder stands in for a *testing.T.
func TestCheckFails(t *testing.T) {
	r := &recorder{TB: t}
	Check(r, Module+"/internal/depcheck") // depends on no polygraph package: passes
	if r.failed {
		t.Fatal("Check failed a package with no polygraph dependency")
	}
	Check(r, Module+"/fleet") // depends on model, not allowed here
	if !r.failed {
		t.Error("Check passed fleet -> model with nothing allowed")
	}
	r = &recorder{TB: t}
	Check(r, Module+"/fleet", "model", "config", "internal/safeio", "internal/awsconf")
	if r.failed {
		t.Error("Check failed fleet -> model, config and libraries with them allowed")
	}
	Forbid(r, Module+"/verify", "net", "os/exec")
	if r.failed {
		t.Error("Forbid found the network under verify")
	}
	Forbid(r, Module+"/probe", "net")
	if !r.failed {
		t.Error("Forbid did not find net/http under probe")
	}
}

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}
