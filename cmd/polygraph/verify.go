package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/report"
)

func init() {
	commands = append(commands, func() *cli.Command {
		return &cli.Command{
			Name:      "verify",
			Usage:     "check every instance serves the release it claims, and every asset it serves exists on the CDN",
			UsageText: "polygraph verify [--config F] [--output text|json|junit|markdown] [--fail-on error|warning|never] [--report FILE]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "text, json, junit or markdown", EnvVars: env("output")},
				failOnFlag(),
				&cli.StringFlag{Name: "report", Usage: "also write the JSON report to `FILE`", EnvVars: env("report")},
			},
			Action: verifyAction,
		}
	})
}

// failOnFlag is the --fail-on flag of verify and policy check.
func failOnFlag() cli.Flag {
	return &cli.StringFlag{Name: "fail-on", Value: "error", Usage: "exit 1 on findings at or above: error, warning or never", EnvVars: env("fail-on")}
}

// failOn parses --fail-on: the severity at or above which findings fail the run ("never" never
// does).
func failOn(c *cli.Context) (model.Severity, error) {
	switch v := c.String("fail-on"); v {
	case "error", "warning", "never":
		return model.Severity(v), nil
	default:
		return "", usageErr(fmt.Errorf("--fail-on must be error, warning or never, got %q", v))
	}
}

// fleetRun is what verify and diagnose read before they run the pipeline over the fleet.
type fleetRun struct {
	g         *globals
	threshold model.Severity
	output    string
	cfg       *config.Config
	opts      run.Options
}

// prepareRun reads the flags and the config of a command that runs the pipeline, whose
// --output takes one of formats.
func prepareRun(c *cli.Context, formats []string) (*fleetRun, error) {
	g, err := getGlobals(c)
	if err != nil {
		return nil, err
	}
	threshold, err := failOn(c)
	if err != nil {
		return nil, err
	}
	output, err := outputFormat(c, formats)
	if err != nil {
		return nil, err
	}
	cfg, err := g.loadConfig(true)
	if err != nil {
		return nil, err
	}
	return &fleetRun{g: g, threshold: threshold, output: output, cfg: cfg, opts: run.Options{
		Logger: g.logger, Version: polygraphVersion(), Progress: progressBar(c.App.ErrWriter, g),
		Discovered: softMemoryLimit, Probed: raiseMemoryLimit,
	}}, nil
}

func verifyAction(c *cli.Context) error {
	f, err := prepareRun(c, report.Formats)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, f.g.timeout)
	defer cancel()
	rep, err := f.verify(ctx)
	return finish(c.App.Writer, rep, err, f.output, c.String("report"), f.threshold, f.g)
}

// verify runs every stage for the report, which is rendered and dropped: its instances are
// built as they are written (CompactReport). The config is handed over, not kept: once its
// static entries are targets the run drops them (half a megabyte at 10,000 instances), which
// it cannot while f still holds them.
func (f *fleetRun) verify(ctx context.Context) (*model.Report, error) {
	cfg := f.cfg
	f.cfg = nil
	f.opts.CompactReport = true
	return run.Verify(ctx, cfg, f.opts)
}

// finish renders the report (a run that could not verify has one too, verdict "error"),
// writes --report, and turns the report into the command's exit code. Only a configuration
// error comes without a report.
func finish(w io.Writer, rep *model.Report, runErr error, output, reportFile string, threshold model.Severity, g *globals) error {
	var ce *config.Error
	if rep == nil || errors.As(runErr, &ce) {
		if runErr == nil {
			runErr = errors.New("the run produced no report")
		}
		return runErr
	}
	if err := report.Render(w, rep, output, report.Options{Color: g.color, Quiet: g.quiet, FailOn: threshold}); err != nil {
		return unverifiable(fmt.Errorf("writing the report: %w", err))
	}
	if reportFile != "" {
		if err := writeAtomic(reportFile, func(w io.Writer) error { return report.RenderJSON(w, rep) }); err != nil {
			return unverifiable(err)
		}
	}
	return reportExit(rep, runErr, threshold)
}

// progressBar draws probing progress on stderr when it is a terminal and not --quiet.
func progressBar(w io.Writer, g *globals) func(done, total int) {
	if g.quiet || !isTerminal(w) {
		return nil
	}
	return func(done, total int) {
		if total < 20 {
			return
		}
		const width = 30
		filled := done * width / total
		fmt.Fprintf(w, "\rprobing [%s%s] %d/%d", strings.Repeat("█", filled), strings.Repeat("·", width-filled), done, total)
		if done == total {
			fmt.Fprint(w, "\r\x1b[K")
		}
	}
}

// softMemoryLimit sets a soft memory limit sized to the fleet, unless GOMEMLIMIT is set: the
// garbage collector then keeps the heap near what the run needs instead of letting it double
// (GOGC=100). It is a safety net, not what keeps per-instance memory small: on a fleet serving
// a few builds the heap stays under it (the same peak RSS with GOMEMLIMIT=off), while on one
// serving 200 builds and 40,000 unique assets, where the CDN check holds more, the fleet
// benchmark measured 57.5 -> 45.7 MiB at about the same CPU (docs/benchmark.md). The limit is
// soft: a run that needs more gets it, and raiseMemoryLimit keeps it at least twice the live
// heap so the collector never thrashes. GOMEMLIMIT=off turns it off.
func softMemoryLimit(instances int) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimitFor(instances))
	}
}

// memoryLimitFor is 24 MiB plus 1 KiB per instance: about 1.4 times the live heap measured
// for 10,000 instances serving 200 builds (40,000 unique assets).
func memoryLimitFor(instances int) int64 {
	return 24<<20 + int64(instances)<<10
}

// raiseMemoryLimit lifts the soft limit to twice the live heap once instances are probed:
// a fleet whose instances serve many different builds holds more than the estimate.
func raiseMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if want := 2 * int64(sample[0].Value.Uint64()); want > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(want)
	}
}
