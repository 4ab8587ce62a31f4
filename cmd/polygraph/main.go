// Command polygraph checks that every instance of a fleet serves exactly the release it claims,
// and that everything it serves exists on the CDN.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
)

// Exit codes (SPEC §2). Only main calls os.Exit, with the code exitCode computes.
const (
	exitOK           = 0 // verified, nothing at or above --fail-on
	exitFindings     = 1 // findings at or above --fail-on (hook: instance abandoned)
	exitUsage        = 2 // usage or configuration error
	exitUnverifiable = 3 // could not verify at all
)

// version is set at build time with -ldflags "-X main.version=..."; otherwise the module
// version recorded in the binary is used.
var version = ""

// commands is filled by each command's file (one file per command).
var commands []*cli.Command

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if s, ok := (<-sigs).(syscall.Signal); ok {
			cancel(&interrupted{sig: s})
		}
	}()
	code := runCLI(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(signalExit(ctx, code))
}

// interrupted is the cause of a run cancelled by a signal.
type interrupted struct{ sig syscall.Signal }

func (e *interrupted) Error() string {
	name := "SIGINT"
	if e.sig == syscall.SIGTERM {
		name = "SIGTERM"
	}
	return "interrupted by " + name
}

// signalExit is the exit code of a run: 128 plus the signal number (130 after SIGINT, 143
// after SIGTERM) when a signal cancelled it, else code.
func signalExit(ctx context.Context, code int) int {
	var in *interrupted
	if errors.As(context.Cause(ctx), &in) {
		return 128 + int(in.sig)
	}
	return code
}

// runCLI runs the CLI and returns the process exit code.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	notFound := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		fmt.Fprintf(c.App.ErrWriter, "polygraph: unknown command %q; see polygraph --help\n", name)
		notFound = true
	}
	code := exitCode(app.RunContext(ctx, args), stderr)
	if notFound {
		return exitUsage
	}
	return code
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	cmds := append([]*cli.Command(nil), commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		withCommonFlags(c)
	}
	return &cli.App{
		Name:        "polygraph",
		Usage:       "is every instance serving exactly the release it claims, and does everything it serves exist on the CDN?",
		Version:     polygraphVersion(),
		Commands:    cmds,
		Reader:      stdin,
		Writer:      stdout,
		ErrWriter:   stderr,
		HideVersion: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErr(err)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // exit codes are ours to map
	}
}

// withCommonFlags adds the flags every command accepts after its name (and subcommands).
func withCommonFlags(c *cli.Command) {
	have := map[string]bool{}
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			have[n] = true
		}
	}
	for _, f := range commonFlags() {
		if !have[f.Names()[0]] {
			c.Flags = append(c.Flags, f)
		}
	}
	if c.OnUsageError == nil {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErr(err) }
	}
	for _, s := range c.Subcommands {
		withCommonFlags(s)
	}
}

// env names the POLYGRAPH_* variable of a flag.
func env(flag string) []string {
	return []string{"POLYGRAPH_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "config file (default polygraph.yaml when present)", EnvVars: env("config")},
		&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "overall deadline", EnvVars: env("timeout")},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the result", EnvVars: env("quiet")},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error (logs go to stderr)", EnvVars: env("log-level")},
		&cli.BoolFlag{Name: "no-color", Usage: "never colour the output", EnvVars: append(env("no-color"), "NO_COLOR")},
	}
}

// exitError carries an exit code through urfave/cli to exitCode.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

func unverifiable(err error) error { return &exitError{code: exitUnverifiable, err: err} }

// findingsExit is returned when findings reach --fail-on; the report was already printed.
var findingsExit = &exitError{code: exitFindings}

// exitCode maps a command's error to the process exit code, printing it. It is the only place
// errors become exit codes.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	code := exitUnverifiable
	var ee *exitError
	var ce *config.Error
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.err == nil {
			return code
		}
	case errors.As(err, &ce):
		code = exitUsage
	}
	fmt.Fprintf(stderr, "polygraph: %v\n", err)
	return code
}

// globals are the common flags of a command.
type globals struct {
	configPath string
	timeout    time.Duration
	quiet      bool
	color      bool
	logger     *slog.Logger
}

func getGlobals(c *cli.Context) (*globals, error) {
	g := &globals{configPath: c.String("config"), timeout: c.Duration("timeout"), quiet: c.Bool("quiet")}
	if g.timeout <= 0 {
		return nil, usageErr(fmt.Errorf("--timeout must be positive, got %s", g.timeout))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, usageErr(fmt.Errorf("--log-level: %q is not debug, info, warn or error", c.String("log-level")))
	}
	g.logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	g.color = !c.Bool("no-color") && os.Getenv("NO_COLOR") == "" && isTerminal(c.App.Writer)
	return g, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// loadConfig loads --config, or polygraph.yaml when present. With required, no config at all is
// a usage error.
func (g *globals) loadConfig(required bool) (*config.Config, error) {
	path := g.configPath
	if path == "" {
		if _, err := os.Stat("polygraph.yaml"); err == nil {
			path = "polygraph.yaml"
		} else if required {
			return nil, usageErr(errors.New("no configuration: pass --config FILE (or POLYGRAPH_CONFIG), or create polygraph.yaml"))
		} else {
			return config.Parse(nil, "", "")
		}
	}
	return config.Load(path)
}

func polygraphVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
