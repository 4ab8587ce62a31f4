package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Set at link time by release builds (.goreleaser.yaml):
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=abc123 -X main.date=2026-12-01T00:00:00Z"
//
// Each one left empty is read from the build information the Go toolchain records: the module
// version (go install ...@v1.2.3), and the VCS revision and commit time of a build from a
// checkout.
var version, commit, date string

func init() {
	commands = append(commands, func() *cli.Command {
		return &cli.Command{
			Name:  "version",
			Usage: "print polygraph's version, commit and build date",
			Action: func(c *cli.Context) error {
				printVersion(c.App.Writer)
				return nil
			},
		}
	})
}

// buildInfo is what `polygraph version` prints.
type buildInfo struct {
	Version  string // release version, or "devel" for a build of an untagged checkout
	Commit   string // VCS revision; "" when unknown
	Date     string // build date for release builds, else the commit time; "" when unknown
	Modified bool   // built from a checkout with uncommitted changes
}

// currentBuild combines the link-time values with the binary's own build information.
func currentBuild() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return resolveBuild(version, commit, date, bi)
}

// resolveBuild prefers the link-time values and fills what they leave empty from bi (which may
// be nil).
func resolveBuild(ldVersion, ldCommit, ldDate string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Commit: ldCommit, Date: ldDate}
	if bi == nil {
		if b.Version == "" {
			b.Version = "devel"
		}
		return b
	}
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if b.Commit == "" {
		b.Commit = vcs["vcs.revision"]
		// The modified flag describes the revision read here; a release build's commit is
		// its own claim.
		b.Modified = vcs["vcs.modified"] == "true"
	}
	if b.Date == "" {
		b.Date = vcs["vcs.time"]
	}
	return b
}

// polygraphVersion is the version written into reports and release records.
func polygraphVersion() string { return currentBuild().Version }

func printVersion(w io.Writer) {
	b := currentBuild()
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	} else if b.Modified {
		commit += " (modified)"
	}
	date := b.Date
	if date == "" {
		date = "unknown"
	}
	fmt.Fprintf(w, "polygraph %s\ncommit: %s\nbuilt:  %s\ngo:     %s %s/%s\n", b.Version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
