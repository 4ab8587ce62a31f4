package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/testkit"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines by message outcome.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	ac, err := awsconf.Load(context.Background(), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(ac)
}

// serveUntil runs Serve until cond holds (checked every 20ms) or 20s pass, then stops it.
func serveUntil(t *testing.T, h *Handler, q *sqs.Client, o ServeOptions, cond func() bool) ServeResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res ServeResult
	var err error
	go func() { res, err = Serve(ctx, h, q, o); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestServe(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-good"}, {ID: "i-bad"}, {ID: "i-dead", Dead: true}}, "heartbeat_interval: 50ms\nready_timeout: 300ms")
	w.Fleet.Instance("i-bad").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	fq := w.AWS.SQS()
	url := fq.CreateQueue("launches", 30*time.Second)
	fq.Send(url, w.Launch("i-good", "tok-good", time.Minute))
	fq.Send(url, testkit.EventBridge(w.Launch("i-bad", "tok-bad", time.Minute)))
	fq.Send(url, w.Launch("i-dead", "tok-dead", time.Minute))
	fq.Send(url, w.Launch("i-good", "tok-good", time.Minute)) // a duplicate delivery
	fq.Send(url, `{"AutoScalingGroupName":"store-web-prod","Service":"AWS Auto Scaling","Event":"autoscaling:TEST_NOTIFICATION"}`)
	fq.Send(url, `not json at all`)
	fq.Send(url, `{"detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{}}`)
	var logs syncBuffer
	res := serveUntil(t, h, sqsClient(t), ServeOptions{Queue: url, Concurrency: 4, DrainTimeout: 5 * time.Second, WaitSeconds: 1,
		Log: slog.New(slog.NewJSONHandler(&logs, nil))}, func() bool { return fq.Stats(url).Deleted == 7 })
	if st := fq.Stats(url); st.Deleted != 7 || res.Left != 0 {
		t.Fatalf("queue %+v, result %+v: want every message deleted, none left", st, res)
	}
	for token, want := range map[string]string{"tok-good": "CONTINUE", "tok-bad": "ABANDON", "tok-dead": "ABANDON"} {
		act, _ := w.AWS.AutoScaling().Action(token)
		if act.Result != want || act.Completions != 1 {
			t.Fatalf("%s: %+v, want one %s", token, act, want)
		}
	}
	outcomes := map[string]int{}
	for _, l := range logs.lines(t) {
		if l["message_id"] != nil {
			outcomes[l["outcome"].(string)]++
		}
	}
	if outcomes["handled"] != 4 || outcomes["dropped"] != 2 || outcomes["duplicate"] != 1 {
		t.Fatalf("log outcomes %v: want 4 handled (3 launches, 1 test), 2 dropped, 1 duplicate", outcomes)
	}
	if n := len(w.AWS.Calls("CompleteLifecycleAction")); n > 4 {
		t.Fatalf("%d CompleteLifecycleAction calls for 3 actions (a duplicate may ask once more, no more)", n)
	}
}

func TestServeKilledMidVerification(t *testing.T) {
	// The first worker is stopped while the instance is still booting, with no time to
	// drain: the message stays on the queue, its visibility no longer extended, and a second
	// worker receives it again and completes the action once.
	w, h := world(t, []testkit.Spec{{ID: "i-slow", Status: 503}}, "heartbeat_interval: 50ms\nready_timeout: 30s")
	fq := w.AWS.SQS()
	url := fq.CreateQueue("launches", time.Second)
	fq.Send(url, w.Launch("i-slow", "tok", time.Minute))
	o := ServeOptions{Queue: url, Concurrency: 2, DrainTimeout: 10 * time.Millisecond, WaitSeconds: 1, Visibility: time.Second}
	res := serveUntil(t, h, sqsClient(t), o, func() bool { return len(w.AWS.Calls("RecordLifecycleActionHeartbeat")) >= 2 })
	if res.Left != 1 || res.LeftAtDrain != 1 || fq.Stats(url).Deleted != 0 {
		t.Fatalf("first worker: %+v, queue %+v: want the message left", res, fq.Stats(url))
	}
	if act, _ := w.AWS.AutoScaling().Action("tok"); act.Result != "" {
		t.Fatalf("action %+v completed by a worker that was stopped", act)
	}
	w.Fleet.Instance("i-slow").Set(func(s *testkit.Spec) { s.Status = 0 })
	res = serveUntil(t, h, sqsClient(t), o, func() bool { return fq.Stats(url).Deleted == 1 })
	act, _ := w.AWS.AutoScaling().Action("tok")
	if res.Handled != 1 || act.Result != "CONTINUE" || act.Completions != 1 || fq.Stats(url).MaxReceives < 2 {
		t.Fatalf("second worker: %+v, action %+v, queue %+v", res, act, fq.Stats(url))
	}
}

func TestServeDrainFinishesInFlight(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-slow", Status: 503}}, "heartbeat_interval: 50ms\nready_timeout: 30s")
	fq := w.AWS.SQS()
	url := fq.CreateQueue("launches", 30*time.Second)
	fq.Send(url, w.Launch("i-slow", "tok", time.Minute))
	go func() {
		for len(w.AWS.Calls("RecordLifecycleActionHeartbeat")) < 1 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // SIGTERM has come by now
		w.Fleet.Instance("i-slow").Set(func(s *testkit.Spec) { s.Status = 0 })
	}()
	res := serveUntil(t, h, sqsClient(t), ServeOptions{Queue: url, Concurrency: 1, DrainTimeout: 10 * time.Second, WaitSeconds: 1},
		func() bool { return len(w.AWS.Calls("RecordLifecycleActionHeartbeat")) >= 1 })
	if res.Left != 0 || res.Handled != 1 || fq.Stats(url).Deleted != 1 {
		t.Fatalf("%+v: the in-flight action must finish within drain_timeout", res)
	}
}

func TestServeExtendsVisibility(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-slow", Status: 503}}, "heartbeat_interval: 50ms\nready_timeout: 30s")
	fq := w.AWS.SQS()
	url := fq.CreateQueue("launches", 2*time.Second)
	fq.Send(url, w.Launch("i-slow", "tok", time.Minute))
	go func() {
		// Longer than two visibility timeouts; each extension (every third of the timeout) has
		// over a second of slack, enough under the race detector on a busy machine.
		time.Sleep(4500 * time.Millisecond)
		w.Fleet.Instance("i-slow").Set(func(s *testkit.Spec) { s.Status = 0 })
	}()
	res := serveUntil(t, h, sqsClient(t), ServeOptions{Queue: url, Concurrency: 2, DrainTimeout: time.Second, WaitSeconds: 1, Visibility: 2 * time.Second},
		func() bool { return fq.Stats(url).Deleted == 1 })
	if st := fq.Stats(url); res.Handled != 1 || st.MaxReceives != 1 || len(w.AWS.Calls("ChangeMessageVisibility")) < 3 {
		t.Fatalf("%+v, queue %+v, %d extensions: the message must stay invisible while worked on", res, st, len(w.AWS.Calls("ChangeMessageVisibility")))
	}
}

func TestServeUnusableQueue(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-1"}}, "")
	w.AWS.SQS().CreateQueue("launches", time.Minute)
	res, err := Serve(context.Background(), h, sqsClient(t), ServeOptions{Queue: w.AWS.URL() + "/123456789012/nope", WaitSeconds: 1})
	if err == nil || !strings.Contains(err.Error(), "QueueDoesNotExist") || res.Received != 0 {
		t.Fatalf("%+v, %v: want an error naming QueueDoesNotExist", res, err)
	}
}

func TestInvoke(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-good"}, {ID: "i-denied"}}, "")
	body, _ := json.Marshal(w.Launch("i-good", "tok-good", time.Minute))
	denied, _ := json.Marshal(w.Launch("i-denied", "tok-denied", time.Minute))
	w.AWS.Fail("CompleteLifecycleAction", "AccessDenied", "no", 1)
	// The denied one is handled first (concurrency 1), so the one failure is its own.
	batch := `{"Records":[{"messageId":"m-denied","body":` + string(denied) + `},{"messageId":"m-junk","body":"junk"},{"messageId":"m-good","body":` + string(body) + `}]}`
	got, err := Invoke(context.Background(), h, json.RawMessage(batch), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := got.(events.SQSEventResponse)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-denied" {
		t.Fatalf("failures %+v, want m-denied only", resp.BatchItemFailures)
	}
	if act, _ := w.AWS.AutoScaling().Action("tok-good"); act.Result != "CONTINUE" {
		t.Fatalf("good: %+v", act)
	}
	out, err := Invoke(context.Background(), h, json.RawMessage(`{"detail-type":"Scheduled Event","source":"aws.events","detail":{}}`), 1, nil)
	if err != nil || out.(Outcome).Decision != None {
		t.Fatalf("foreign event: %+v, %v: want dropped, no error (no retry)", out, err)
	}
}
