package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/fleet"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// Handler answers lifecycle actions for one configuration. It is safe for concurrent use.
type Handler struct {
	cfg    *config.Config
	asg    AutoScalingAPI
	ec2    *fleet.EC2
	region string
	o      options

	resolving sync.Mutex // one resolution of the release at a time
	mu        sync.Mutex
	release   *model.Release
	extra     []model.Finding
	resolved  time.Time
}

type options struct {
	logger          *slog.Logger
	clock           Clock
	readyPoll       time.Duration
	verifyTimeout   time.Duration
	completeTimeout time.Duration
	backoff         func(attempt int) time.Duration
	releaseTTL      time.Duration
	run             run.Options
}

// Option tunes a Handler.
type Option func(*options)

// WithLogger sets the logger. The default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithClock sets the clock of heartbeats, readiness polls and retries. The default is the
// system clock.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithReadyPoll sets how long to wait between asking a silent instance again. The default is
// 5s.
func WithReadyPoll(d time.Duration) Option { return func(o *options) { o.readyPoll = d } }

// WithVerifyTimeout bounds the verification once the instance answered. The default is 2m.
func WithVerifyTimeout(d time.Duration) Option { return func(o *options) { o.verifyTimeout = d } }

// WithCompleteTimeout bounds how long CompleteLifecycleAction is retried on throttling and
// server errors. The default is 2m.
func WithCompleteTimeout(d time.Duration) Option {
	return func(o *options) { o.completeTimeout = d }
}

// WithBackoff sets the wait before retry attempt n (from 0) of CompleteLifecycleAction. The
// default doubles from 1s up to 20s.
func WithBackoff(f func(attempt int) time.Duration) Option { return func(o *options) { o.backoff = f } }

// WithReleaseTTL sets how long a resolved release (and its tag-moved check) is reused for
// later launches; 0 resolves it for every launch. The default is 1m.
func WithReleaseTTL(d time.Duration) Option { return func(o *options) { o.releaseTTL = d } }

// WithRunOptions sets the options of the verification run (probe dialers, registry transport,
// fast backoff in tests). The default is run.Options{}.
func WithRunOptions(r run.Options) Option { return func(o *options) { o.run = r } }

// New returns a handler over the clients of one aws.Config. The config must name fleet.ec2:
// its address kind and port are how the launching instance is addressed.
func New(cfg *config.Config, asg AutoScalingAPI, ec2c ec2.DescribeInstancesAPIClient, opts ...Option) (*Handler, error) {
	if cfg.Fleet.EC2 == nil {
		return nil, &config.Error{File: cfg.File, Msg: "hook needs fleet.ec2 (address and port): it is how the launching instance is addressed"}
	}
	o := options{
		logger: slog.New(slog.DiscardHandler), clock: realClock{}, readyPoll: 5 * time.Second,
		verifyTimeout: 2 * time.Minute, completeTimeout: 2 * time.Minute, releaseTTL: time.Minute,
		backoff: func(n int) time.Duration { return min(time.Second<<min(n, 5), 20*time.Second) },
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.run.Logger == nil {
		o.run.Logger = o.logger
	}
	e := cfg.Fleet.EC2
	src := fleet.NewEC2(ec2c, fleet.EC2Options{Region: e.Region, Address: e.Address, Port: e.Port, DigestTag: digestTag(cfg)})
	return &Handler{cfg: cfg, asg: asg, ec2: src, region: e.Region, o: o}, nil
}

// NewFromAWS builds the Auto Scaling and EC2 clients from one aws.Config and returns New's
// handler.
func NewFromAWS(cfg *config.Config, ac aws.Config, opts ...Option) (*Handler, error) {
	return New(cfg, autoscaling.NewFromConfig(ac), ec2.NewFromConfig(ac), opts...)
}

func digestTag(cfg *config.Config) string {
	if cfg.Probe.Digest.Source != "ec2-tag" {
		return ""
	}
	if cfg.Probe.Digest.Tag != "" {
		return cfg.Probe.Digest.Tag
	}
	return "image-digest"
}

// Outcome is what the handler did with one event.
type Outcome struct {
	Event    Event    `json:"event"`
	Decision Decision `json:"decision,omitempty"`
	// Reason says in words why this decision (or none) was taken.
	Reason string `json:"reason"`
	// Completed is true when Auto Scaling accepted this handler's CompleteLifecycleAction.
	Completed bool `json:"completed"`
	// AlreadyDone is true when the action was over before this handler completed it
	// (an earlier delivery completed it, or it timed out).
	AlreadyDone bool `json:"already_done,omitempty"`
	Heartbeats  int  `json:"heartbeats"`
	// ExitCode is the command's exit code for this outcome (SPEC §2: 1 abandoned, 3 could
	// not verify).
	ExitCode int `json:"exit_code"`
	// Report is the verification report; nil when nothing was verified.
	Report *model.Report `json:"-"`
}

// Handle answers one decoded event: the decision and the report. It returns an error only
// when the action could not be answered at all (CompleteLifecycleAction kept failing, or ctx
// ended first); the event must then be delivered again.
func (h *Handler) Handle(ctx context.Context, ev Event) (Outcome, error) {
	out := Outcome{Event: ev}
	switch {
	case ev.Test:
		out.Reason = "test notification acknowledged"
		return out, nil
	case ev.Transition == TransitionTerminating:
		return h.finish(ctx, out, Continue, "terminating transitions are not verified")
	case ev.IntoWarmPool():
		return h.finish(ctx, out, Continue, "the instance enters the warm pool; it is verified when it leaves it for the group")
	}
	work, cancel := context.WithCancel(ctx)
	defer cancel()
	var gone bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.heartbeat(work, ev, &out.Heartbeats, func() { gone = true; cancel() })
	}()
	decision, reason, rep := h.verify(work, ev)
	cancel()
	wg.Wait()
	out.Report = rep
	if gone {
		out.AlreadyDone, out.ExitCode = true, model.ExitUnverifiable
		out.Reason = "the lifecycle action is no longer active (it timed out or was completed elsewhere) before polygraph decided: " + reason
		return out, nil
	}
	if ctx.Err() != nil {
		out.ExitCode = model.ExitUnverifiable
		return out, fmt.Errorf("answering the lifecycle action of %s: %w", ev.InstanceID, ctx.Err())
	}
	code := map[Decision]int{Continue: model.ExitOK, Abandon: model.ExitFindings}[decision]
	if rep.Verdict == model.VerdictError {
		code = model.ExitUnverifiable
	}
	out, err := h.finish(ctx, out, decision, reason)
	out.ExitCode = max(code, out.ExitCode)
	return out, err
}

// finish completes the action once with d.
func (h *Handler) finish(ctx context.Context, out Outcome, d Decision, reason string) (Outcome, error) {
	out.Reason = reason
	already, err := h.complete(ctx, out.Event, d)
	if err != nil {
		out.ExitCode = model.ExitUnverifiable
		return out, err
	}
	if already {
		out.AlreadyDone = true
		out.Reason += "; the action was already complete (No active Lifecycle Action found)"
		h.o.logger.Info("lifecycle action already complete", "instance", out.Event.InstanceID, "group", out.Event.Group)
		return out, nil
	}
	out.Decision, out.Completed = d, true
	return out, nil
}

// verify decides for a launching instance. It always returns a decision: on_error's when it
// could not verify (with the report, verdict error, saying why).
func (h *Handler) verify(ctx context.Context, ev Event) (Decision, string, *model.Report) {
	onError := Abandon
	if h.cfg.Hook.OnError == "continue" {
		onError = Continue
	}
	started := h.o.clock.Now()
	unverified := func(why string) (Decision, string, *model.Report) {
		rep := &model.Report{Schema: model.ReportSchema, Verdict: model.VerdictError, Error: why, StartedAt: started,
			DurationMS: h.o.clock.Now().Sub(started).Milliseconds(), Instances: []model.Instance{}, Groups: []model.Group{}, Findings: []model.Finding{}}
		return onError, fmt.Sprintf("could not verify (%s); hook.on_error is %s", why, h.cfg.Hook.OnError), rep
	}
	targets, err := h.ec2.Instances(ctx, []string{ev.InstanceID})
	if err != nil || len(targets) != 1 {
		if err == nil {
			err = errors.New("not found")
		}
		return unverified(fmt.Sprintf("describing instance %s: %v", ev.InstanceID, err))
	}
	target := targets[0]
	if target.Unreachable != "" {
		return unverified(target.Unreachable)
	}
	if err := h.waitReady(ctx, target); err != nil {
		return unverified(err.Error())
	}
	vctx, cancel := context.WithTimeout(ctx, h.o.verifyTimeout)
	defer cancel()
	cfg, ro := h.cfg, h.o.run
	ro.Targets = []model.Target{target}
	if h.cfg.Hook.Expect == "fleet" {
		peers, err := h.inService(vctx, ev)
		if err != nil {
			return unverified(err.Error())
		}
		if len(peers) == 0 {
			return unverified(fmt.Sprintf("group %s has no InService instance to compare with (hook.expect is fleet)", ev.Group))
		}
		c := *h.cfg
		c.Release = config.Release{Platform: h.cfg.Release.Platform, ManifestFile: h.cfg.Release.ManifestFile}
		cfg = &c
		ro.Targets = append(ro.Targets, peers...)
	} else {
		var err error
		if ro.Release, ro.ReleaseExtra, err = h.resolveRelease(vctx); err != nil {
			return unverified(err.Error())
		}
	}
	res, err := run.Run(vctx, cfg, ro)
	if res.Report == nil || res.Report.Verdict == model.VerdictError {
		if err == nil {
			err = errors.New("the run produced no report")
		}
		d, why, rep := unverified(err.Error())
		if res.Report != nil {
			rep = res.Report
		}
		return d, why, rep
	}
	if f := worstAbout(res.Report, ev.InstanceID); f != nil {
		return Abandon, fmt.Sprintf("%s: %s", f.Kind, f.Message), res.Report
	}
	return Continue, fmt.Sprintf("%s serves the expected release", ev.InstanceID), res.Report
}

// worstAbout returns the first error finding about the instance. Findings about its peers, or
// about the release alone (tag-moved: the tag was re-pushed, yet this instance serves the
// recorded release), are in the report but never abandon it.
func worstAbout(rep *model.Report, id string) *model.Finding {
	for i, f := range rep.Findings {
		if f.Severity != model.SeverityError {
			continue
		}
		if f.Instance == id || slices.Contains(f.Instances, id) {
			return &rep.Findings[i]
		}
	}
	return nil
}

// waitReady asks the instance for its manifest until it answers (any HTTP answer but 5xx and
// 429) or hook.ready_timeout passes.
func (h *Handler) waitReady(ctx context.Context, t model.Target) error {
	timeout := h.cfg.Hook.ReadyTimeout.D()
	deadline := h.o.clock.After(timeout)
	ro := h.o.run
	ro.Probe = append(slices.Clip(ro.Probe), probe.WithRetries(0))
	for {
		obs, err := run.Probe(ctx, h.cfg, []model.Target{t}, ro)
		if err != nil {
			return err
		}
		if len(obs) == 1 && obs[0].Reached {
			return nil
		}
		why := "no answer"
		if len(obs) == 1 && obs[0].Error != "" {
			why = obs[0].Error
		}
		h.o.logger.Debug("instance not answering yet", "instance", t.ID, "error", why)
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance %s gave no answer before the action ended: %s", t.ID, why)
		case <-deadline:
			return fmt.Errorf("instance %s did not answer within hook.ready_timeout %s: %s", t.ID, timeout, why)
		case <-h.o.clock.After(h.o.readyPoll):
		}
	}
}

// inService lists the group's InService instances other than the launching one, as targets.
func (h *Handler) inService(ctx context.Context, ev Event) ([]model.Target, error) {
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(h.asg, &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: []string{ev.Group},
	})
	var ids []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing group %s: %w", ev.Group, awsconf.Wrap(err, h.region))
		}
		for _, g := range page.AutoScalingGroups {
			for _, in := range g.Instances {
				if id := aws.ToString(in.InstanceId); in.LifecycleState == "InService" && id != ev.InstanceID {
					ids = append(ids, id)
				}
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	targets, err := h.ec2.Instances(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("describing the InService instances of %s: %w", ev.Group, err)
	}
	return targets, nil
}

// resolveRelease resolves the expected release, reusing one resolved less than releaseTTL ago:
// a burst of launches asks the registry once.
func (h *Handler) resolveRelease(ctx context.Context) (*model.Release, []model.Finding, error) {
	h.resolving.Lock()
	defer h.resolving.Unlock()
	h.mu.Lock()
	if h.release != nil && h.o.clock.Now().Sub(h.resolved) < h.o.releaseTTL {
		rel, extra := h.release, h.extra
		h.mu.Unlock()
		return rel, extra, nil
	}
	h.mu.Unlock()
	rel, extra, err := run.ResolveRelease(ctx, h.cfg, h.o.run.Logger, h.o.run.Version, h.o.run.Registry...)
	if err != nil {
		return nil, nil, err
	}
	h.mu.Lock()
	h.release, h.extra, h.resolved = rel, extra, h.o.clock.Now()
	h.mu.Unlock()
	return rel, extra, nil
}
