package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestResolveBuild(t *testing.T) {
	vcs := func(rev, time, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/polygraph-dev/polygraph", Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: time}, {Key: "vcs.modified", Value: modified},
		}}
	}
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/polygraph-dev/polygraph", Version: "v1.4.0"}}
	tests := []struct {
		name                 string
		ldVer, ldCommit, ldD string
		bi                   *debug.BuildInfo
		want                 buildInfo
	}{
		{"no build info", "", "", "", nil, buildInfo{Version: "devel"}},
		{"checkout build", "", "", "", vcs("0cd4c9f1", "2026-11-30T10:00:00Z", "false"), buildInfo{Version: "devel", Commit: "0cd4c9f1", Date: "2026-11-30T10:00:00Z"}},
		{"dirty checkout", "", "", "", vcs("0cd4c9f1", "2026-11-30T10:00:00Z", "true"), buildInfo{Version: "devel", Commit: "0cd4c9f1", Date: "2026-11-30T10:00:00Z", Modified: true}},
		{"go install module@version", "", "", "", installed, buildInfo{Version: "v1.4.0"}},
		{"release build (ldflags win)", "1.5.0", "abcdef0", "2026-12-01T00:00:00Z", vcs("0cd4c9f1", "2026-11-30T10:00:00Z", "true"),
			buildInfo{Version: "1.5.0", Commit: "abcdef0", Date: "2026-12-01T00:00:00Z"}},
		{"only the version linked", "1.5.0", "", "", vcs("0cd4c9f1", "2026-11-30T10:00:00Z", "false"), buildInfo{Version: "1.5.0", Commit: "0cd4c9f1", Date: "2026-11-30T10:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolveBuild(tc.ldVer, tc.ldCommit, tc.ldD, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestVersionLinked builds the binary as the release does (-ldflags -X) and reads the values
// back through both spellings.
func TestVersionLinked(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "polygraph")
	ld := "-X main.version=9.8.7 -X main.commit=feedc0de -X main.date=2026-12-01T05:00:00Z"
	if out, err := exec.Command("go", "build", "-ldflags", ld, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"polygraph 9.8.7\n", "commit: feedc0de\n", "built:  2026-12-01T05:00:00Z\n", "go:     go1."} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v printed %q, lacking %q", args, out, want)
			}
		}
	}
}

func TestEnvBooleans(t *testing.T) {
	deploy := "../../examples/policy/deploy"
	full, _, code := polygraph(t, nil, "policy", "check", deploy)
	if code != 1 {
		t.Fatalf("policy check of the bad example exited %d, want 1", code)
	}
	quiet, _, _ := polygraph(t, nil, "policy", "check", "--quiet", deploy)
	if quiet == full || strings.Count(quiet, "\n") != 1 {
		t.Fatalf("--quiet output %q does not differ from the full one", quiet)
	}
	tests := []struct {
		env  string
		want string // output expected, "" for a usage error
	}{
		{"POLYGRAPH_QUIET=yes", quiet}, {"POLYGRAPH_QUIET=true", quiet}, {"POLYGRAPH_QUIET=1", quiet}, {"POLYGRAPH_QUIET=ON", quiet},
		{"POLYGRAPH_QUIET=no", full}, {"POLYGRAPH_QUIET=false", full}, {"POLYGRAPH_QUIET=0", full}, {"POLYGRAPH_QUIET=off", full},
		{"POLYGRAPH_QUIET=", full},
		{"POLYGRAPH_QUIET=maybe", ""},
		{"NO_COLOR=yes", full}, {"NO_COLOR=1", full}, {"NO_COLOR=0", full}, {"NO_COLOR=false", full}, {"NO_COLOR=", full},
		{"POLYGRAPH_NO_COLOR=yes", full}, {"POLYGRAPH_NO_COLOR=colourful", ""},
		{"POLYGRAPH_RESOLVE=off", full},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			out, stderr, code := polygraph(t, []string{tc.env}, "policy", "check", deploy)
			if tc.want == "" {
				name := strings.SplitN(tc.env, "=", 2)[0]
				if code != 2 || !strings.Contains(stderr, name) || !strings.Contains(stderr, "not a boolean") {
					t.Errorf("exit %d, stderr %q; want 2 naming %s", code, stderr, name)
				}
				return
			}
			if code != 1 || out != tc.want {
				t.Errorf("exit %d (stderr %q), output\n%s\nwant\n%s", code, stderr, out, tc.want)
			}
		})
	}
	// Colour itself is only ever written to a terminal; NO_COLOR must win there too.
	g := globalsFor(t, []string{"NO_COLOR=anything"})
	if g.color {
		t.Error("NO_COLOR=anything left colour on")
	}
}

// globalsFor parses the common flags with the given environment, as getGlobals sees them.
func globalsFor(t *testing.T, env []string) *globals {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var got *globals
	app := newApp(nil, &bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range app.Commands {
		if c.Name == "version" {
			c.Action = func(c *cli.Context) error {
				var err error
				got, err = getGlobals(c)
				return err
			}
		}
	}
	if err := app.RunContext(context.Background(), []string{"polygraph", "version"}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReorderArgs(t *testing.T) {
	app := newApp(nil, &bytes.Buffer{}, &bytes.Buffer{})
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"flags after paths", "policy check k8s/ --output sarif", "policy check --output sarif k8s/"},
		{"short flag and value", "policy check a b -o json --fail-on warning", "policy check -o json --fail-on warning a b"},
		{"flag=value", "policy check a --output=json", "policy check --output=json a"},
		{"boolean flag takes no value", "policy check a --resolve b", "policy check --resolve a b"},
		{"env boolean flag", "policy check a --quiet b", "policy check --quiet a b"},
		{"double dash keeps the rest positional", "policy check a -- -odd --output", "policy check -- a -odd --output"},
		{"stdin", "policy check - --output json", "policy check --output json -"},
		{"already in order", "verify --config x.yaml -o json", "verify --config x.yaml -o json"},
		{"release record -o FILE", "release record --image r:1 -o out.json", "release record --image r:1 -o out.json"},
		{"unknown command untouched", "frob a --x", "frob a --x"},
		{"command with subcommands untouched", "policy --quiet check a", "policy --quiet check a"},
		{"completion request untouched", "policy check a " + completionFlag, "policy check a " + completionFlag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := reorderArgs(app, append([]string{"polygraph"}, strings.Fields(tc.in)...))
			if want := append([]string{"polygraph"}, strings.Fields(tc.want)...); !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	out, stderr, code := polygraph(t, nil, "policy", "check", "../../examples/policy/deploy", "--output", "json", "--fail-on", "never")
	if code != 0 || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"schema": "polygraph.policy/v1"`) {
		t.Errorf("exit %d (stderr %q), want 0 and JSON: %.200s", code, stderr, out)
	}
	out, _, _ = polygraph(t, nil, "policy", "check", "../../examples/policy/deploy", "-o", "sarif")
	if !strings.Contains(out, `"$schema"`) {
		t.Errorf("-o sarif after the path did not give SARIF: %.200s", out)
	}
	// release record: -o and --out both name the output file; a dead registry is exit 3,
	// never a usage error, so the flags were understood.
	for _, flag := range []string{"-o", "--output", "--out"} {
		_, stderr, code := polygraph(t, nil, "release", "record", "--image", "127.0.0.1:1/app:v1", "--manifest-file", "/m.json", "--cache-dir", "off", "--timeout", "5s", flag, filepath.Join(t.TempDir(), "r.json"))
		if code != 3 {
			t.Errorf("release record %s FILE: exit %d, want 3: %s", flag, code, stderr)
		}
	}
}

func TestCompletion(t *testing.T) {
	names := []string{"completion", "demo", "policy", "release", "verify", "version"}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := polygraph(t, nil, "completion", shell)
		if code != 0 || out == "" {
			t.Fatalf("completion %s: exit %d, %s", shell, code, stderr)
		}
		if _, err := exec.LookPath(shell); err == nil {
			script := filepath.Join(t.TempDir(), "polygraph."+shell)
			os.WriteFile(script, []byte(out), 0o644)
			if msg, err := exec.Command(shell, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n rejects the %s script: %v\n%s", shell, shell, err, msg)
			}
		} else if shell == "bash" {
			t.Error("bash is not installed: the bash script cannot be checked")
		}
		if shell == "fish" {
			for _, n := range append(names, "check", "record") {
				if !strings.Contains(out, "'"+n+"'") {
					t.Errorf("fish script does not complete %q", n)
				}
			}
		}
	}
	if _, _, code := polygraph(t, nil, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}

	// Drive the bash script as bash does on <TAB>.
	script, _, _ := polygraph(t, nil, "completion", "bash")
	complete := func(words ...string) []string {
		t.Helper()
		cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
_polygraph_complete
printf '%s\n' "${COMPREPLY[@]}"`, "bash")
		cmd.Args = append(cmd.Args, words...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("completing %q: %v", words, err)
		}
		return strings.Fields(string(out))
	}
	if got := complete("polygraph", ""); !containsAll(got, names) {
		t.Errorf("polygraph <TAB> = %q, want every command", got)
	}
	if got := complete("polygraph", "pol"); !slices.Equal(got, []string{"policy"}) {
		t.Errorf("polygraph pol<TAB> = %q", got)
	}
	if got := complete("polygraph", "policy", "check", "--ou"); !slices.Equal(got, []string{"--output"}) {
		t.Errorf("polygraph policy check --ou<TAB> = %q", got)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// TestManPage checks docs/polygraph.1 is what the command definitions generate today.
func TestManPage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runCLI(context.Background(), []string{"polygraph", "man"}, nil, &out, &errb); code != 0 {
		t.Fatalf("polygraph man: exit %d: %s", code, errb.String())
	}
	for _, n := range []string{"verify", "policy", "check", "release", "record", "completion", "--fail-on", "--output"} {
		if !strings.Contains(out.String(), n) {
			t.Errorf("man page lacks %q", n)
		}
	}
	saved, err := os.ReadFile("../../docs/polygraph.1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved, out.Bytes()) {
		t.Error("docs/polygraph.1 is stale: run go generate ./cmd/polygraph")
	}
}
