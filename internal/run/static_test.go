package run

import (
	"testing"

	"github.com/polygraph-dev/polygraph/config"
)

func TestWithoutStaticLeavesTheConfigAsItWas(t *testing.T) {
	cfg := &config.Config{File: "polygraph.yaml", Compare: "bytes"}
	cfg.Fleet.Static = []config.StaticInstance{{ID: "web-1", Address: "127.0.0.1:8080"}}
	got := withoutStatic(cfg)
	if got == cfg || got.Fleet.Static != nil {
		t.Fatalf("withoutStatic kept the static entries: %+v", got.Fleet)
	}
	if got.File != cfg.File || got.Compare != cfg.Compare {
		t.Errorf("the copy lost other sections: %+v", got)
	}
	if len(cfg.Fleet.Static) != 1 || cfg.Fleet.Static[0].ID != "web-1" {
		t.Errorf("the caller's config changed: %+v", cfg.Fleet.Static)
	}
	if none := (&config.Config{}); withoutStatic(none) != none {
		t.Error("a config without static entries was copied")
	}
}
