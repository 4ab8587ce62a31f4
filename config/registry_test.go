package config

import (
	"slices"
	"testing"
)

func TestRegistryInsecureAccepted(t *testing.T) {
	src := "registry:\n  insecure:\n    - registry.internal\n    - 10.0.0.5:5000\n    - \"[fd00::5]:5000\"\n    - fd00::6\n"
	cfg, err := Parse([]byte(src), "polygraph.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"registry.internal", "10.0.0.5:5000", "[fd00::5]:5000", "fd00::6"}
	if !slices.Equal(cfg.Registry.Insecure, want) {
		t.Errorf("registry.insecure = %q, want %q", cfg.Registry.Insecure, want)
	}
}
