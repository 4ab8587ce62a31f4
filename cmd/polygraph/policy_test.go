package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pinned := write("pinned.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: a, image: \"nginx@sha256:6e1f1b0b5b7cbd0b8f4b0a3dd2f9fbbd6b5b3f0c7f36ad44cfba4a911b0e4a3b\"}]\n")
	mutable := write("mutable.yaml", "services:\n  web:\n    image: nginx:1.25\n")
	unresolved := write("unresolved.yaml", "services:\n  web:\n    image: nginx:${TAG}\n")
	broken := write("broken.yaml", "services: [\n")
	relaxed := write("relaxed.yaml", "policy:\n  require_digest: false\n")
	badConfig := write("bad.yaml", "policy:\n  require_digests: false\n")
	gone := httptest.NewServer(nil)
	host := strings.TrimPrefix(gone.URL, "http://")
	gone.Close()
	unreachable := write("unreachable.yaml", "services:\n  web:\n    image: "+host+"/web:v1\n")

	tests := []struct {
		name       string
		args       []string
		stdin      string
		want       int
		wantStdout string
		wantStderr string
	}{
		{"pinned passes", []string{pinned}, "", 0, "policy pass", ""},
		{"mutable fails", []string{mutable}, "", 1, "mutable-tag", ""},
		{"fail-on never", []string{"--fail-on", "never", mutable}, "", 0, "mutable-tag", ""},
		{"require_digest false makes it a warning", []string{"--config", relaxed, mutable}, "", 0, "warning mutable-tag", ""},
		{"warnings fail at --fail-on warning", []string{"--config", relaxed, "--fail-on", "warning", mutable}, "", 1, "warning mutable-tag", ""},
		{"unresolved is a warning", []string{unresolved}, "", 0, "unresolved-image", ""},
		{"stdin", []string{"-"}, "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{image: busybox}]\n", 1, "<stdin>:4:24: error latest-tag", ""},
		{"json output", []string{"--output", "json", mutable}, "", 1, `"schema": "polygraph.policy/v1"`, ""},
		{"no paths", nil, "", 2, "", "name the files"},
		{"nothing recognised", []string{relaxed}, "", 3, "policy pass", "no deploy configuration recognised"},
		{"bad output", []string{"--output", "xml", mutable}, "", 2, "", "--output"},
		{"bad fail-on", []string{"--fail-on", "sometimes", mutable}, "", 2, "", "--fail-on"},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, "", 2, "", "nope.yaml"},
		{"bad config", []string{"--config", badConfig, mutable}, "", 2, "", "require_digests"},
		{"unparseable file named explicitly", []string{broken}, "", 3, "", "broken.yaml"},
		{"registry unreachable during --resolve", []string{"--resolve", unreachable}, "", 3, "", "unreachable.yaml:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POLYGRAPH_CONFIG", "")
			var stdout, stderr bytes.Buffer
			args := append([]string{"polygraph", "policy", "check"}, tt.args...)
			code := runCLI(context.Background(), args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.want, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
