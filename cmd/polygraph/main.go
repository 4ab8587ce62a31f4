//go:generate sh -c "go run . man > ../../docs/polygraph.1"

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
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/safeio"
)

// Exit codes (SPEC §2). Only main calls os.Exit, with the code exitCode computes.
const (
	exitOK           = 0 // verified, nothing at or above --fail-on
	exitFindings     = 1 // findings at or above --fail-on (hook: instance abandoned)
	exitUsage        = 2 // usage or configuration error
	exitUnverifiable = 3 // could not verify at all
)

// commands is filled by each command's file (one file per command). Each app builds its own
// commands: urfave/cli keeps parsing state (values read from the environment) in the flags.
var commands []func() *cli.Command

func main() {
	ctx, stop := notifyContext(context.Background())
	code := runCLI(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// SignalError is the cause of the context's cancellation when SIGINT or SIGTERM arrived; the
// exit code is then 128 plus the signal's number (130, 143) whatever the command returned.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// ExitCode is the shell's convention for a process ended by the signal.
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// notifyContext is signal.NotifyContext that records which signal arrived as the context's
// cause. After the first signal the handler is removed, so a second one ends the process at once.
func notifyContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			sig, _ := s.(syscall.Signal)
			cancel(&SignalError{Signal: sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// runCLI runs the CLI and returns the process exit code.
func runCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	notFound := false
	app.CommandNotFound = func(c *cli.Context, name string) {
		fmt.Fprintf(c.App.ErrWriter, "polygraph: unknown command %q; see polygraph --help\n", name)
		notFound = true
	}
	err := app.RunContext(ctx, reorderArgs(app, args))
	var se *SignalError
	var ee *exitError
	if errors.As(context.Cause(ctx), &se) && !(errors.As(err, &ee) && ee.stopped) {
		// Whatever the command made of its cancelled context, the run was interrupted.
		fmt.Fprintf(stderr, "polygraph: %v\n", se)
		return se.ExitCode()
	}
	code := exitCode(err, stderr)
	if notFound {
		return exitUsage
	}
	return code
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	var cmds []*cli.Command
	for _, mk := range commands {
		cmds = append(cmds, mk())
	}
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
		HideVersion: true, // our own --version prints the commit and build date too
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Usage: "print the version, commit and build date"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				printVersion(c.App.Writer)
				return nil
			}
			if c.NArg() > 0 {
				return usageErr(fmt.Errorf("unknown command %q; see polygraph --help", c.Args().First()))
			}
			return cli.ShowAppHelp(c)
		},
		EnableBashCompletion: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErr(err)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // exit codes are ours to map
	}
}

// printOnly lists the commands that only print something fixed (a script, the man page): the
// common flags would be accepted there and do nothing, so they do not get them.
var printOnly = map[string]bool{"completion": true, "man": true}

// withCommonFlags adds the flags every command accepts after its name (and subcommands).
func withCommonFlags(c *cli.Command) {
	if c.OnUsageError == nil {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErr(err) }
	}
	if printOnly[c.Name] {
		return
	}
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
		boolFlag("quiet", []string{"q"}, "print only the result"),
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error (logs go to stderr)", EnvVars: env("log-level")},
		// NO_COLOR is read in getGlobals: any non-empty value disables colour (no-color.org),
		// "0" and "false" included, so it is no boolean variable of this flag.
		boolFlag("no-color", nil, "never colour the output (also when NO_COLOR is set to anything)"),
	}
}

// exitError carries an exit code through urfave/cli to exitCode.
type exitError struct {
	code int
	err  error
	// stopped says the command ended on SIGINT/SIGTERM as its normal way of stopping (hook
	// serve drains and exits 0 or 1): its code stands instead of 130/143.
	stopped bool
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
	var fe *safeio.Error
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.err == nil {
			return code
		}
	case errors.As(err, &ce), errors.As(err, &fe):
		// A config error, or an input file that is not a regular file under its size cap.
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
	cfg, err := config.Load(path)
	if err == nil {
		for _, w := range cfg.Warnings {
			g.logger.Warn(w)
		}
	}
	return cfg, err
}
