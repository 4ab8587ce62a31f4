//go:build unix

package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/safeio"
)

// checkData extracts and checks one input, failing the test on an error.
func checkData(t *testing.T, file, data string) *Report {
	t.Helper()
	kind, imgs, err := Extract(context.Background(), file, []byte(data))
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	in := &Inputs{Files: map[string]Kind{}, Images: imgs}
	if kind != "" {
		in.Files[file] = kind
	}
	r, err := Check(context.Background(), in)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return r
}

func rules(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Rule))
	}
	return out
}

// mergeChain is a compose file whose service gets its image through n chained << merges.
func mergeChain(n int) string {
	var b strings.Builder
	b.WriteString("x-base-0: &b0\n  image: nginx:latest\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "x-base-%d: &b%d\n  <<: *b%d\n", i, i, i-1)
	}
	fmt.Fprintf(&b, "services:\n  web:\n    <<: *b%d\n", n)
	return b.String()
}

func TestComposeMergeChains(t *testing.T) {
	// Nine merges deep used to drop the image silently: the gate passed a :latest.
	r := checkData(t, "compose.yaml", mergeChain(9))
	if got := rules(r); len(got) != 1 || got[0] != "compose.yaml:2 latest-tag" {
		t.Fatalf("merge chain of 9: findings %v, want latest-tag at the image", got)
	}
	// mergeChain(n) makes n+1 merges: the service's own and the n behind it.
	r = checkData(t, "compose.yaml", mergeChain(MaxMergeDepth-1))
	if got := rules(r); len(got) != 1 || !strings.HasSuffix(got[0], "latest-tag") {
		t.Fatalf("merge chain of %d: findings %v, want latest-tag", MaxMergeDepth, got)
	}
	r = checkData(t, "compose.yaml", mergeChain(MaxMergeDepth))
	if r.Verdict != "fail" || len(r.Findings) != 1 || r.Findings[0].Rule != RuleUnreadable {
		t.Fatalf("merge chain of %d: %+v, want one unreadable finding", MaxMergeDepth+1, r.Findings)
	}
	if f := r.Findings[0]; f.Line < 1 || !strings.Contains(f.Message, "merge keys are chained more than 32 deep") {
		t.Errorf("unreadable finding %+v", f)
	}
}

func TestComposeServicesFromMerge(t *testing.T) {
	data := "x-svcs: &svcs\n  web:\n    image: nginx:1.25\nservices:\n  <<: *svcs\n  db:\n    image: postgres@sha256:" + strings.Repeat("a", 64) + "\n"
	r := checkData(t, "compose.yaml", data)
	if got := rules(r); len(got) != 1 || got[0] != "compose.yaml:3 mutable-tag" {
		t.Fatalf("findings %v, want the merged-in service's mutable-tag", got)
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels:\n    l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "    l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("spec:\n  containers: [{name: a, image: nginx:latest}]\n")
	start := time.Now()
	r := checkData(t, "pod.yaml", b.String())
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	if r.Verdict != "fail" || len(r.Findings) != 1 || r.Findings[0].Rule != RuleUnreadable ||
		!strings.Contains(r.Findings[0].Message, "aliases expand to more than") {
		t.Fatalf("findings %+v, want one unreadable finding", r.Findings)
	}
}

func TestKubernetesListTooDeep(t *testing.T) {
	data := "kind: List\napiVersion: v1\nitems:\n- kind: List\n  apiVersion: v1\n  items:\n  - kind: List\n    apiVersion: v1\n    items:\n    - kind: List\n      apiVersion: v1\n      items:\n      - kind: List\n        apiVersion: v1\n        items:\n        - {apiVersion: v1, kind: Pod, spec: {containers: [{image: nginx}]}}\n"
	r := checkData(t, "list.yaml", data)
	if got := rules(r); len(got) != 1 || got[0] != "list.yaml:16 unreadable" {
		t.Fatalf("findings %v, want unreadable at the too-deep items", got)
	}
}

// argDoubling is the Dockerfile of ARG doubling: each line repeats the previous value eight
// times, so line n holds 8^n copies of the first.
func argDoubling(lines int) string {
	var b strings.Builder
	b.WriteString("ARG A0=xxxxxxxx\n")
	for i := 1; i < lines; i++ {
		fmt.Fprintf(&b, "ARG A%d=", i)
		for range 8 {
			fmt.Fprintf(&b, "$A%d", i-1)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "FROM alpine:$A%d\nFROM debian:latest\n", lines-1)
	return b.String()
}

func TestDockerfileArgDoubling(t *testing.T) {
	start := time.Now()
	r := checkData(t, "Dockerfile", argDoubling(10))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	got := rules(r)
	want := []string{"Dockerfile:11 unreadable", "Dockerfile:12 unreadable"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("findings %v, want %v", got, want)
	}
	if m := r.Findings[0].Message; !strings.Contains(m, "variable expansion produces more than 1024 KiB (line 7)") {
		t.Errorf("message %q does not say which limit, where", m)
	}
}

// nested returns ${V0:-${V1:-...${Vn-1:-alpine:latest}...}}.
func nested(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "${V%d:-", i)
	}
	b.WriteString("alpine:latest")
	b.WriteString(strings.Repeat("}", n))
	return b.String()
}

func TestNestedExpansion(t *testing.T) {
	r := checkData(t, "compose.yaml", "services:\n  web:\n    image: "+nested(MaxExpandDepth)+"\n")
	if got := rules(r); len(got) != 1 || got[0] != "compose.yaml:3 latest-tag" {
		t.Fatalf("nested %d: findings %v, want latest-tag", MaxExpandDepth, got)
	}
	start := time.Now()
	r = checkData(t, "compose.yaml", "services:\n  web:\n    image: "+nested(200000)+"\n")
	// Linear: well under a second (a few under the race detector); the quadratic scan this
	// replaced took 48 s for half as deep.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("nested 200000 took %s", d)
	}
	if len(r.Findings) != 1 || r.Findings[0].Rule != RuleUnreadable || !strings.Contains(r.Findings[0].Message, "nested more than 32 deep") {
		t.Fatalf("nested 200000: findings %+v, want unreadable", r.Findings)
	}
	r = checkData(t, "Dockerfile", "ARG X="+nested(1000)+"\nFROM $X\n")
	if len(r.Findings) != 1 || r.Findings[0].Rule != RuleUnreadable || r.Findings[0].Line != 2 {
		t.Fatalf("Dockerfile nested 1000: findings %+v, want unreadable on the FROM line", r.Findings)
	}
}

func TestExtractHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, data := range map[string]string{"Dockerfile": "FROM alpine\n", "compose.yaml": "services:\n  a:\n    image: b\n"} {
		if _, _, err := Extract(ctx, name, []byte(data)); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
}

func TestLoadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("services:\n  a:\n    image: b:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Named explicitly: an error naming the file.
		for _, p := range []string{fifo, big, "/dev/zero"} {
			_, err := Load(context.Background(), []string{p}, nil, nil)
			var se *safeio.Error
			if !errors.As(err, &se) || se.Path != p {
				t.Errorf("Load(%s) = %v, want a *safeio.Error naming it", p, err)
			}
		}
		// Met in a directory: skipped and counted.
		in, err := Load(context.Background(), []string{dir}, nil, nil)
		if err != nil {
			t.Errorf("Load(dir) = %v", err)
			return
		}
		want := []Skip{
			{File: filepath.ToSlash(big), Reason: "file too large (16.0 MiB, over the limit of 16 MiB)"},
			{File: filepath.ToSlash(fifo), Reason: "not a regular file (a named pipe)"},
		}
		if fmt.Sprint(in.Skipped) != fmt.Sprint(want) {
			t.Errorf("skipped %v, want %v", in.Skipped, want)
		}
		if len(in.Images) != 1 {
			t.Errorf("images %v, want the one of ok.yaml", in.Images)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}

func TestLoadExclude(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad := "services:\n  a:\n    image: nginx:latest\n"
	write("deploy/compose.yaml", "services:\n  a:\n    image: nginx@sha256:"+strings.Repeat("b", 64)+"\n")
	write("policy/testdata/bad.yaml", bad)
	write("policy/testdata/deeper/Dockerfile", "FROM alpine\n")
	write("policy/testdata/notes.txt", "not a candidate")
	write("examples/hostile.bad.yaml", bad)
	in, err := Load(context.Background(), []string{dir}, nil, nil, WithExclude("testdata/**", "*.bad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range in.Skipped {
		rel, _ := filepath.Rel(dir, s.File)
		got = append(got, filepath.ToSlash(rel)+" "+s.Reason)
	}
	want := []string{
		"policy/testdata/bad.yaml excluded by testdata/**",
		"policy/testdata/deeper/Dockerfile excluded by testdata/**",
		"examples/hostile.bad.yaml excluded by *.bad.yaml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(in.Images) != 1 || len(in.Files) != 1 {
		t.Errorf("images %v files %v, want deploy/compose.yaml only", in.Images, in.Files)
	}
	// A file named explicitly is excluded too, and counted.
	in, err = Load(context.Background(), []string{filepath.Join(dir, "examples/hostile.bad.yaml")}, nil, nil, WithExclude("*.bad.yaml"))
	if err != nil || len(in.Skipped) != 1 || len(in.Images) != 0 {
		t.Errorf("explicit excluded file: %v, %+v", err, in)
	}
	if _, err := Load(context.Background(), []string{dir}, nil, nil, WithExclude("[bad")); !errors.Is(err, ErrBadGlob) {
		t.Errorf("bad glob: err = %v, want ErrBadGlob", err)
	}
}

func TestPathMatch(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"testdata/**", "policy/testdata/x.yaml", true},
		{"testdata/**", "policy/testdata", true},
		{"testdata/**", "policy/mytestdata/x.yaml", false},
		{"*.bad.yaml", "a/b/c.bad.yaml", true},
		{"*.bad.yaml", "a/b/c.yaml", false},
		{"/examples/*.yaml", "examples/a.yaml", true},
		{"/examples/*.yaml", "x/examples/a.yaml", false},
		{"deploy/**/secret.yaml", "deploy/a/b/secret.yaml", true},
		{"deploy/**/secret.yaml", "deploy/secret.yaml", true},
		{"deploy/*/secret.yaml", "deploy/a/b/secret.yaml", false},
		{"./x/**", "x/y.yaml", true},
	}
	for _, tt := range tests {
		if got := pathMatch(strings.TrimPrefix(tt.glob, "./"), tt.name); got != tt.want {
			t.Errorf("pathMatch(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

func TestCandidate(t *testing.T) {
	for name, want := range map[string]bool{
		"Dockerfile": true, "Dockerfile.prod": true, "dockerfile-dev": true, "prod.Dockerfile": true,
		"Containerfile": true, "app.containerfile": true, "x.yaml": true, "a.JSON": true,
		"dockerfile.go": false, "dockerfile_test.go": false, "Dockerfile.md": false, "Dockerfiles": false,
		"README.md": false,
	} {
		if got := candidate(name); got != want {
			t.Errorf("candidate(%q) = %v, want %v", name, got, want)
		}
	}
}
