package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the container image recipe: every base pinned by digest, a static
// binary, and a final stage that runs as a non-root user on a minimal base.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	from := regexp.MustCompile(`(?m)^FROM\s+(?:--platform=\S+\s+)?(\S+)`)
	froms := from.FindAllStringSubmatch(src, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d FROM lines", len(froms))
	}
	pinned := regexp.MustCompile(`^[\w./:-]+@sha256:[0-9a-f]{64}$`)
	for _, f := range froms {
		if !pinned.MatchString(f[1]) {
			t.Errorf("FROM %s is not pinned by digest", f[1])
		}
	}
	final := src[strings.LastIndex(src, "\nFROM "):]
	if base := froms[len(froms)-1][1]; !strings.HasPrefix(base, "gcr.io/distroless/static") && !strings.HasPrefix(base, "scratch") {
		t.Errorf("final base %s is neither distroless static nor scratch", base)
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(final)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0:") || user[1] == "0" {
		t.Errorf("final stage USER %v: want a non-root user", user)
	}
	if !strings.Contains(src, "CGO_ENABLED=0") {
		t.Error("the binary is not built static (CGO_ENABLED=0)")
	}
	for _, v := range []string{"main.version", "main.commit", "main.date"} {
		if !strings.Contains(src, v) {
			t.Errorf("the build does not link %s", v)
		}
	}

	// The release image wraps goreleaser's binaries on the same base.
	rel, err := os.ReadFile("../../Dockerfile.release")
	if err != nil {
		t.Fatal(err)
	}
	rfroms := from.FindAllStringSubmatch(string(rel), -1)
	if len(rfroms) != 1 || rfroms[0][1] != froms[len(froms)-1][1] {
		t.Errorf("Dockerfile.release base %v, want exactly Dockerfile's final base %s", rfroms, froms[len(froms)-1][1])
	}
	if u := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(string(rel)); u == nil || u[1] != user[1] {
		t.Errorf("Dockerfile.release USER %v, want %s", u, user[1])
	}
}
