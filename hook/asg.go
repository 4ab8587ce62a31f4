package hook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/smithy-go"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
)

// AutoScaling holds the two Auto Scaling operations the hook calls, as method values of one
// client (AutoScalingOf). The client itself is never held: as an interface value it would
// link every operation of the service (cmd/polygraph's TestUnusedAWSOperationsAreNotLinked).
type AutoScaling struct {
	CompleteLifecycleAction        func(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
	RecordLifecycleActionHeartbeat func(context.Context, *autoscaling.RecordLifecycleActionHeartbeatInput, ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error)
}

// AutoScalingOf returns the operations of c the hook calls.
func AutoScalingOf(c *autoscaling.Client) AutoScaling {
	return AutoScaling{CompleteLifecycleAction: c.CompleteLifecycleAction, RecordLifecycleActionHeartbeat: c.RecordLifecycleActionHeartbeat}
}

// Decision is the result a lifecycle action is completed with.
type Decision string

// Decisions. None means no action was completed (a test notification, or an action that was
// no longer active).
const (
	Continue Decision = "CONTINUE"
	Abandon  Decision = "ABANDON"
	None     Decision = ""
)

// noActiveAction reports whether Auto Scaling says the action is over: completed already (by
// an earlier delivery of the same event, or by hand) or timed out.
func noActiveAction(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" &&
		strings.Contains(ae.ErrorMessage(), "No active Lifecycle Action found")
}

// retryable reports whether a failed call may succeed when repeated: throttling, a 5xx, no
// answer at all. A refusal (AccessDenied, a bad parameter) will not.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
			"InternalFailure", "InternalError", "ServiceUnavailable", "RequestTimeout":
			return true
		}
		return ae.ErrorFault() == smithy.FaultServer
	}
	var ne net.Error
	return errors.As(err, &ne) || strings.Contains(err.Error(), "connection")
}

// complete sends CompleteLifecycleAction once Auto Scaling accepts it, repeating it on
// throttling and server errors with backoff until completeTimeout. It reports done when the
// action was already over.
func (h *Handler) complete(ctx context.Context, ev Event, d Decision) (already bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.o.completeTimeout)
	defer cancel()
	in := &autoscaling.CompleteLifecycleActionInput{
		AutoScalingGroupName:  aws.String(ev.Group),
		LifecycleHookName:     aws.String(ev.Hook),
		LifecycleActionToken:  aws.String(ev.Token),
		InstanceId:            aws.String(ev.InstanceID),
		LifecycleActionResult: aws.String(string(d)),
	}
	for attempt := 0; ; attempt++ {
		_, err = h.asg.CompleteLifecycleAction(ctx, in)
		switch {
		case err == nil:
			return false, nil
		case noActiveAction(err):
			return true, nil
		case !retryable(err):
			return false, fmt.Errorf("completing the lifecycle action of %s with %s: %w", ev.InstanceID, d, awsconf.Wrap(err, h.region))
		}
		h.o.logger.Warn("completing the lifecycle action failed; retrying", "instance", ev.InstanceID, "attempt", attempt+1, "error", err.Error())
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("completing the lifecycle action of %s with %s: gave up after %d attempts: %w", ev.InstanceID, d, attempt+1, awsconf.Wrap(err, h.region))
		case <-h.o.clock.After(h.o.backoff(attempt)):
		}
	}
}

// heartbeat records a heartbeat every interval until ctx ends. When Auto Scaling says the
// action is no longer active it calls gone and returns: nothing is left to answer.
func (h *Handler) heartbeat(ctx context.Context, ev Event, count *int, gone func()) {
	tick, stop := h.o.clock.Ticker(h.cfg.Hook.HeartbeatInterval.D())
	defer stop()
	in := &autoscaling.RecordLifecycleActionHeartbeatInput{
		AutoScalingGroupName: aws.String(ev.Group),
		LifecycleHookName:    aws.String(ev.Hook),
		LifecycleActionToken: aws.String(ev.Token),
		InstanceId:           aws.String(ev.InstanceID),
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		_, err := h.asg.RecordLifecycleActionHeartbeat(ctx, in)
		*count++
		switch {
		case err == nil:
		case noActiveAction(err):
			h.o.logger.Warn("the lifecycle action is no longer active (timed out or completed elsewhere)", "instance", ev.InstanceID)
			gone()
			return
		case ctx.Err() == nil:
			// The next heartbeat may get through; the action's own timeout is the bound.
			h.o.logger.Warn("recording a lifecycle heartbeat failed", "instance", ev.InstanceID, "error", awsconf.Wrap(err, h.region).Error())
		}
	}
}

// Clock is the time source of heartbeats, readiness polls and retries; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
	// Ticker ticks every d until stop is called.
	Ticker(d time.Duration) (tick <-chan time.Time, stop func())
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) Ticker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
