package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/hook"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/report"
)

func init() {
	commands = append(commands, hookCommand)
}

func hookCommand() *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "answer one Auto Scaling lifecycle action: verify the launching instance, then CONTINUE or ABANDON",
		UsageText: "polygraph hook [--config F] --event FILE|- [--output json|text|junit|markdown] [--report FILE]\n   polygraph hook serve [--config F] --queue SQS_URL",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "event", Usage: "the lifecycle event: a `FILE` or - for stdin (EventBridge, SQS body, SNS envelope or Lambda SQS event)", EnvVars: env("event")},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "json", Usage: "json, text, junit or markdown", EnvVars: env("output")},
			&cli.StringFlag{Name: "report", Usage: "also write the JSON report to `FILE`", EnvVars: env("report")},
		},
		Action: hookAction,
		Subcommands: []*cli.Command{{
			Name:      "serve",
			Usage:     "answer lifecycle actions from an SQS queue until SIGTERM",
			UsageText: "polygraph hook serve [--config F] --queue SQS_URL",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "queue", Usage: "the SQS queue `URL` Auto Scaling (or EventBridge) sends lifecycle events to", EnvVars: env("queue")},
				&cli.DurationFlag{Name: "visibility", Value: time.Minute, Usage: "visibility timeout of a received message, extended every third of it while worked on (whole seconds, 1s to 12h)", EnvVars: env("visibility")},
			},
			Action: hookServeAction,
		}},
	}
}

// hookSetup loads the config and builds the handler over one AWS config.
func hookSetup(c *cli.Context, g *globals) (*config.Config, *hook.Handler, error) {
	cfg, err := g.loadConfig(true)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Fleet.EC2 == nil {
		return nil, nil, &config.Error{File: cfg.File, Msg: "hook needs fleet.ec2 (address and port): it is how the launching instance is addressed"}
	}
	ac, err := awsconf.Load(c.Context, cfg.Fleet.EC2.Region)
	if err != nil {
		return nil, nil, err
	}
	launches, err := run.NewLaunchesFromAWS(cfg, ac, run.Options{Logger: g.logger, Version: polygraphVersion()},
		run.LaunchOptions{VerifyTimeout: g.timeout})
	if err != nil {
		return nil, nil, err
	}
	return cfg, hook.NewFromAWS(cfg, ac, launches.Verify, hook.WithLogger(g.logger)), nil
}

func hookAction(c *cli.Context) error {
	g, err := getGlobals(c)
	if err != nil {
		return err
	}
	output, err := outputFormat(c, report.Formats)
	if err != nil {
		return err
	}
	if c.String("event") == "" {
		return usageErr(errors.New("hook needs --event FILE (or - for stdin), or the serve subcommand"))
	}
	ev, err := readEvent(c.String("event"), c.App.Reader)
	if err != nil {
		return err
	}
	_, h, err := hookSetup(c, g)
	if err != nil {
		return err
	}
	out, err := h.Handle(c.Context, ev)
	fmt.Fprintf(c.App.ErrWriter, "polygraph hook: %s %s: %s %s\n", ev.Group, orDash(ev.InstanceID), orDash(string(out.Decision)), out.Reason)
	if out.Report != nil {
		if rerr := finish(c.App.Writer, out.Report, nil, output, c.String("report"), "never", g); rerr != nil {
			return rerr
		}
	}
	switch {
	case err != nil:
		return unverifiable(err)
	case out.ExitCode == model.ExitOK:
		return nil
	}
	return &exitError{code: out.ExitCode}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readEvent reads one lifecycle event from a regular file or stdin, through the size cap. A
// Lambda SQS event must hold exactly one message.
func readEvent(name string, stdin io.Reader) (hook.Event, error) {
	var r io.Reader = stdin
	if name != "-" {
		fi, err := os.Stat(name)
		if err != nil {
			return hook.Event{}, usageErr(fmt.Errorf("reading --event: %w", err))
		}
		if !fi.Mode().IsRegular() {
			return hook.Event{}, usageErr(fmt.Errorf("reading --event %s: not a regular file", name))
		}
		f, err := os.Open(name)
		if err != nil {
			return hook.Event{}, usageErr(fmt.Errorf("reading --event: %w", err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, hook.MaxEventBytes+1))
	if err != nil {
		return hook.Event{}, usageErr(fmt.Errorf("reading --event %s: %w", name, err))
	}
	if len(data) > hook.MaxEventBytes {
		return hook.Event{}, usageErr(fmt.Errorf("reading --event %s: over the %d byte limit", name, hook.MaxEventBytes))
	}
	ev, err := hook.Decode(data)
	if errors.Is(err, hook.ErrRecords) {
		recs, rerr := hook.DecodeRecords(data)
		switch {
		case rerr != nil:
			err = rerr
		case len(recs) != 1:
			return hook.Event{}, usageErr(fmt.Errorf("--event %s is an SQS event with %d messages; hook answers one (use hook serve or the Lambda function for batches)", name, len(recs)))
		default:
			ev, err = recs[0].Event, recs[0].Err
		}
	}
	if err != nil {
		return hook.Event{}, usageErr(fmt.Errorf("--event %s: %w", name, err))
	}
	return ev, nil
}

func hookServeAction(c *cli.Context) error {
	g, err := getGlobals(c)
	if err != nil {
		return err
	}
	queue := c.String("queue")
	if queue == "" {
		return usageErr(errors.New("hook serve needs --queue SQS_URL"))
	}
	vis := c.Duration("visibility")
	if vis < time.Second || vis > 12*time.Hour || vis%time.Second != 0 {
		return usageErr(fmt.Errorf("--visibility must be whole seconds between 1s and 12h, got %s", vis))
	}
	cfg, h, err := hookSetup(c, g)
	if err != nil {
		return err
	}
	ac, err := awsconf.Load(context.WithoutCancel(c.Context), cfg.Fleet.EC2.Region)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(c.App.ErrWriter, nil))
	log.Info("serving", "queue", queue, "concurrency", cfg.Hook.Concurrency, "drain_timeout", cfg.Hook.DrainTimeout.D().String())
	res, err := hook.Serve(c.Context, h, sqs.NewFromConfig(ac), hook.ServeOptions{
		Queue: queue, Concurrency: cfg.Hook.Concurrency, DrainTimeout: cfg.Hook.DrainTimeout.D(), Log: log, Visibility: vis,
	})
	log.Info("stopped", "received", res.Received, "handled", res.Handled, "deleted", res.Deleted, "left", res.Left,
		"left_at_drain", res.LeftAtDrain, "duplicates", res.Duplicates)
	switch {
	case err != nil:
		return unverifiable(awsconf.Wrap(err, ac.Region))
	case res.LeftAtDrain > 0:
		return &exitError{code: exitFindings, stopped: true, err: fmt.Errorf("%d message(s) left unfinished on the queue at shutdown", res.LeftAtDrain)}
	}
	// SIGTERM is how a worker is stopped: a clean drain exits 0, not 143.
	return &exitError{code: exitOK, stopped: true}
}
