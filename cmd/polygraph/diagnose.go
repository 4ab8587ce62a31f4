package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/diagnose"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/report"
)

func init() {
	commands = append(commands, func() *cli.Command {
		return &cli.Command{
			Name:      "diagnose",
			Usage:     "verify, then explain: what is wrong, on which instances, since when, why, and what to do",
			UsageText: "polygraph diagnose [--config F] [--output text|json|html] [--fail-on error|warning|never] [--report FILE]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "text, json or html", EnvVars: env("output")},
				failOnFlag(),
				&cli.StringFlag{Name: "report", Usage: "also write the JSON diagnosis (the verify report embedded) to `FILE`", EnvVars: env("report")},
			},
			Action: diagnoseAction,
		}
	})
}

func diagnoseAction(c *cli.Context) error {
	f, err := prepareRun(c, report.DiagnosisFormats)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, f.g.timeout)
	defer cancel()
	res, runErr := run.Run(ctx, f.cfg, f.opts)
	return diagnoseFinish(ctx, c.App.Writer, f.cfg, res, runErr, diagnose.Options{Logger: f.g.logger, Version: polygraphVersion()}, f.output, c.String("report"), f.threshold, f.g)
}

// diagnoseFinish explains a run, renders the diagnosis, writes --report and returns the exit
// code's error, exactly as verify decides it from the embedded report.
func diagnoseFinish(ctx context.Context, w io.Writer, cfg *config.Config, res *run.Result, runErr error, o diagnose.Options, output, reportFile string, threshold model.Severity, g *globals) error {
	var ce *config.Error
	if res == nil || res.Report == nil || errors.As(runErr, &ce) {
		if runErr == nil {
			runErr = errors.New("the run produced no report")
		}
		return runErr
	}
	// The diagnosis reads the release and the report only; the observations and the CDN
	// results (most of a large fleet's memory) are left to the collector.
	d, err := diagnose.Diagnose(ctx, cfg, diagnose.Input{Release: res.Release, Report: res.Report}, o)
	if err != nil {
		return err
	}
	rep := d.Report
	if g.quiet && output == "text" {
		fmt.Fprintf(w, "%s: %d instances in %d groups, %d causes\n", d.Verdict, rep.NumInstances(), len(d.Groups), len(d.Causes))
	} else if err := report.RenderDiagnosis(w, d, output, report.DiagnosisOptions{Color: g.color}); err != nil {
		return unverifiable(fmt.Errorf("writing the diagnosis: %w", err))
	}
	if reportFile != "" {
		if err := writeAtomic(reportFile, func(w io.Writer) error { return report.RenderDiagnosisJSON(w, d) }); err != nil {
			return unverifiable(err)
		}
	}
	return reportExit(rep, runErr, threshold)
}
