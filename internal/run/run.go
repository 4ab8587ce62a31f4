// Package run wires a loaded configuration into the pipeline: fleet sources -> probe ->
// CDN check -> verify.Judge. The CLI, the demo and the benchmarks call it.
package run

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/probe/fleet"
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
	// Progress is called after each instance is probed, with the counts so far.
	Progress func(done, total int)
	// Probe adds probe options (fast backoff and dialers in tests).
	Probe []probe.Option
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Release, when set, replaces the config's release resolution (tests, the demo).
	Release func(ctx context.Context, cfg *config.Config) (*model.Release, []model.Finding, error)
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
	resolve := o.Release
	if resolve == nil {
		resolve = ResolveRelease
	}
	rel, extra, err := resolve(ctx, cfg)
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
		probe.WithTLS(nil),
	)
}

func tlsConfig(cfg *config.Config) (*tls.Config, error) {
	t := cfg.Probe.TLS
	tc := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, documented
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("probe.tls.ca_file: %v", errors.Unwrap(err))}
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

// ResolveRelease finds the expected release: the release record when configured, otherwise
// the fleet's consensus (with the configured version as the expected claim).
func ResolveRelease(_ context.Context, cfg *config.Config) (*model.Release, []model.Finding, error) {
	r := cfg.Release
	if r.Record != "" {
		rec, err := ReadRecord(r.Record)
		if err != nil {
			return nil, nil, err
		}
		rel := model.FromRecord(rec, r.Version)
		if r.Image != "" {
			rel.Image = r.Image
		}
		return rel, nil, nil
	}
	return &model.Release{Image: r.Image, Version: r.Version, Source: model.SourceConsensus}, nil, nil
}

// ReadRecord reads a release record file (schema polygraph.release/v1).
func ReadRecord(path string) (*model.ReleaseRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("reading release record: %v", errors.Unwrap(err))}
	}
	var rec model.ReleaseRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("not a release record: %v", err)}
	}
	if rec.Schema != model.RecordSchema {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("schema is %q, want %q", rec.Schema, model.RecordSchema)}
	}
	if rec.Digest == "" && rec.AssetsSHA256 == "" && rec.ManifestSHA256 == "" {
		return nil, &config.Error{File: path, Msg: "release record names neither a digest nor a manifest hash"}
	}
	return &rec, nil
}
