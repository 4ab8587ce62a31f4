package hook

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
)

// Handler answers lifecycle actions for one configuration. It is safe for concurrent use.
type Handler struct {
	cfg    *config.Config
	asg    AutoScaling
	check  VerifyFunc
	region string
	o      options
}

// VerifyFunc verifies the launching instance id of group (internal/run's Launches.Verify: the
// instance found, awaited until it answers, and run through verify's stages). It returns the
// instance's report; an error, or a report with verdict "error", says it could not verify.
type VerifyFunc func(ctx context.Context, group, id string) (*model.Report, error)

type options struct {
	logger          *slog.Logger
	clock           Clock
	completeTimeout time.Duration
	backoff         func(attempt int) time.Duration
}

// Option tunes a Handler.
type Option func(*options)

// WithLogger sets the logger. The default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithClock sets the clock of heartbeats and retries. The default is the system clock.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithCompleteTimeout bounds how long CompleteLifecycleAction is retried on throttling and
// server errors. The default is 2m.
func WithCompleteTimeout(d time.Duration) Option {
	return func(o *options) { o.completeTimeout = d }
}

// WithBackoff sets the wait before retry attempt n (from 0) of CompleteLifecycleAction. The
// default doubles from 1s up to 20s.
func WithBackoff(f func(attempt int) time.Duration) Option { return func(o *options) { o.backoff = f } }

// New returns a handler answering the actions of cfg's hook through asg, verifying launches
// with check.
func New(cfg *config.Config, asg AutoScaling, check VerifyFunc, opts ...Option) *Handler {
	o := options{
		logger: slog.New(slog.DiscardHandler), clock: realClock{}, completeTimeout: 2 * time.Minute,
		backoff: func(n int) time.Duration { return min(time.Second<<min(n, 5), 20*time.Second) },
	}
	for _, opt := range opts {
		opt(&o)
	}
	region := ""
	if cfg.Fleet.EC2 != nil {
		region = cfg.Fleet.EC2.Region
	}
	return &Handler{cfg: cfg, asg: asg, check: check, region: region, o: o}
}

// NewFromAWS builds the Auto Scaling client from one aws.Config and returns New's handler.
func NewFromAWS(cfg *config.Config, ac aws.Config, check VerifyFunc, opts ...Option) *Handler {
	h := New(cfg, AutoScalingOf(autoscaling.NewFromConfig(ac)), check, opts...)
	if h.region == "" {
		h.region = ac.Region
	}
	return h
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
	started := h.o.clock.Now()
	rep, err := h.check(ctx, ev.Group, ev.InstanceID)
	if err != nil || rep == nil || rep.Verdict == model.VerdictError {
		why := "the verification produced no report"
		switch {
		case err != nil:
			why = err.Error()
		case rep != nil:
			why = rep.Error
		}
		if rep == nil {
			rep = &model.Report{Schema: model.ReportSchema, Verdict: model.VerdictError, Error: why, StartedAt: started,
				DurationMS: h.o.clock.Now().Sub(started).Milliseconds(), Instances: []model.Instance{}, Groups: []model.Group{}, Findings: []model.Finding{}}
		}
		onError := Abandon
		if h.cfg.Hook.OnError == "continue" {
			onError = Continue
		}
		return onError, fmt.Sprintf("could not verify (%s); hook.on_error is %s", why, h.cfg.Hook.OnError), rep
	}
	if f := worstAbout(rep, ev.InstanceID); f != nil {
		return Abandon, fmt.Sprintf("%s: %s", f.Kind, f.Message), rep
	}
	return Continue, fmt.Sprintf("%s serves the expected release", ev.InstanceID), rep
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
