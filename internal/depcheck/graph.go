package depcheck

import (
	"fmt"
	"strings"
	"testing"
)

// Layer is where a package sits in the one direction imports may go: commands import the
// pipeline, the pipeline imports the stages, stages import the leaves.
type Layer int

// Layers, from the bottom.
const (
	// Leaf packages (model, manifest, config) are what every stage speaks; model imports no
	// polygraph package, the other leaves only model.
	Leaf Layer = iota
	// Stage packages (fleet, probe, running, registry, verify, report, policy, diagnose,
	// hook) each do one part of the work; they import leaves and their own subpackages, and
	// another stage only by a documented exception (StageExceptions).
	Stage
	// Support packages (internal/* but internal/run: the test kit, fakes, this guard) serve
	// tests, the demo and the benchmarks; they import leaves, stages and other support.
	Support
	// Pipeline is internal/run, which calls the stages in a row; only commands import it.
	Pipeline
	// Command packages (cmd/..., bench/...) are programs; nothing outside their own tree
	// imports them.
	Command
)

func (l Layer) String() string {
	return [...]string{"leaf", "stage", "support", "pipeline", "command"}[l]
}

var (
	leaves = []string{"model", "manifest", "config"}
	// libraries are internal packages every layer may use like a leaf: they import no
	// polygraph package but leaves (the size-capped reader, the one AWS configuration loader).
	libraries = []string{"internal/safeio", "internal/awsconf"}
	stages    = []string{"fleet", "probe", "running", "registry", "verify", "report", "policy", "diagnose", "hook"}
)

// StageExceptions lists the imports between stages that are there by design, each with why.
// (probe and registry read manifests through manifest, which is a leaf, so they need none.)
var StageExceptions = map[[2]string]string{
	{"report", "policy"}:     "report renders the policy report (policy.Report), as it renders model.Report",
	{"diagnose", "registry"}: "attribution reads the manifest file out of the images a group runs, and searches the release repository's tags",
}

// Classify returns the layer of a package (a path relative to the module, such as
// "registry/regtest") and its family: the tree it belongs to ("registry", "internal/testkit",
// "cmd"), within which imports are free. ok is false for a package no layer names.
func Classify(pkg string) (layer Layer, family string, ok bool) {
	first, rest, _ := strings.Cut(pkg, "/")
	switch {
	case contains(libraries, pkg):
		return Leaf, pkg, true
	case contains(leaves, first):
		return Leaf, first, true
	case contains(stages, first):
		return Stage, first, true
	case first == "cmd" || first == "bench" || first == "examples":
		return Command, first, true
	case first == "internal" && (rest == "run" || strings.HasPrefix(rest, "run/")):
		return Pipeline, "internal/run", true
	case first == "internal" && rest != "":
		sub, _, _ := strings.Cut(rest, "/")
		return Support, "internal/" + sub, true
	}
	return 0, "", false
}

// Violation says why the import of to by from breaks the direction, or returns "" when it
// does not. Both are paths relative to the module.
func Violation(from, to string) string {
	fl, ff, ok := Classify(from)
	if !ok {
		return fmt.Sprintf("%s is in no layer: add it to internal/depcheck", from)
	}
	tl, tf, ok := Classify(to)
	if !ok {
		return fmt.Sprintf("%s is in no layer: add it to internal/depcheck", to)
	}
	if ff == tf {
		return ""
	}
	switch {
	case tl == Command:
		return fmt.Sprintf("%s imports %s: nothing imports a command", from, to)
	case tl == Pipeline && fl != Command:
		return fmt.Sprintf("%s imports %s: only commands import the pipeline", from, to)
	case ff == "model":
		return fmt.Sprintf("%s imports %s: model imports no polygraph package", from, to)
	case fl == Leaf && contains(libraries, ff) && tl == Leaf:
		return ""
	case fl == Leaf && contains(libraries, tf):
		return ""
	case fl == Leaf && (tf != "model" || ff == "model"):
		return fmt.Sprintf("%s imports %s: model imports no polygraph package, and the other leaves (%s) only model", from, to, strings.Join(leaves[1:], ", "))
	case fl == Stage && tl == Stage && StageExceptions[[2]string{ff, tf}] == "":
		return fmt.Sprintf("%s imports %s: a stage imports no other stage, except as depcheck.StageExceptions documents", from, to)
	case fl == Stage && tl == Support:
		return fmt.Sprintf("%s imports %s: a stage does not import test support", from, to)
	case fl == Pipeline && tl == Support:
		return fmt.Sprintf("%s imports %s: the pipeline does not import test support", from, to)
	}
	return ""
}

// CheckGraph fails t for every import between the module's packages (test files aside) that
// breaks the direction: cmd -> internal/run -> stages -> leaves.
func CheckGraph(t testing.TB) {
	t.Helper()
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", Module+"/...")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		from := rel(fields[0])
		if _, _, ok := Classify(from); !ok {
			t.Errorf("%s is in no layer: add it to internal/depcheck", from)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, Module+"/") {
				continue
			}
			if v := Violation(from, rel(imp)); v != "" {
				t.Error(v)
			}
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
