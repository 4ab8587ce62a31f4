package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/registry"
)

func init() {
	commands = append(commands, func() *cli.Command {
		return &cli.Command{
			Name:  "release",
			Usage: "work with release records",
			Subcommands: []*cli.Command{{
				Name:      "record",
				Usage:     "resolve an image and write its release record (run in CI right after the push)",
				UsageText: "polygraph release record --image REF [--manifest-file PATH_IN_IMAGE] [--platform os/arch] [-o|--output FILE]",
				Description: "Resolves the image to its release digest set, reads the served manifest out of the image and\n" +
					"writes the release record (schema polygraph.release/v1). Defaults come from the config's release:\n" +
					"section when a config is given. Exit 3 when the registry, the image or the file cannot be read.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "image", Usage: "image reference, tag or digest (default: release.image)", EnvVars: env("image")},
					&cli.StringFlag{Name: "manifest-file", Usage: "absolute path of the served manifest inside the image (default: release.manifest_file)", EnvVars: env("manifest-file")},
					&cli.StringFlag{Name: "platform", Usage: "os/arch[/variant] whose manifest file is read (default: release.platform, else linux/amd64)", EnvVars: env("platform")},
					// -o/--output as in every command; POLYGRAPH_OUT only, since POLYGRAPH_OUTPUT names
					// the output format of verify and policy check.
					&cli.StringFlag{Name: "output", Aliases: []string{"o", "out"}, Usage: "write the record to `FILE` instead of stdout", EnvVars: env("out")},
					&cli.StringFlag{Name: "cache-dir", Usage: "registry cache directory (default $XDG_CACHE_HOME/polygraph/registry; \"off\" disables it)", EnvVars: env("cache-dir")},
				},
				Action: releaseRecord,
			}},
		}
	})
}

// releaseRecord is `polygraph release record`.
func releaseRecord(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr(fmt.Errorf("release record takes no arguments, got %q", c.Args().Slice()))
	}
	g, err := getGlobals(c)
	if err != nil {
		return err
	}
	cfg, err := g.loadConfig(false)
	if err != nil {
		return err
	}
	image := releaseFirst(c.String("image"), cfg.Release.Image)
	if image == "" {
		return usageErr(errors.New("no image: pass --image REF (or set release.image in the config)"))
	}
	file := releaseFirst(c.String("manifest-file"), cfg.Release.ManifestFile)
	if file == "" {
		return usageErr(errors.New("no manifest file: pass --manifest-file PATH_IN_IMAGE (or set release.manifest_file in the config)"))
	}
	if !strings.HasPrefix(file, "/") {
		return usageErr(fmt.Errorf("--manifest-file must be an absolute path inside the image, got %q", file))
	}
	platform := releaseFirst(c.String("platform"), cfg.Release.Platform, registry.DefaultPlatform)

	// The flags win over the config; the client then hashes the asset set exactly as verify's
	// prober will, from the same settings.
	cfg.Release.Image, cfg.Release.ManifestFile, cfg.Release.Platform = image, file, platform
	var opts []registry.Option
	switch dir := c.String("cache-dir"); dir {
	case "":
	case "off":
		opts = append(opts, registry.WithCacheDir(""))
	default:
		opts = append(opts, registry.WithCacheDir(dir))
	}
	client, err := run.RegistryClient(cfg, g.logger, polygraphVersion(), opts...)
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := context.WithTimeout(c.Context, g.timeout)
	defer cancel()
	rec, err := client.Record(ctx, image, platform, file)
	if err != nil {
		return releaseErr(err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	out := c.String("output")
	if out == "" {
		_, err = c.App.Writer.Write(b)
		return err
	}
	if err := writeAtomic(out, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return unverifiable(fmt.Errorf("writing the release record: %w", err))
	}
	if !g.quiet {
		fmt.Fprintf(c.App.Writer, "recorded %s: %s (%d digests, %d assets) in %s\n", image, rec.Digest, len(rec.Digests), rec.Assets, out)
	}
	return nil
}

// releaseErr maps the registry's typed errors to exit codes: a reference or platform that does
// not parse is a usage error (2); anything that stopped the record (registry unreachable or
// rate limiting, credentials refused, image or file missing, file unusable) is exit 3.
func releaseErr(err error) error {
	var re *registry.ReferenceError
	if errors.As(err, &re) {
		return usageErr(err)
	}
	return unverifiable(err)
}

func releaseFirst(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
