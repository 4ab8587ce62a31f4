// Package run wires a loaded configuration into the pipeline: fleet sources -> probe ->
// CDN check -> verify.Judge. The CLI, the demo and the benchmarks call it.
package run

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/fleet"
	"github.com/polygraph-dev/polygraph/internal/safeio"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/running"
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
	// Targets, when set, are verified instead of the fleet the config lists: the lifecycle
	// hook hands in the one instance it was told about.
	Targets []model.Target
	// Runtime, when set, is the trusted digest source instead of the one the config names.
	Runtime running.Source
	// AWS is the configuration every AWS client of the run is built from; nil loads it
	// (LoadAWS) once per Run when the config calls AWS.
	AWS *aws.Config
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
	// Budget is the retry budget the probe and CDN stages share; nil gives each stage called
	// alone its own, and Run one for the whole run.
	Budget *probe.Budget
	// Release, when set, is the expected release, resolved earlier with ResolveRelease;
	// ReleaseExtra the findings raised then (tag-moved). The lifecycle hook resolves it once
	// for a burst of launches.
	Release      *model.Release
	ReleaseExtra []model.Finding
	// CompactReport leaves the report's instances to be built as they are rendered
	// (model.Report.SetInstanceList) rather than held: for a caller that renders the report
	// and is done, as the CLI's verify is. Read them with NumInstances and InstanceAt.
	CompactReport bool
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Result holds every stage's output of one run: diagnose reads the intermediate values, verify
// only the report.
type Result struct {
	Release      *model.Release
	Extra        []model.Finding // raised while resolving the release (tag-moved)
	Targets      []model.Target
	Observations []model.Observation
	Running      []model.RunningDigest
	CDN          *model.CDNResult
	Report       *model.Report
}

// Verify runs the whole verification described by cfg and returns its report. The report is
// returned with an *UnverifiableError when the run could not verify at all (its verdict is then
// "error"); only a configuration error (*config.Error) comes without a report.
func Verify(ctx context.Context, cfg *config.Config, o Options) (*model.Report, error) {
	res, err := run(ctx, cfg, o, false)
	return res.Report, err
}

// Run runs the stages in a row: resolve the release, discover the targets (or take
// o.Targets), probe them, read their running digests, check the CDN, judge. It always returns
// a Result; its Report is nil only with a *config.Error.
func Run(ctx context.Context, cfg *config.Config, o Options) (*Result, error) {
	return run(ctx, cfg, o, true)
}

// run is Run; with keep false only the report is wanted, and the observations are never
// expanded into a slice: the CDN check and the judge read them from their compact records.
func run(ctx context.Context, cfg *config.Config, o Options, keep bool) (*Result, error) {
	o.defaults()
	if o.Budget == nil {
		o.Budget = probe.NewBudget(*cfg.Probe.RetryBudget, 10)
	}
	started := o.Now()
	res := &Result{}
	compare, err := verify.CompareMode(cfg.Compare)
	if err != nil {
		return res, &config.Error{File: cfg.File, Msg: err.Error()}
	}
	fail := func(err error) (*Result, error) {
		var ce *config.Error
		if errors.As(err, &ce) {
			return res, err
		}
		res.Report = verify.Unverified(res.Release, started, o.Now().Sub(started), err.Error())
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			interrupted(ctx, res.Report)
		}
		return res, err
	}
	if o.Release != nil {
		res.Release, res.Extra = o.Release, o.ReleaseExtra
	} else if res.Release, res.Extra, err = ResolveRelease(ctx, cfg, o.Logger, o.Version, o.Registry...); err != nil {
		return fail(err)
	}
	res.Targets = o.Targets
	if res.Targets == nil {
		if o.AWS == nil {
			awsCfg, ok, err := LoadAWS(ctx, cfg)
			if err != nil {
				return fail(err)
			}
			if ok {
				o.AWS = &awsCfg
			}
		}
		if res.Targets, err = discover(ctx, cfg, o.AWS); err != nil {
			return fail(err)
		}
		cfg = withoutStatic(cfg)
	}
	if len(res.Targets) == 0 {
		return fail(&UnverifiableError{Reason: "no instances found in the configured fleet sources"})
	}
	if o.Discovered != nil {
		o.Discovered(len(res.Targets))
	}
	// Probing stops a little before the deadline, so the report of what was seen is judged
	// and written by it.
	pctx, cancel := context.WithDeadline(ctx, reserve(ctx, o.Now()))
	defer cancel()
	// Run keeps every stage output, each stage run on its own. Verify, which wants the report
	// only, checks each build's assets on the CDN while the rest of the fleet is probed
	// (cdnAhead), and lets the observations stay compact, the judge reading them one at a time.
	var (
		ahead   *cdnAhead
		answers *probe.Answers
		seen    func(model.Observation)
	)
	if !keep && len(cfg.CDN.BaseURLs) > 0 {
		answers = probe.NewAnswers()
		var aerr error
		if ahead, aerr = startCDNAhead(pctx, cfg, o, answers); aerr != nil {
			return fail(aerr)
		}
		if ahead == nil {
			answers = nil // nothing asked ahead: the check at the end need not remember its own
		} else {
			defer ahead.abandon() // a no-op once stopped below
			seen = ahead.seen
		}
	}
	list, err := probeCompact(pctx, cfg, res.Targets, o, seen)
	if err != nil {
		return fail(err)
	}
	var obs verify.ObservationList = list
	if keep {
		res.Observations = list.All()
		obs = observationSlice(res.Observations)
	}
	if o.Probed != nil {
		o.Probed()
	}
	if res.Running, err = RunningDigests(pctx, cfg, res.Targets, o); err != nil {
		return fail(err)
	}
	// The check ahead goes on while running digests are read; what it has not asked by now is
	// asked at full concurrency.
	aheadRequests, aheadOutOfFiles := ahead.stop()
	if aheadOutOfFiles {
		return fail(&UnverifiableError{Reason: "checking the CDN", Err: probe.ErrNoFileDescriptors})
	}
	if res.CDN, err = checkCDN(pctx, cfg, obs, o, answers); err != nil {
		return fail(err)
	}
	if res.CDN != nil {
		res.CDN.Requests += aheadRequests
	}
	res.Report = verify.Judge(verify.Input{
		Release: res.Release, Observations: res.Observations, List: obs, Running: res.Running, CDN: res.CDN,
		Compare: compare, Extra: res.Extra,
		StartedAt: started, Duration: o.Now().Sub(started), Now: started,
		CertExpiryWarning: cfg.Probe.TLS.ExpiryWarning.D(),
		CompactInstances:  o.CompactReport,
	})
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		interrupted(ctx, res.Report)
	}
	if res.Report.Verdict == model.VerdictError {
		return res, &UnverifiableError{Reason: res.Report.Error}
	}
	return res, nil
}

// withoutStatic returns cfg, or a shallow copy of it without the static fleet entries once
// they are targets: the stages after discovery read the other sections only, and a caller
// that no longer needs its config (verify) then lets the garbage collector take the entries
// (56 bytes each, a megabyte at 18,000 instances) for the rest of the run. cfg itself is
// left as it was.
func withoutStatic(cfg *config.Config) *config.Config {
	if len(cfg.Fleet.Static) == 0 {
		return cfg
	}
	c := *cfg
	c.Fleet.Static = nil
	return &c
}

// Discover lists the targets of every fleet source the config names, merged and
// de-duplicated.
func Discover(ctx context.Context, cfg *config.Config) ([]model.Target, error) {
	return discover(ctx, cfg, nil)
}

// discover is Discover with the run's AWS configuration (nil loads one).
func discover(ctx context.Context, cfg *config.Config, awsCfg *aws.Config) ([]model.Target, error) {
	sources, err := Sources(cfg)
	if err != nil {
		return nil, err
	}
	awsSources, err := awsFleet(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	targets, err := fleet.Discover(ctx, append(sources, awsSources...)...)
	var ce *config.Error
	if errors.As(err, &ce) {
		return nil, err // an unknown or unprobeable target group
	}
	if err != nil {
		return nil, &UnverifiableError{Reason: "could not list the fleet", Err: err}
	}
	return targets, nil
}

// Probe asks every target for its manifest and claims, with the config's politeness, at most
// as many at once as the file descriptor limit allows. Failing to reach an instance is
// evidence in its observation; the error is for misconfiguration, or for polygraph running out
// of file descriptors all the same (an *UnverifiableError: its own fault, not the instances').
func Probe(ctx context.Context, cfg *config.Config, targets []model.Target, o Options) ([]model.Observation, error) {
	list, err := probeCompact(ctx, cfg, targets, o, nil)
	if list == nil {
		return nil, err
	}
	return list.All(), err
}

// probeCompact is Probe with the observations left compact (probe.Observations).
func probeCompact(ctx context.Context, cfg *config.Config, targets []model.Target, o Options, seen func(model.Observation)) (*probe.Observations, error) {
	o.defaults()
	popts, err := ProbeOptions(cfg, o.Logger)
	if err != nil {
		return nil, err
	}
	if o.Progress != nil || seen != nil {
		var done atomic.Int64
		popts = append(popts, probe.WithProgress(func(obs model.Observation) {
			if seen != nil {
				seen(obs)
			}
			if o.Progress != nil {
				o.Progress(int(done.Add(1)), len(targets))
			}
		}))
	}
	if o.Budget != nil {
		popts = append(popts, probe.WithBudget(o.Budget))
	}
	if n := fdConcurrency(cfg.Probe.Concurrency, 1); n < cfg.Probe.Concurrency {
		o.Logger.Info("probe concurrency lowered to fit the file descriptor limit", "configured", cfg.Probe.Concurrency, "used", n)
		popts = append(popts, probe.WithConcurrency(n))
	}
	popts = append(popts, o.Probe...)
	p := probe.New(popts...)
	obs := p.ProbeCompact(ctx, targets)
	if p.OutOfFiles() {
		return obs, &UnverifiableError{Reason: "probing the fleet", Err: probe.ErrNoFileDescriptors}
	}
	return obs, nil
}

// RunningDigests asks the trusted digest source (o.Runtime, or the one the config names) what
// each target runs, in one batch. Without a source it returns nil.
func RunningDigests(ctx context.Context, cfg *config.Config, targets []model.Target, o Options) ([]model.RunningDigest, error) {
	src := o.Runtime
	if src == nil {
		var err error
		if src, err = runtimeSource(ctx, cfg, o.AWS); err != nil || src == nil {
			return nil, err
		}
	}
	return src.RunningDigests(ctx, targets)
}

// RuntimeSource builds the trusted digest source the config names (probe.runtime), or nil.
// The SSM source's AWS clients come from LoadAWS.
func RuntimeSource(ctx context.Context, cfg *config.Config) (running.Source, error) {
	return runtimeSource(ctx, cfg, nil)
}

// CheckCDN looks up every asset the observations reference, once per unique URL, on the
// primary CDN and its replicas. Without base URLs it returns nil.
func CheckCDN(ctx context.Context, cfg *config.Config, obs []model.Observation, o Options) (*model.CDNResult, error) {
	return checkCDN(ctx, cfg, observationSlice(obs), o, nil)
}

// checkCDN is CheckCDN over observations given one at a time; answers, when set, holds what a
// check made ahead already asked (cdnAhead).
func checkCDN(ctx context.Context, cfg *config.Config, obs verify.ObservationList, o Options, answers *probe.Answers) (*model.CDNResult, error) {
	if len(cfg.CDN.BaseURLs) == 0 {
		return nil, nil
	}
	o.defaults()
	hosts := cdnHosts(cfg)
	n := fdConcurrency(cfg.CDN.Concurrency, hosts)
	if n < cfg.CDN.Concurrency {
		o.Logger.Info("cdn concurrency lowered to fit the file descriptor limit", "configured", cfg.CDN.Concurrency, "used", n, "hosts", hosts)
	}
	var extra []probe.Option
	if answers != nil {
		extra = append(extra, probe.WithAnswers(answers))
	}
	checker, err := newChecker(cfg, o, n, extra...)
	if err != nil {
		return nil, err
	}
	defer checker.Close()
	res := checker.Check(ctx, uniqueAssets(obs))
	if checker.OutOfFiles() {
		return res, &UnverifiableError{Reason: "checking the CDN", Err: probe.ErrNoFileDescriptors}
	}
	return res, nil
}

// newChecker builds a CDN checker of the config holding up to concurrency connections per
// host, with extra options last.
func newChecker(cfg *config.Config, o Options, concurrency int, extra ...probe.Option) (*probe.CDN, error) {
	popts, err := ProbeOptions(cfg, o.Logger)
	if err != nil {
		return nil, err
	}
	if o.Budget != nil {
		popts = append(popts, probe.WithBudget(o.Budget))
	}
	copts := append(CDNOptions(cfg, append(popts, o.Probe...)), probe.WithConcurrency(concurrency))
	checker, err := probe.NewCDN(cfg.CDN.BaseURLs, append(copts, extra...)...)
	if err != nil {
		return nil, &config.Error{File: cfg.File, Msg: err.Error()}
	}
	return checker, nil
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

// uniqueAssets returns every asset referenced by any observation, once per ref and expected
// hash: instances whose manifests expect different hashes for one URL each have theirs
// checked. Observations of the same build share one list, which is walked once.
func uniqueAssets(obs verify.ObservationList) []model.Asset {
	seenList := map[string]bool{}
	seen := map[model.Asset]bool{}
	var out []model.Asset
	for i := range obs.Len() {
		o := obs.At(i)
		// Equal asset sets may still expect different hashes: a list is known by its bytes.
		key := o.ManifestSHA256 + o.AssetsSHA256
		if len(o.Assets) == 0 || seenList[key] {
			continue
		}
		seenList[key] = true
		for _, a := range o.Assets {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// observationSlice gives the observations of a slice one at a time.
type observationSlice []model.Observation

func (s observationSlice) Len() int                   { return len(s) }
func (s observationSlice) At(i int) model.Observation { return s[i] }

// Sources builds the static fleet source the config names (AWSSources builds the others).
func Sources(cfg *config.Config) ([]fleet.Source, error) {
	var out []fleet.Source
	if len(cfg.Fleet.Static) > 0 {
		st := make(fleet.Static, len(cfg.Fleet.Static))
		for i, s := range cfg.Fleet.Static {
			st[i] = model.Target{ID: s.ID, Address: s.Address, Labels: s.Labels}
		}
		out = append(out, st)
	}
	if len(out) == 0 && cfg.Fleet.EC2 == nil && len(cfg.Fleet.TargetGroups) == 0 {
		return nil, &config.Error{File: cfg.File, Msg: "no fleet configured: add fleet.static, fleet.ec2 or fleet.target_groups"}
	}
	return out, nil
}

// ProbeOptions maps the config's probe section to probe options.
func ProbeOptions(cfg *config.Config, logger *slog.Logger) ([]probe.Option, error) {
	p := cfg.Probe
	mf, mo := registry.ManifestParsing(cfg, "")
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	return []probe.Option{
		probe.WithScheme(p.Scheme),
		probe.WithHost(p.Host),
		probe.WithManifest(mo.Path, string(mf), mo.AssetPrefix),
		probe.WithSourceMaps(mo.SourceMaps),
		probe.WithMaxAssets(mo.MaxAssets),
		probe.WithManifestPaths(p.Manifest.Paths),
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
		probe.WithExclude(cfg.CDN.Exclude),
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

// RegistryClient builds the registry client of a run from its config (registry.FromConfig:
// manifests read out of images exactly as the prober reads what instances serve), with
// polygraph's logger and version.
func RegistryClient(cfg *config.Config, logger *slog.Logger, version string, extra ...registry.Option) (*registry.Client, error) {
	opts := append([]registry.Option{registry.WithLogger(logger), registry.WithPolygraphVersion(version)}, extra...)
	return registry.FromConfig(cfg, opts...)
}

// ResolveRelease finds the expected release. With release.record, the record is the truth and
// the tag is resolved again only to catch a re-push (tag-moved). With release.image alone, the
// registry is the truth: its digest set and, with release.manifest_file, the manifest (or one
// per probe.manifest.paths entry) inside the image. With neither, the fleet's consensus is.
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
		if err := registry.CheckRecordPaths(rec, cfg.Probe.Manifest.Paths); err != nil {
			return nil, nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("release.record %s: %v", r.Record, err)}
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
	if len(r.ManifestFiles) > 0 {
		rec, err := client.Record(ctx, r.Image, r.Platform, r.ManifestFiles...)
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
