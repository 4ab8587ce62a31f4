package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/policy"
	"github.com/polygraph-dev/polygraph/registry"
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
			},
			Action: policyCheck,
		}},
	}
}

// policyFailOn maps --fail-on to the policy's severity threshold ("" for never).
func policyFailOn(c *cli.Context) (policy.Severity, error) {
	sev, err := failOn(c)
	if err != nil || sev == "never" {
		return "", err
	}
	return policy.Severity(sev), nil
}

func policyFormat(s string) (policy.Format, error) {
	for _, f := range policy.Formats {
		if string(f) == s {
			return f, nil
		}
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
	failOn, err := policyFailOn(c)
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

	in, err := policy.Load(ctx, paths, c.App.Reader, g.logger)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return usageErr(err)
		}
		return unverifiable(err)
	}
	opts := []policy.Option{policy.WithConfig(cfg), policy.WithLogger(g.logger)}
	if c.Bool("resolve") {
		resolver, err := policyResolver(g, cfg)
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
	report, err := policy.Check(ctx, in, opts...)
	if err != nil {
		return unverifiable(err)
	}
	ro := policy.RenderOptions{Color: g.color, Quiet: g.quiet, Version: polygraphVersion()}
	if err := policy.Render(c.App.Writer, report, format, ro); err != nil {
		return unverifiable(fmt.Errorf("writing the report: %w", err))
	}
	if len(in.Files) == 0 {
		// Like a fleet without instances: nothing was checked, which is not a pass.
		return unverifiable(fmt.Errorf("no deploy configuration recognised in %s", strings.Join(paths, " ")))
	}
	if report.FailsAt(failOn) {
		return findingsExit
	}
	return nil
}

// policyResolver resolves tags through the same registry client as verify and release record:
// the Docker keychain plus Amazon ECR, one ping and token per registry, and a hard deadline.
func policyResolver(g *globals, cfg *config.Config) (policy.Resolver, error) {
	client, err := registry.New(registry.WithLogger(g.logger), registry.WithCacheDir(""), registry.WithInsecureRegistries(cfg.Registry.Insecure...))
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
