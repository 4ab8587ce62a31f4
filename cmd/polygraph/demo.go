package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/diagnose"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/report"
)

func init() {
	commands = append(commands, func() *cli.Command {
		return &cli.Command{
			Name:  "demo",
			Usage: "reproduce the April 2021 incident on a simulated fleet and catch it (no set-up needed)",
			Flags: []cli.Flag{
				boolFlag("serve", nil, "keep the simulated world running and write a config for `polygraph verify`"),
				&cli.StringFlag{Name: "dir", Usage: "where --serve writes polygraph.yaml and release.json (default: a new temporary directory)", EnvVars: env("dir")},
			},
			Action: demoAction,
		}
	})
}

func demoAction(c *cli.Context) error {
	g, err := getGlobals(c)
	if err != nil {
		return err
	}
	w, err := testkit.StartIncident(c.Context)
	if err != nil {
		return unverifiable(fmt.Errorf("starting the simulated world: %w", err))
	}
	defer w.Close()
	dir := c.String("dir")
	if dir == "" {
		if dir, err = os.MkdirTemp("", "polygraph-demo-"); err != nil {
			return unverifiable(err)
		}
		if !c.Bool("serve") {
			defer os.RemoveAll(dir)
		}
	}
	// Each instance's Docker Engine API is asked which image it runs: evidence the instance
	// cannot lie through, apart from the version and digest it claims.
	w.Runtime = true
	path, err := w.WriteConfig(dir, w.Record)
	if err != nil {
		return unverifiable(fmt.Errorf("writing the demo config: %w", err))
	}
	out := c.App.Writer
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	if c.Bool("serve") {
		return demoServe(c, g, w, cfg, dir, path)
	}
	ctx, cancel := context.WithTimeout(c.Context, g.timeout)
	defer cancel()
	fmt.Fprintf(out, "Simulated incident: store-web %s was pushed and recorded (polygraph release record); then a CI change re-pushed the tag with a rebuilt artifact.\n"+
		"6 instances all claim %s; the 2 newest were autoscaled after the re-push.\n\n$ polygraph verify --config %s\n\n", w.Version, w.Version, filepath.Base(path))
	res, d, err := demoRun(ctx, g, w, cfg)
	if err != nil {
		return err
	}
	rep := res.Report
	if err := report.Render(out, rep, "text", report.Options{Color: g.color, MaxPerKind: 3}); err != nil {
		return unverifiable(err)
	}
	liars, missing, moved, runtime := demoCaught(rep)
	if len(liars) != 2 || missing == 0 || !moved || len(runtime) != 2 {
		return &exitError{code: exitFindings, err: fmt.Errorf("the demo did not catch what it was built to show (lying instances %v, missing assets %d, tag moved %v, caught by the runtime %v)", liars, missing, moved, runtime)}
	}
	fmt.Fprintf(out, "\nWhat was caught: the tag %s was re-pushed after the release was recorded (tag-moved). "+
		"%s claim %s like the rest, but serve another manifest, and their container runtime (the Docker Engine API, asked apart from what the instances say) "+
		"reports that they run another image: the rebuilt artifact. "+
		"%d assets their pages reference are missing on the CDN (403), so their users get broken pages. "+
		"Every deployed-version signal said all was well; only asking each instance directly for its content, and its runtime for its image, showed the truth.\n",
		w.Version, strings.Join(liars, " and "), w.Version, missing)
	fmt.Fprintf(out, "\nNow the explanation, for whoever is on call (launch times and zones as an EC2 fleet source reports them):\n\n$ polygraph diagnose --config %s\n\n", filepath.Base(path))
	if err := report.RenderDiagnosisText(out, d, report.DiagnosisOptions{Color: g.color}); err != nil {
		return unverifiable(err)
	}
	if c := demoCause(d); c != model.CauseTagRePushed {
		return &exitError{code: exitFindings, err: fmt.Errorf("the diagnosis did not explain the incident (first cause %q, want %s)", c, model.CauseTagRePushed)}
	}
	return nil
}

// demoRun verifies the simulated fleet and diagnoses it. The targets carry the launch times and
// zones the simulated instances were given, as an EC2 fleet source would report them.
func demoRun(ctx context.Context, g *globals, w *testkit.World, cfg *config.Config) (*run.Result, *model.Diagnosis, error) {
	reg := []registry.Option{registry.WithCacheDir("")}
	res, err := run.Run(ctx, cfg, run.Options{Logger: g.logger, Version: polygraphVersion(), Registry: reg, Targets: w.Fleet.Targets()})
	if err != nil {
		return nil, nil, unverifiable(err)
	}
	d, err := diagnose.Diagnose(ctx, cfg, diagnose.Input{Release: res.Release, Report: res.Report}, diagnose.Options{Logger: g.logger, Version: polygraphVersion(), Registry: reg})
	if err != nil {
		return nil, nil, unverifiable(err)
	}
	return res, d, nil
}

// demoServe keeps the world running for `polygraph verify`, and serves the diagnosis as HTML
// on a loopback port (also written beside the config).
func demoServe(c *cli.Context, g *globals, w *testkit.World, cfg *config.Config, dir, path string) error {
	ctx, cancel := context.WithTimeout(c.Context, g.timeout)
	_, d, err := demoRun(ctx, g, w, cfg)
	cancel()
	if err != nil {
		return err
	}
	var page bytes.Buffer
	if err := report.RenderDiagnosisHTML(&page, d); err != nil {
		return unverifiable(err)
	}
	htmlPath := filepath.Join(dir, "diagnosis.html")
	if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
		return unverifiable(fmt.Errorf("writing the diagnosis page: %w", err))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return unverifiable(fmt.Errorf("serving the diagnosis page: %w", err))
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		rw.Write(page.Bytes())
	})}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(c.App.Writer, "Simulated fleet of %d instances, a CDN and a registry are running on loopback.\n"+
		"The diagnosis of the incident: http://%s/ (also written to %s)\nIn another terminal:\n\n  polygraph verify --config %s\n  polygraph diagnose --config %s --output html > diagnosis.html\n\nCtrl-C stops the world.\n",
		len(w.Fleet.Instances), ln.Addr(), htmlPath, path, path)
	<-c.Context.Done()
	return nil
}

// demoCause returns the kind of the diagnosis's first cause ("" when there is none).
func demoCause(d *model.Diagnosis) string {
	if len(d.Causes) == 0 {
		return ""
	}
	return d.Causes[0].Kind
}

// demoCaught returns the instances caught lying, how many assets are missing and whether the
// re-pushed tag was caught.
func demoCaught(rep *model.Report) (liars []string, missing int, moved bool, runtime []string) {
	for _, f := range rep.Findings {
		switch f.Kind {
		case model.KindTagMoved:
			moved = true
		case model.KindVersionLie:
			liars = append(liars, f.Instance)
		case model.KindAssetMissing:
			missing++
		case model.KindDigestMismatch:
			if f.Evidence["digest"] == "running" {
				runtime = append(runtime, f.Instance)
			}
		}
	}
	return liars, missing, moved, runtime
}
