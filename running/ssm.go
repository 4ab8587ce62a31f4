package running

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/model"
)

// SSMOption tunes the SSM source.
type SSMOption func(*ssmOptions)

type ssmOptions struct {
	engine         string
	region         string
	pollFirst      time.Duration
	pollMax        time.Duration
	commandTimeout time.Duration
	concurrency    int
	logger         *slog.Logger
}

// WithEngine sets the container runtime asked on the instances: docker, containerd, podman
// or nerdctl. The default is docker.
func WithEngine(e string) SSMOption { return func(o *ssmOptions) { o.engine = e } }

// WithRegion names the region in errors. The default is "".
func WithRegion(r string) SSMOption { return func(o *ssmOptions) { o.region = r } }

// WithPolling sets the wait before the first poll and the cap of the doubling wait between
// polls. The default is 500ms, doubling up to 5s.
func WithPolling(first, max time.Duration) SSMOption {
	return func(o *ssmOptions) { o.pollFirst, o.pollMax = first, max }
}

// WithCommandTimeout sets how long SSM lets the script run on an instance (TimeoutSeconds,
// at least 30s). The default is 60s.
func WithCommandTimeout(d time.Duration) SSMOption {
	return func(o *ssmOptions) { o.commandTimeout = d }
}

// WithSSMLogger sets the logger. The default discards.
func WithSSMLogger(l *slog.Logger) SSMOption { return func(o *ssmOptions) { o.logger = l } }

// SSM reads running digests by running a read-only script through AWS Systems Manager
// (AWS-RunShellScript) on the instances.
type SSM struct {
	sendOp      func(context.Context, *ssm.SendCommandInput, ...func(*ssm.Options)) (*ssm.SendCommandOutput, error)
	invocations func(context.Context, *ssm.ListCommandInvocationsInput, ...func(*ssm.Options)) (*ssm.ListCommandInvocationsOutput, error)
	container   string
	o           ssmOptions
}

// MaxInstancesPerCommand is SSM's limit of instance IDs in one SendCommand.
const MaxInstancesPerCommand = 50

// NewSSM returns the SSM source asking about container (a name, an ID or "label=KEY=VALUE").
// The source keeps the two operations it calls, never the client: a *ssm.Client in a field of
// a value that becomes an interface (or in an interface itself) makes the linker keep every
// SSM operation, because urfave/cli's help links text/template, which calls methods by name;
// megabytes of code and of resident memory at every start. For the same reason the pages of
// ListCommandInvocations are walked by hand rather than with the SDK's paginator.
func NewSSM(client *ssm.Client, container string, opts ...SSMOption) (*SSM, error) {
	o := ssmOptions{engine: "docker", pollFirst: 500 * time.Millisecond, pollMax: 5 * time.Second, commandTimeout: time.Minute, concurrency: 8}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if !slices.Contains(Engines, o.engine) {
		return nil, fmt.Errorf("unknown container engine %q (want one of %s)", o.engine, strings.Join(Engines, ", "))
	}
	if !ValidContainer(container) {
		return nil, fmt.Errorf("container %q must be a name, an ID or label=KEY=VALUE", container)
	}
	s := &SSM{container: container, o: o}
	if client != nil {
		s.sendOp, s.invocations = client.SendCommand, client.ListCommandInvocations
	}
	return s, nil
}

// Name returns "ssm".
func (*SSM) Name() string { return "ssm" }

// Script is the script the source sends.
func (s *SSM) Script() string { return Script(s.o.engine, s.container) }

var instanceID = regexp.MustCompile(`^(m?i-[0-9a-f]{8,17})(:[0-9]+)?$`)

// command is one SendCommand and the instances it runs on.
type command struct {
	id        string
	instances []string
	done      map[string]bool
}

// RunningDigests sends the script to every instance target (50 a command), then polls each
// command's invocations until all end or ctx ends. Targets that are no EC2 instance, and
// instances SSM does not manage, are Unknown.
func (s *SSM) RunningDigests(ctx context.Context, targets []model.Target) ([]model.RunningDigest, error) {
	res := make([]model.RunningDigest, len(targets))
	byInstance := map[string][]int{}
	var ids []string
	for i, t := range targets {
		res[i] = model.RunningDigest{TargetID: t.ID, Source: "ssm"}
		m := instanceID.FindStringSubmatch(t.ID)
		if m == nil {
			res[i].Unknown = fmt.Sprintf("%s is not an EC2 instance: SSM needs an instance ID", t.ID)
			continue
		}
		if _, ok := byInstance[m[1]]; !ok {
			ids = append(ids, m[1])
		}
		byInstance[m[1]] = append(byInstance[m[1]], i)
	}
	set := func(id string, f func(*model.RunningDigest)) {
		for _, i := range byInstance[id] {
			f(&res[i])
		}
	}
	unknown := func(id, why string) { set(id, func(r *model.RunningDigest) { r.Unknown = why }) }

	// Batches are sent a few at once; each instance is in one batch, so each result slot is
	// written by one goroutine.
	var (
		cmds    []*command
		sendErr error
		mu      sync.Mutex
		wg      sync.WaitGroup
		sem     = make(chan struct{}, s.o.concurrency)
	)
	for start := 0; start < len(ids); start += MaxInstancesPerCommand {
		batch := ids[start:min(start+MaxInstancesPerCommand, len(ids))]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sent, err := s.send(ctx, batch, unknown)
			mu.Lock()
			defer mu.Unlock()
			cmds = append(cmds, sent...)
			if err != nil && sendErr == nil {
				sendErr = err
			}
		}()
	}
	wg.Wait()
	if sendErr != nil {
		return nil, sendErr
	}
	if err := s.poll(ctx, cmds, set, unknown); err != nil {
		return nil, err
	}
	share(res)
	return res, nil
}

// send sends the script to batch. Instances SSM names as invalid are marked unknown and the
// command is sent again without them; when SSM does not say which are invalid, the batch is
// split in halves until it does.
func (s *SSM) send(ctx context.Context, batch []string, unknown func(id, why string)) ([]*command, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	out, err := s.sendOp(ctx, &ssm.SendCommandInput{
		DocumentName:   aws.String("AWS-RunShellScript"),
		InstanceIds:    batch,
		Comment:        aws.String("polygraph: read the image the " + s.container + " container runs"),
		Parameters:     map[string][]string{"commands": {s.Script()}},
		TimeoutSeconds: aws.Int32(int32(max(s.o.commandTimeout, 30*time.Second) / time.Second)),
	})
	if err == nil {
		c := &command{id: aws.ToString(out.Command.CommandId), instances: batch, done: map[string]bool{}}
		s.o.logger.Debug("ssm command sent", "command", c.id, "instances", len(batch))
		return []*command{c}, nil
	}
	var invalid *types.InvalidInstanceId
	if errors.As(err, &invalid) {
		named := regexp.MustCompile(`m?i-[0-9a-f]{8,17}`).FindAllString(aws.ToString(invalid.Message), -1)
		var rest []string
		for _, id := range batch {
			if slices.Contains(named, id) {
				unknown(id, fmt.Sprintf("SSM cannot run commands on %s (not managed by SSM, or not running): %s", id, aws.ToString(invalid.Message)))
			} else {
				rest = append(rest, id)
			}
		}
		switch {
		case len(rest) < len(batch):
			return s.send(ctx, rest, unknown)
		case len(batch) == 1:
			unknown(batch[0], fmt.Sprintf("SSM cannot run commands on %s: %s", batch[0], aws.ToString(invalid.Message)))
			return nil, nil
		}
		half := len(batch) / 2
		a, err := s.send(ctx, batch[:half], unknown)
		if err != nil {
			return nil, err
		}
		b, err := s.send(ctx, batch[half:], unknown)
		return append(a, b...), err
	}
	werr := awsconf.Wrap(err, s.o.region)
	var ae *awsconf.Error
	if errors.As(werr, &ae) && ae.Denied {
		return nil, werr
	}
	for _, id := range batch {
		unknown(id, "sending the SSM command: "+werr.Error())
	}
	return nil, nil
}

// terminal are the invocation statuses that end.
var terminal = map[types.CommandInvocationStatus]bool{
	types.CommandInvocationStatusSuccess: true, types.CommandInvocationStatusFailed: true,
	types.CommandInvocationStatusTimedOut: true, types.CommandInvocationStatusCancelled: true,
}

// poll lists each unfinished command's invocations, with a doubling wait between rounds,
// until every invocation ended or ctx ends. One ListCommandInvocations (per 50 invocations)
// per command and round, whatever the number of instances.
func (s *SSM) poll(ctx context.Context, cmds []*command, set func(string, func(*model.RunningDigest)), unknown func(id, why string)) error {
	wait := s.o.pollFirst
	last := map[string]string{} // instance -> last status seen
	var mu sync.Mutex
	for {
		pending := cmds[:0:0]
		for _, c := range cmds {
			if len(c.done) < len(c.instances) {
				pending = append(pending, c)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			for _, c := range pending {
				for _, id := range c.instances {
					if !c.done[id] {
						status := last[id]
						if status == "" {
							status = "not yet visible"
						}
						unknown(id, fmt.Sprintf("SSM command %s on %s was still %s when the run's deadline passed", c.id, id, status))
					}
				}
			}
			return nil
		case <-timer.C:
		}
		wait = min(wait*2, s.o.pollMax)
		var wg sync.WaitGroup
		var denied error
		sem := make(chan struct{}, s.o.concurrency)
		for _, c := range pending {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				err := s.list(ctx, c, func(inv types.CommandInvocation) {
					id := aws.ToString(inv.InstanceId)
					mu.Lock()
					defer mu.Unlock()
					last[id] = string(inv.Status)
					if !terminal[inv.Status] || c.done[id] || !slices.Contains(c.instances, id) {
						return
					}
					c.done[id] = true
					r := s.result(c.id, id, inv)
					set(id, func(d *model.RunningDigest) {
						d.ImageID, d.RepoDigests, d.Unknown = r.ImageID, r.RepoDigests, r.Unknown
					})
				})
				if err == nil || ctx.Err() != nil {
					return
				}
				werr := awsconf.Wrap(err, s.o.region)
				mu.Lock()
				defer mu.Unlock()
				var ae *awsconf.Error
				if errors.As(werr, &ae) && ae.Denied {
					denied = werr
					return
				}
				for _, id := range c.instances {
					if !c.done[id] {
						c.done[id] = true
						unknown(id, "listing SSM command invocations: "+werr.Error())
					}
				}
			}()
		}
		wg.Wait()
		if denied != nil {
			return denied
		}
	}
}

// list reads every page of a command's invocations. InvocationDoesNotExist means the
// invocations are not visible yet: nothing to read this round. It is known by its code: the
// service model declares it for GetCommandInvocation only, so the generated deserializer of
// ListCommandInvocations hands it over as a generic API error, not as the typed one.
func (s *SSM) list(ctx context.Context, c *command, each func(types.CommandInvocation)) error {
	in := &ssm.ListCommandInvocationsInput{CommandId: aws.String(c.id), Details: true, MaxResults: aws.Int32(50)}
	for {
		page, err := s.invocations(ctx, in)
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "InvocationDoesNotExist" {
			return nil
		}
		if err != nil {
			return err
		}
		for _, inv := range page.CommandInvocations {
			each(inv)
		}
		next := aws.ToString(page.NextToken)
		if next == "" || next == aws.ToString(in.NextToken) {
			return nil
		}
		req := *in
		req.NextToken = aws.String(next)
		in = &req
	}
}

// result reads one ended invocation.
func (s *SSM) result(cmd, id string, inv types.CommandInvocation) model.RunningDigest {
	var out string
	code := int32(0)
	for _, p := range inv.CommandPlugins {
		out += aws.ToString(p.Output)
		code = p.ResponseCode
	}
	return fromOutput(fmt.Sprintf("SSM command %s on %s", cmd, id), string(inv.Status), code, out)
}

// fromOutput turns a script's output into a result: Unknown names why nothing was read.
func fromOutput(where, status string, code int32, out string) model.RunningDigest {
	p := parseOutput(out)
	var r model.RunningDigest
	switch {
	case p.problem != "":
		r.Unknown = fmt.Sprintf("%s: %s", where, p.problem)
	case p.imageID != "" || len(p.repoDigests) > 0:
		r.ImageID, r.RepoDigests = p.imageID, p.repoDigests
	case status != string(types.CommandInvocationStatusSuccess):
		r.Unknown = fmt.Sprintf("%s ended %s (exit %d): %s", where, status, code, firstLine(out))
	default:
		r.Unknown = fmt.Sprintf("%s printed no image digest: %s", where, firstLine(out))
	}
	return r
}

func firstLine(s string) string {
	s = strings.TrimSpace(strings.TrimPrefix(s, "polygraph-runtime v1\n"))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "no output"
	}
	return s
}
