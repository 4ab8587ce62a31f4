// Package run wires a loaded configuration into the pipeline: fleet sources -> probe ->
// CDN check -> verify.Judge. The CLI, the demo and the benchmarks call it.
package run

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/fleet"
	"github.com/polygraph-dev/polygraph/internal/safeio"
	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/verify"
)

// UnverifiableError means the run could not verify at all: the release could not be resolved,
// no instances were found, or not a single instance answered (exit code 3).
type UnverifiableError struct {
	Reason string
	Err    error
}

func (e *UnverifiableError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *UnverifiableError) Unwrap() error { return e.Err }

// Options tune a run beyond the config.
type Options struct {
	// Logger receives debug logs; nil discards.
	Logger *slog.Logger
	// Discovered is called once the fleet is listed, with the number of instances, before any
	// is probed (the CLI sizes its memory limit there).
	Discovered func(instances int)
	// Probed is called once every instance has been probed, before the CDN check.
	Probed func()
	// Progress is called after each instance is probed, with the counts so far.
	Progress func(done, total int)
	// Probe adds probe options (fast backoff and dialers in tests).
	Probe []probe.Option
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Registry adds registry options (a cache directory, a transport).
	Registry []registry.Option
	// Version is polygraph's version, written into records.
	Version string
}

// Verify runs the whole verification described by cfg and returns the report. A report is
// returned with an *UnverifiableError when instances were probed but none answered.
func Verify(ctx context.Context, cfg *config.Config, o Options) (*model.Report, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	started := now()
	compare, err := verify.CompareMode(cfg.Compare)
	if err != nil {
		return nil, &config.Error{File: cfg.File, Msg: err.Error()}
	}
	rel, extra, err := ResolveRelease(ctx, cfg, o.Logger, o.Version, o.Registry...)
	if err != nil {
		return nil, err
	}
	sources, err := Sources(cfg)
	if err != nil {
		return nil, err
	}
	targets, err := fleet.Discover(ctx, sources...)
	if err != nil {
		return nil, &UnverifiableError{Reason: "could not list the fleet", Err: err}
	}
	if len(targets) == 0 {
		return nil, &UnverifiableError{Reason: "no instances found in the configured fleet sources"}
	}
	if o.Discovered != nil {
		o.Discovered(len(targets))
	}
	popts, err := ProbeOptions(cfg, o.Logger)
	if err != nil {
		return nil, err
	}
	if o.Progress != nil {
		var done atomic.Int64
		popts = append(popts, probe.WithProgress(func(model.Observation) {
			o.Progress(int(done.Add(1)), len(targets))
		}))
	}
	popts = append(popts, o.Probe...)
	// Probing stops a little before the deadline, so the report of what was seen is judged
	// and written by it.
	pctx, cancel := context.WithDeadline(ctx, reserve(ctx, now()))
	defer cancel()
	obs := probe.New(popts...).Probe(pctx, targets)
	if o.Probed != nil {
		o.Probed()
	}

	var cdn *model.CDNResult
	if len(cfg.CDN.BaseURLs) > 0 {
		checker, err := probe.NewCDN(cfg.CDN.BaseURLs, CDNOptions(cfg, popts)...)
		if err != nil {
			return nil, &config.Error{File: cfg.File, Msg: err.Error()}
		}
		cdn = checker.Check(pctx, uniqueAssets(obs))
		checker.Close()
	}
	rep := verify.Judge(verify.Input{
		Release: rel, Observations: obs, CDN: cdn, Compare: compare, Extra: extra,
		StartedAt: started, Duration: now().Sub(started), Now: started,
		CertExpiryWarning: cfg.Probe.TLS.ExpiryWarning.D(),
	})
	reached := 0
	for _, ob := range obs {
		// An instance whose certificate failed verification answered: it is a cert-invalid
		// finding, not a reason to give up on the run.
		if ob.Reached || ob.TLS != nil {
			reached++
		}
	}
	if reached == 0 {
		return rep, &UnverifiableError{Reason: fmt.Sprintf("not a single instance answered (%d probed)", len(obs))}
	}
	return rep, nil
}

// reserve returns when probing must stop: the context's deadline less a margin for judging
// and rendering (5% of the time left, between 50ms and 1s). Without a deadline it is the far
// future.
func reserve(ctx context.Context, now time.Time) time.Time {
	dl, ok := ctx.Deadline()
	if !ok {
		return now.Add(100 * 365 * 24 * time.Hour)
	}
	margin := min(max(dl.Sub(now)/20, 50*time.Millisecond), time.Second)
	return dl.Add(-margin)
}

// uniqueAssets returns every asset referenced by any observation, once; observations of the
// same build share one list, which is walked once.
func uniqueAssets(obs []model.Observation) []model.Asset {
	seenList := map[string]bool{}
	seen := map[string]bool{}
	var out []model.Asset
	for _, o := range obs {
		if len(o.Assets) == 0 || seenList[o.AssetsSHA256] {
			continue
		}
		seenList[o.AssetsSHA256] = true
		for _, a := range o.Assets {
			if !seen[a.Ref] {
				seen[a.Ref] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// Sources builds the fleet sources the config names.
func Sources(cfg *config.Config) ([]fleet.Source, error) {
	var out []fleet.Source
	if len(cfg.Fleet.Static) > 0 {
		st := make(fleet.Static, len(cfg.Fleet.Static))
		for i, s := range cfg.Fleet.Static {
			st[i] = model.Target{ID: s.ID, Address: s.Address, Labels: s.Labels}
		}
		out = append(out, st)
	}
	if cfg.Fleet.EC2 != nil || len(cfg.Fleet.TargetGroups) > 0 {
		return nil, &config.Error{File: cfg.File, Msg: "fleet.ec2 and fleet.target_groups are not supported by this build yet; list instances under fleet.static"}
	}
	if len(out) == 0 {
		return nil, &config.Error{File: cfg.File, Msg: "no fleet configured: add fleet.static entries"}
	}
	return out, nil
}

// ProbeOptions maps the config's probe section to probe options.
func ProbeOptions(cfg *config.Config, logger *slog.Logger) ([]probe.Option, error) {
	p := cfg.Probe
	switch p.Digest.Source {
	case "ssm", "docker":
		return nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("probe.digest.source %s is not supported by this build yet (use http, header or ec2-tag)", p.Digest.Source)}
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	return []probe.Option{
		probe.WithScheme(p.Scheme),
		probe.WithHost(p.Host),
		probe.WithManifest(p.Manifest.Path, p.Manifest.Format, p.Manifest.AssetPrefix),
		probe.WithSourceMaps(cfg.CDN.CheckSourceMaps),
		probe.WithVersionClaim(probe.Claim{Path: p.Version.Path, Pointer: p.Version.Pointer, Header: p.Version.Header}),
		probe.WithDigestClaim(probe.DigestClaim{Source: p.Digest.Source, Claim: probe.Claim{Path: p.Digest.Path, Pointer: p.Digest.Pointer, Header: p.Digest.Header}}),
		probe.WithConcurrency(p.Concurrency),
		probe.WithTimeout(p.Timeout.D()),
		probe.WithRetries(*p.Retries),
		probe.WithBudget(probe.NewBudget(*p.RetryBudget, 10)),
		probe.WithMaxBody(int64(p.MaxBody)),
		probe.WithTLS(tc),
		probe.WithHeaders(p.Headers),
		probe.WithLogger(logger),
	}, nil
}

// CDNOptions derives the CDN checker's options: the probe's (the retry budget is shared),
// with the CDN's concurrency and rate and the system roots (probe.tls is about instances).
func CDNOptions(cfg *config.Config, probeOpts []probe.Option) []probe.Option {
	opts := append([]probe.Option(nil), probeOpts...)
	return append(opts,
		probe.WithConcurrency(cfg.CDN.Concurrency),
		probe.WithRate(cfg.CDN.Rate),
		probe.WithReplicas(*cfg.CDN.CheckReplicas),
		probe.WithIntegrity(cfg.CDN.VerifyIntegrity),
		probe.WithTLS(nil),
	)
}

// maxCAFileSize bounds probe.tls.ca_file (a system bundle is a few hundred KiB).
const maxCAFileSize = 4 << 20

func tlsConfig(cfg *config.Config) (*tls.Config, error) {
	t := cfg.Probe.TLS
	tc := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, documented
	if t.CAFile != "" {
		pem, err := safeio.ReadFile(t.CAFile, maxCAFileSize)
		if err != nil {
			return nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("probe.tls.ca_file: %v", err)}
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("probe.tls.ca_file %s holds no PEM certificate", t.CAFile)}
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// RegistryClient builds the registry client for a config: the manifest is parsed exactly as
// the prober will parse it (same format, URL path and prefix), so hashes compare.
func RegistryClient(cfg *config.Config, logger *slog.Logger, version string, extra ...registry.Option) (*registry.Client, error) {
	path := cfg.Probe.Manifest.Path
	if path == "" && cfg.Release.ManifestFile != "" {
		path = "/" + filepath.Base(cfg.Release.ManifestFile)
	}
	opts := append([]registry.Option{
		registry.WithLogger(logger),
		registry.WithPolygraphVersion(version),
		registry.WithManifestFormat(manifest.Format(cfg.Probe.Manifest.Format), manifest.Options{
			Path: path, AssetPrefix: cfg.Probe.Manifest.AssetPrefix, SourceMaps: cfg.CDN.CheckSourceMaps,
		}),
	}, extra...)
	return registry.New(opts...)
}

// ResolveRelease finds the expected release. With release.record, the record is the truth and
// the tag is resolved again only to catch a re-push (tag-moved). With release.image alone, the
// registry is the truth: its digest set and, with release.manifest_file, the manifest inside
// the image. With neither, the fleet's consensus is.
func ResolveRelease(ctx context.Context, cfg *config.Config, logger *slog.Logger, version string, extra ...registry.Option) (*model.Release, []model.Finding, error) {
	r := cfg.Release
	if r.Record == "" && r.Image == "" {
		return &model.Release{Version: r.Version, Source: model.SourceConsensus}, nil, nil
	}
	client, err := RegistryClient(cfg, logger, version, extra...)
	if err != nil {
		return nil, nil, &config.Error{File: cfg.File, Msg: err.Error()}
	}
	if r.Record != "" {
		rec, err := registry.LoadRecord(r.Record)
		if err != nil {
			return nil, nil, &config.Error{Msg: err.Error()}
		}
		rel := model.FromRecord(rec, r.Version)
		image := rec.Image
		if r.Image != "" {
			image = r.Image
		}
		rel.Image = image
		if !strings.Contains(image, "@") {
			now, err := client.Resolve(ctx, image)
			if err != nil {
				return nil, nil, &UnverifiableError{Reason: fmt.Sprintf("checking release tag %s against the record", image), Err: err}
			}
			if registry.TagMoved(rec, now) {
				rel.TagDigest = now.Digest
				return rel, []model.Finding{{
					Kind: model.KindTagMoved, Severity: model.SeverityError,
					Message: fmt.Sprintf("%s now resolves to %s, not the recorded %s: the tag was re-pushed after the release was recorded",
						image, now.Digest, rec.Digest),
					Evidence: map[string]string{"want": rec.Digest, "got": now.Digest, "recorded_at": rec.RecordedAt.Format(time.RFC3339)},
				}}, nil
			}
		}
		return rel, nil, nil
	}
	if r.ManifestFile != "" {
		rec, err := client.Record(ctx, r.Image, r.Platform, r.ManifestFile)
		if err != nil {
			return nil, nil, &UnverifiableError{Reason: "resolving the release from the registry", Err: err}
		}
		rel := model.FromRecord(rec, r.Version)
		rel.Source = model.SourceRegistry
		return rel, nil, nil
	}
	set, err := client.Resolve(ctx, r.Image)
	if err != nil {
		return nil, nil, &UnverifiableError{Reason: "resolving the release from the registry", Err: err}
	}
	rel := &model.Release{Image: r.Image, Version: r.Version, Digest: set.Digest, Source: model.SourceRegistry}
	for _, d := range set.Digests {
		rel.Digests = append(rel.Digests, d.Digest)
	}
	return rel, nil, nil
}
