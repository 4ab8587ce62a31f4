package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/fleet"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/verify"
)

// LaunchOptions tune Launches.
type LaunchOptions struct {
	// ReadyPoll is how long to wait before asking a silent instance again. The default is 5s.
	ReadyPoll time.Duration
	// VerifyTimeout bounds the verification once the instance answered. The default is 2m.
	VerifyTimeout time.Duration
	// ReleaseTTL is how long a resolved release (and its tag-moved check) is reused for later
	// launches; negative resolves it for every launch. The default is 1m.
	ReleaseTTL time.Duration
	// After is the clock of the ready timeout and polls. The default is time.After.
	After func(time.Duration) <-chan time.Time
}

// Launches verifies launching instances for the lifecycle hook: the instance found by ID,
// awaited until it answers (hook.ready_timeout), then run through the same stages as verify,
// against the release (hook.expect: release) or its group's InService instances (fleet).
type Launches struct {
	cfg *config.Config
	ec2 *fleet.EC2
	asg groupsAPI
	o   Options
	lo  LaunchOptions

	resolving sync.Mutex // one resolution of the release at a time
	mu        sync.Mutex
	release   *model.Release
	extra     []model.Finding
	resolved  time.Time
}

// groupsAPI holds the one Auto Scaling operation launches call, as a method value of the
// client: the client as an interface value would link every Auto Scaling operation.
type groupsAPI struct {
	DescribeAutoScalingGroups func(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
}

// NewLaunches returns a launch verifier over the EC2 and Auto Scaling clients of one
// aws.Config. The config must name fleet.ec2: its address kind and port are how a launching
// instance is addressed.
func NewLaunches(cfg *config.Config, ec2c *ec2.Client, asgc *autoscaling.Client, o Options, lo LaunchOptions) (*Launches, error) {
	e := cfg.Fleet.EC2
	if e == nil {
		return nil, &config.Error{File: cfg.File, Msg: "hook needs fleet.ec2 (address and port): it is how the launching instance is addressed"}
	}
	o.defaults()
	if lo.ReadyPoll <= 0 {
		lo.ReadyPoll = 5 * time.Second
	}
	if lo.VerifyTimeout <= 0 {
		lo.VerifyTimeout = 2 * time.Minute
	}
	if lo.ReleaseTTL == 0 {
		lo.ReleaseTTL = time.Minute
	}
	if lo.After == nil {
		lo.After = time.After
	}
	tag := ""
	if cfg.Probe.Digest.Source == "ec2-tag" {
		if tag = cfg.Probe.Digest.Tag; tag == "" {
			tag = "image-digest"
		}
	}
	src := fleet.NewEC2(ec2c, fleet.EC2Options{Region: e.Region, Address: e.Address, Port: e.Port, DigestTag: tag})
	return &Launches{cfg: cfg, ec2: src, asg: groupsAPI{asgc.DescribeAutoScalingGroups}, o: o, lo: lo}, nil
}

// NewLaunchesFromAWS builds the EC2 and Auto Scaling clients from ac.
func NewLaunchesFromAWS(cfg *config.Config, ac aws.Config, o Options, lo LaunchOptions) (*Launches, error) {
	return NewLaunches(cfg, ec2.NewFromConfig(ac), autoscaling.NewFromConfig(ac), o, lo)
}

// Verify verifies the launching instance id of group and returns its report. The error says
// why it could not verify at all; the report then has verdict "error".
func (l *Launches) Verify(ctx context.Context, group, id string) (*model.Report, error) {
	unverified := l.unverified(l.o.Now())
	targets, err := l.ec2.Instances(ctx, []string{id})
	if err == nil && len(targets) != 1 {
		err = errors.New("not found")
	}
	if err != nil {
		return unverified(fmt.Errorf("describing instance %s: %w", id, err))
	}
	target := targets[0]
	if target.Unreachable != "" {
		return unverified(errors.New(target.Unreachable))
	}
	// hook.ready_timeout bounds how long the instance may take to answer, before and during
	// the verification: one that answered and then timed out (still booting, or slow under
	// load) is asked again until it answers for the whole verification or the time is up.
	ready := l.lo.After(l.cfg.Hook.ReadyTimeout.D())
	for {
		if err := l.waitReady(ctx, target, ready); err != nil {
			return unverified(err)
		}
		rep, err := l.verifyOnce(ctx, group, target)
		if rep == nil || !unreachable(rep, id) {
			return rep, err
		}
		select {
		case <-ready:
			return rep, err
		default:
			l.o.Logger.Debug("instance answered, then not during the verification; waiting for it again", "instance", id)
		}
	}
}

// unverified returns the function that makes the report of a launch that could not be
// verified, timed from started.
func (l *Launches) unverified(started time.Time) func(error) (*model.Report, error) {
	return func(err error) (*model.Report, error) {
		return verify.Unverified(nil, started, l.o.Now().Sub(started), err.Error()), err
	}
}

// unreachable reports whether the report holds instance id as unreachable.
func unreachable(rep *model.Report, id string) bool {
	for _, in := range rep.Instances {
		if in.ID == id {
			return in.Status == model.StatusUnreachable
		}
	}
	return false
}

// verifyOnce runs the verify stages once for the launching target, against the release or
// the group's InService instances.
func (l *Launches) verifyOnce(ctx context.Context, group string, target model.Target) (*model.Report, error) {
	id := target.ID
	unverified := l.unverified(l.o.Now())
	vctx, cancel := context.WithTimeout(ctx, l.lo.VerifyTimeout)
	defer cancel()
	var err error
	cfg, ro := l.cfg, l.o
	ro.Targets = []model.Target{target}
	if l.cfg.Hook.Expect == "fleet" {
		peers, err := l.inService(vctx, group, id)
		if err != nil {
			return unverified(err)
		}
		if len(peers) == 0 {
			return unverified(fmt.Errorf("group %s has no InService instance to compare with (hook.expect is fleet)", group))
		}
		c := *l.cfg
		c.Release = config.Release{Platform: l.cfg.Release.Platform, ManifestFiles: l.cfg.Release.ManifestFiles}
		cfg = &c
		ro.Targets = append(ro.Targets, peers...)
	} else if ro.Release, ro.ReleaseExtra, err = l.resolveRelease(vctx); err != nil {
		return unverified(err)
	}
	res, err := Run(vctx, cfg, ro)
	if res.Report == nil {
		if err == nil {
			err = errors.New("the run produced no report")
		}
		return unverified(err)
	}
	if res.Report.Verdict == model.VerdictError && err == nil {
		err = errors.New(res.Report.Error)
	}
	return res.Report, err
}

// waitReady asks the instance for its manifest until it answers (any HTTP answer but 5xx and
// 429) or hook.ready_timeout passes.
func (l *Launches) waitReady(ctx context.Context, t model.Target, deadline <-chan time.Time) error {
	timeout := l.cfg.Hook.ReadyTimeout.D()
	ro := l.o
	ro.Probe = append(slices.Clip(ro.Probe), probe.WithRetries(0))
	for {
		obs, err := Probe(ctx, l.cfg, []model.Target{t}, ro)
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
		l.o.Logger.Debug("instance not answering yet", "instance", t.ID, "error", why)
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance %s gave no answer before the action ended: %s", t.ID, why)
		case <-deadline:
			return fmt.Errorf("instance %s did not answer within hook.ready_timeout %s: %s", t.ID, timeout, why)
		case <-l.lo.After(l.lo.ReadyPoll):
		}
	}
}

// inService lists the group's InService instances other than the launching one, as targets.
func (l *Launches) inService(ctx context.Context, group, launching string) ([]model.Target, error) {
	// One group is asked for, and a group's instances all come in its one record: the answer
	// is a single page (Auto Scaling pages over groups, never over a group's instances).
	out, err := l.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil {
		return nil, fmt.Errorf("listing group %s: %w", group, awsconf.Wrap(err, l.cfg.Fleet.EC2.Region))
	}
	var ids []string
	for _, g := range out.AutoScalingGroups {
		for _, m := range g.Instances {
			if id := aws.ToString(m.InstanceId); m.LifecycleState == "InService" && id != launching {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	targets, err := l.ec2.Instances(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("describing the InService instances of %s: %w", group, err)
	}
	return targets, nil
}

// resolveRelease resolves the expected release, reusing one resolved less than ReleaseTTL ago:
// a burst of launches asks the registry once.
func (l *Launches) resolveRelease(ctx context.Context) (*model.Release, []model.Finding, error) {
	l.resolving.Lock()
	defer l.resolving.Unlock()
	l.mu.Lock()
	if l.release != nil && l.o.Now().Sub(l.resolved) < l.lo.ReleaseTTL {
		rel, extra := l.release, l.extra
		l.mu.Unlock()
		return rel, extra, nil
	}
	l.mu.Unlock()
	rel, extra, err := ResolveRelease(ctx, l.cfg, l.o.Logger, l.o.Version, l.o.Registry...)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	l.release, l.extra, l.resolved = rel, extra, l.o.Now()
	l.mu.Unlock()
	return rel, extra, nil
}
