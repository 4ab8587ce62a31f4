package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// queue holds the three SQS operations the worker calls, as method values of one client: the
// client itself is never held, since as an interface value it would link every operation of
// the service (cmd/polygraph's TestUnusedAWSOperationsAreNotLinked).
type queue struct {
	ReceiveMessage          func(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage           func(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility func(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// ServeOptions configure the SQS worker.
type ServeOptions struct {
	// Queue is the queue URL.
	Queue string
	// Concurrency is how many messages are handled at once (hook.concurrency).
	Concurrency int
	// DrainTimeout is how long in-flight messages may finish once ctx ends (hook.drain_timeout).
	DrainTimeout time.Duration
	// Visibility is the visibility timeout asked for on receive and on every extension while
	// a message is worked on. The default is 60s; it is extended every third of it.
	Visibility time.Duration
	// WaitSeconds is the long-poll wait. The default is 20.
	WaitSeconds int32
	// Log receives one JSON line per handled message; nil discards.
	Log *slog.Logger
}

// ServeResult counts what the worker did.
type ServeResult struct {
	Received int `json:"received"`
	Handled  int `json:"handled"`
	Deleted  int `json:"deleted"`
	// Left counts messages left on the queue unfinished: interrupted by the drain deadline,
	// or whose action could not be completed; another worker receives them again.
	Left int `json:"left"`
	// LeftAtDrain counts those the drain deadline interrupted.
	LeftAtDrain int `json:"left_at_drain"`
	// Duplicates counts second deliveries of an action this worker had in hand.
	Duplicates int `json:"duplicates"`
}

// tokenState is an action this worker has in hand: done closes when it is finished,
// completed says whether it was answered.
type tokenState struct {
	done      chan struct{}
	completed bool
}

// worker is one Serve call's state.
type worker struct {
	h   *Handler
	q   queue
	o   ServeOptions
	log *slog.Logger

	mu     sync.Mutex
	tokens map[string]*tokenState
	res    ServeResult
}

// Serve receives lifecycle events from an SQS queue and answers them until ctx ends (SIGTERM);
// then it stops receiving, lets in-flight messages finish within DrainTimeout and leaves the
// rest on the queue, visibility no longer extended. A message is deleted once its action is
// completed (or was already), or when it needs no action (a test notification) or cannot be
// read at all. The error is for a queue the worker cannot use at all.
func Serve(ctx context.Context, h *Handler, client *sqs.Client, o ServeOptions) (ServeResult, error) {
	q := queue{client.ReceiveMessage, client.DeleteMessage, client.ChangeMessageVisibility}
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	if o.Visibility <= 0 {
		o.Visibility = 60 * time.Second
	}
	if o.WaitSeconds == 0 {
		o.WaitSeconds = 20
	}
	w := &worker{h: h, q: q, o: o, log: o.Log, tokens: map[string]*tokenState{}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var drained atomic.Bool
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(o.DrainTimeout, func() { drained.Store(true); cancelWork() })
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopDrain()

	slots := make(chan struct{}, o.Concurrency)
	for range o.Concurrency {
		slots <- struct{}{}
	}
	var wg sync.WaitGroup
	var fatal error
	failures := 0
receive:
	for {
		select {
		case <-slots:
		case <-ctx.Done():
			break receive
		}
		n := 1
	more:
		for n < min(o.Concurrency, 10) {
			select {
			case <-slots:
				n++
			default:
				break more
			}
		}
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(o.Queue), MaxNumberOfMessages: int32(n), WaitTimeSeconds: o.WaitSeconds,
			VisibilityTimeout:           int32(o.Visibility / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		got := 0
		if out != nil {
			got = len(out.Messages)
		}
		for range n - got {
			slots <- struct{}{}
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if !retryable(err) {
				fatal = fmt.Errorf("receiving from %s: %w", o.Queue, err)
				break
			}
			failures++
			w.log.Warn("receiving failed; retrying", "queue", o.Queue, "error", err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(h.o.backoff(failures - 1)):
			}
			continue
		}
		failures = 0
		for _, m := range out.Messages {
			w.count(func(r *ServeResult) { r.Received++ })
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { slots <- struct{}{} }()
				w.handle(work, m, &drained)
			}()
		}
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res, fatal
}

func (w *worker) count(f func(*ServeResult)) {
	w.mu.Lock()
	f(&w.res)
	w.mu.Unlock()
}

// handle works one message and writes its log line.
func (w *worker) handle(ctx context.Context, m types.Message, drained *atomic.Bool) {
	start := time.Now()
	id := aws.ToString(m.MessageId)
	attrs := []any{"message_id", id, "receive_count", receiveCount(m)}
	line := func(level slog.Level, msg string, more ...any) {
		w.log.Log(context.Background(), level, msg, append(append(attrs, more...), "duration_ms", time.Since(start).Milliseconds())...)
	}
	ev, err := Decode([]byte(aws.ToString(m.Body)))
	if err != nil {
		if errors.Is(err, ErrRecords) {
			err = &DecodeError{Foreign: true, Msg: "an SQS message holding a Lambda SQS event"}
		}
		w.delete(ctx, m)
		line(slog.LevelWarn, "message dropped: not a lifecycle event", "outcome", "dropped", "error", err.Error())
		return
	}
	attrs = append(attrs, "group", ev.Group, "instance", ev.InstanceID, "transition", ev.Transition, "shape", ev.Shape)
	if !ev.Test {
		if st, seen := w.claim(ev.Token); seen {
			// A second delivery of an action this worker has in hand: wait for the first to
			// finish, then drop this copy if it was answered, else leave it for redelivery.
			w.count(func(r *ServeResult) { r.Duplicates++ })
			select {
			case <-st.done:
			case <-ctx.Done():
			}
			w.mu.Lock()
			completed := st.completed
			w.mu.Unlock()
			if completed {
				w.delete(ctx, m)
				line(slog.LevelInfo, "duplicate of an action this worker answered", "outcome", "duplicate")
				return
			}
			line(slog.LevelInfo, "duplicate of an action not answered here; left on the queue", "outcome", "duplicate-left")
			return
		}
	}
	mctx, stop := context.WithCancel(ctx)
	go w.extend(mctx, m)
	out, err := w.h.Handle(ctx, ev)
	stop()
	if err != nil {
		w.release(ev.Token, false)
		w.count(func(r *ServeResult) {
			r.Left++
			if drained.Load() {
				r.LeftAtDrain++
			}
		})
		line(slog.LevelError, "action not completed; message left on the queue", "outcome", "left", "error", err.Error(),
			"decision", string(out.Decision))
		return
	}
	w.release(ev.Token, true)
	w.count(func(r *ServeResult) { r.Handled++ })
	w.delete(ctx, m)
	line(slog.LevelInfo, "message handled", "outcome", "handled", "decision", string(out.Decision), "completed", out.Completed,
		"already_done", out.AlreadyDone, "exit_code", out.ExitCode, "heartbeats", out.Heartbeats, "reason", out.Reason)
}

// claim takes a token in hand, or returns the state of the delivery that already has it.
func (w *worker) claim(token string) (st *tokenState, seen bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, seen = w.tokens[token]; seen {
		return st, true
	}
	if len(w.tokens) > 100_000 {
		// A bound on memory: an action answered long ago is still refused by Auto Scaling
		// ("No active Lifecycle Action found"), so forgetting it costs one call.
		for k, v := range w.tokens {
			if isClosed(v.done) {
				delete(w.tokens, k)
			}
		}
	}
	w.tokens[token] = &tokenState{done: make(chan struct{})}
	return nil, false
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// release finishes a token: answered ones are remembered, others forgotten so a redelivery
// is worked on again.
func (w *worker) release(token string, completed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.tokens[token]
	if st == nil {
		return
	}
	st.completed = completed
	close(st.done)
	if !completed {
		delete(w.tokens, token)
	}
}

// extend keeps the message invisible to other workers while it is worked on.
func (w *worker) extend(ctx context.Context, m types.Message) {
	t := time.NewTicker(w.o.Visibility / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := w.q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(w.o.Queue), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(w.o.Visibility / time.Second),
		})
		if err != nil && ctx.Err() == nil {
			w.log.Warn("extending the message's visibility failed", "message_id", aws.ToString(m.MessageId), "error", err.Error())
		}
	}
}

// delete removes a finished message, trying a few times; a message that stays is received
// again and answered as already complete.
func (w *worker) delete(ctx context.Context, m types.Message) {
	var err error
	for attempt := range 3 {
		if _, err = w.q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.o.Queue), ReceiptHandle: m.ReceiptHandle}); err == nil {
			w.count(func(r *ServeResult) { r.Deleted++ })
			return
		}
		if !retryable(err) {
			break
		}
		time.Sleep(w.h.o.backoff(attempt))
	}
	w.log.Warn("deleting the message failed; it will be delivered again and found complete", "message_id", aws.ToString(m.MessageId), "error", err.Error())
}

func receiveCount(m types.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	return n
}
