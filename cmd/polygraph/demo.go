package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/verify"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "demo",
		Usage: "reproduce the April 2021 incident on a simulated fleet and catch it (no set-up needed)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "serve", Usage: "keep the simulated world running and write a config for `polygraph verify`", EnvVars: env("serve")},
			&cli.StringFlag{Name: "dir", Usage: "where --serve writes polygraph.yaml and release.json (default: a new temporary directory)", EnvVars: env("dir")},
		},
		Action: demoAction,
	})
}

func demoAction(c *cli.Context) error {
	g, err := getGlobals(c)
	if err != nil {
		return err
	}
	w, err := testkit.StartIncident()
	if err != nil {
		return unverifiable(fmt.Errorf("starting the simulated world: %w", err))
	}
	defer w.Close()
	rec, err := testkit.Record(w.Good, "registry.example.com/store-web:"+w.Version, "/app/build/asset-manifest.json")
	if err != nil {
		return unverifiable(err)
	}
	dir := c.String("dir")
	if dir == "" {
		if dir, err = os.MkdirTemp("", "polygraph-demo-"); err != nil {
			return unverifiable(err)
		}
		if !c.Bool("serve") {
			defer os.RemoveAll(dir)
		}
	}
	path, err := w.WriteConfig(dir, rec)
	if err != nil {
		return unverifiable(fmt.Errorf("writing the demo config: %w", err))
	}
	out := c.App.Writer
	if c.Bool("serve") {
		fmt.Fprintf(out, "Simulated fleet of %d instances and a CDN are running on loopback.\nIn another terminal:\n\n  polygraph verify --config %s\n\nCtrl-C stops the world.\n", len(w.Fleet.Instances), path)
		<-c.Context.Done()
		return nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, g.timeout)
	defer cancel()
	fmt.Fprintf(out, "Simulated incident: 6 instances of store-web all claim %s; the 2 newest were autoscaled after a CI change re-pushed the artifact under the same version.\n\n$ polygraph verify --config %s\n\n", w.Version, filepath.Base(path))
	rep, err := run.Verify(ctx, cfg, run.Options{Logger: g.logger})
	if err != nil {
		return unverifiable(err)
	}
	if err := verify.Render(out, rep, "text", verify.RenderOptions{Color: g.color, MaxPerKind: 3}); err != nil {
		return unverifiable(err)
	}
	liars, missing := demoCaught(rep)
	if len(liars) != 2 || missing == 0 {
		return &exitError{code: exitFindings, err: fmt.Errorf("the demo did not catch what it was built to show (lying instances %v, missing assets %d)", liars, missing)}
	}
	fmt.Fprintf(out, "\nWhat was caught: %s report %s like the rest, but the manifest they serve is not the release's: they run a rebuilt artifact. "+
		"%d assets their pages reference are missing on the CDN (403), so their users get broken pages. "+
		"Every deployed-version signal said all was well; only asking each instance directly for its content showed the truth.\n",
		strings.Join(liars, " and "), w.Version, missing)
	return nil
}

// demoCaught returns the instances caught lying and how many assets are missing.
func demoCaught(rep *model.Report) (liars []string, missing int) {
	for _, f := range rep.Findings {
		switch f.Kind {
		case model.KindVersionLie:
			liars = append(liars, f.Instance)
		case model.KindAssetMissing:
			missing++
		}
	}
	return liars, missing
}
