package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/safeio"
	"github.com/polygraph-dev/polygraph/policy"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/report"
)

func init() {
	commands = append(commands, policyCommand)
}

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "check deploy configuration for image references that can change under a deployment",
		Subcommands: []*cli.Command{{
			Name:      "check",
			Usage:     "report mutable, latest and disallowed image references in Kubernetes, compose, ECS, CloudFormation, Dockerfiles and GitHub workflows",
			ArgsUsage: "PATH...|-",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "text, json, sarif or github", EnvVars: env("output")},
				failOnFlag(),
				boolFlag("resolve", nil, "ask the registries: suggest digests and detect moved tags"),
				&cli.StringSliceFlag{Name: "skip-path", Usage: "skip files and directories matching `GLOB` (repeatable; ** spans directories); each skipped file is counted", EnvVars: env("skip-path")},
			},
			Action: policyCheck,
		}},
	}
}

func policyFormat(s string) (string, error) {
	if slices.Contains(report.PolicyFormats, s) {
		return s, nil
	}
	return "", fmt.Errorf("--output: %q is not text, json, sarif or github", s)
}

func policyCheck(c *cli.Context) error {
	g, err := getGlobals(c)
	if err != nil {
		return err
	}
	format, err := policyFormat(c.String("output"))
	if err != nil {
		return usageErr(err)
	}
	threshold, err := failOn(c)
	if err != nil {
		return err
	}
	paths := c.Args().Slice()
	if len(paths) == 0 {
		return usageErr(errors.New("policy check: name the files or directories to check, or - for stdin"))
	}
	cfg, err := g.loadConfig(false)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, g.timeout)
	defer cancel()

	exclude := append(append([]string(nil), cfg.Policy.Exclude...), c.StringSlice("skip-path")...)
	g.logger.Debug("reading deploy configurations", "paths", paths)
	in, err := policy.Load(ctx, paths, c.App.Reader, g.logger, policy.WithExclude(exclude...))
	if err != nil {
		var se *safeio.Error
		switch {
		case errors.As(err, &se):
			// A missing file, a FIFO, a device or a file over the cap, named explicitly.
			return usageErr(err)
		case errors.Is(err, context.DeadlineExceeded):
			return unverifiable(fmt.Errorf("policy check: --timeout %s reached while reading the inputs", g.timeout))
		case errors.Is(err, policy.ErrBadGlob):
			return usageErr(err)
		}
		return unverifiable(err)
	}
	opts := []policy.Option{policy.WithConfig(cfg), policy.WithLogger(g.logger)}
	if c.Bool("resolve") {
		resolver, err := policyResolver(cfg, g)
		if err != nil {
			return usageErr(err)
		}
		opts = append(opts, policy.WithResolver(resolver))
		if awsCfg, err := awsconf.LoadDefault(ctx); err != nil {
			g.logger.Warn("not checking ECR tag mutability: loading the AWS configuration", "err", err)
		} else {
			opts = append(opts, policy.WithTagMutability(policy.ECRTagMutability(awsCfg)))
		}
	}
	rep, err := policy.Check(ctx, in, opts...)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && !errors.As(err, new(*policy.ResolveError)) {
			return unverifiable(fmt.Errorf("policy check: --timeout %s reached", g.timeout))
		}
		return unverifiable(err)
	}
	ro := report.Options{Color: g.color, Quiet: g.quiet, Version: polygraphVersion()}
	if err := report.RenderPolicy(c.App.Writer, rep, format, ro); err != nil {
		return unverifiable(fmt.Errorf("writing the report: %w", err))
	}
	if len(in.Files) == 0 {
		// Like a fleet without instances: nothing was checked, which is not a pass.
		return unverifiable(fmt.Errorf("no deploy configuration recognised in %s", strings.Join(paths, " ")))
	}
	if rep.FailsAt(threshold) {
		return findingsExit
	}
	return nil
}

// policyResolver resolves tags through the same registry client as verify and release record:
// the Docker keychain plus Amazon ECR, one ping and token per registry, and a hard deadline.
// Tags are asked afresh every run, so there is nothing to cache.
func policyResolver(cfg *config.Config, g *globals) (policy.Resolver, error) {
	client, err := registry.FromConfig(cfg, registry.WithLogger(g.logger), registry.WithCacheDir(""))
	if err != nil {
		return nil, err
	}
	return policy.ResolverFunc(func(ctx context.Context, tag name.Tag) (string, error) {
		set, err := client.Resolve(ctx, tag.String())
		if err != nil {
			return "", err
		}
		return set.Digest, nil
	}), nil
}
