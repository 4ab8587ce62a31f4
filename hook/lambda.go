package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Invoke is the Lambda entry point's one step: it takes an invocation's payload, an
// EventBridge (or SNS-shaped) lifecycle event or an SQS event of several, and hands each
// event to the handler. For an SQS event it returns the batch item failures: the messages
// whose actions could not be answered, which Lambda leaves on the queue (unreadable messages
// are logged and dropped, never retried). For a single event the error makes Lambda retry
// the invocation; an unreadable one is logged and dropped.
func Invoke(ctx context.Context, h *Handler, payload json.RawMessage, concurrency int, log *slog.Logger) (any, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ev, err := Decode(payload)
	if errors.Is(err, ErrRecords) {
		return invokeRecords(ctx, h, payload, concurrency, log)
	}
	if err != nil {
		log.Warn("event dropped: not a lifecycle event", "outcome", "dropped", "error", err.Error())
		return Outcome{Reason: "dropped: " + err.Error()}, nil
	}
	out, err := h.Handle(ctx, ev)
	logOutcome(log, "", out, err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func invokeRecords(ctx context.Context, h *Handler, payload json.RawMessage, concurrency int, log *slog.Logger) (any, error) {
	recs, err := DecodeRecords(payload)
	if err != nil {
		return nil, fmt.Errorf("reading the SQS event: %w", err)
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(concurrency, 1))
	for _, r := range recs {
		if r.Err != nil {
			log.Warn("message dropped: not a lifecycle event", "message_id", r.MessageID, "outcome", "dropped", "error", r.Err.Error())
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out, err := h.Handle(ctx, r.Event)
			logOutcome(log, r.MessageID, out, err)
			if err != nil {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageID})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return resp, nil
}

func logOutcome(log *slog.Logger, messageID string, out Outcome, err error) {
	attrs := []any{"message_id", messageID, "group", out.Event.Group, "instance", out.Event.InstanceID,
		"transition", out.Event.Transition, "decision", string(out.Decision), "completed", out.Completed,
		"already_done", out.AlreadyDone, "exit_code", out.ExitCode, "reason", out.Reason}
	if out.Report != nil {
		attrs = append(attrs, "verdict", out.Report.Verdict, "findings", len(out.Report.Findings))
	}
	if err != nil {
		log.Error("action not completed", append(attrs, "outcome", "failed", "error", err.Error())...)
		return
	}
	log.Info("event handled", append(attrs, "outcome", "handled")...)
}
