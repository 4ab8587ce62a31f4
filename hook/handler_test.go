package hook

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/awsfake"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/registry"
)

// fastRun is the verification run's options in tests: loopback only, no backoff waits.
func fastRun() run.Options {
	return run.Options{
		Probe:    []probe.Option{probe.WithBackoff(probe.NoWait, 0, 0), probe.WithDialer(testkit.LoopbackDial)},
		Registry: []registry.Option{registry.WithTransport(testkit.LoopbackTransport()), registry.WithCacheDir("")},
	}
}

// setup is what a test may tune of the handler and its launch verifier.
type setup struct {
	run    run.Options
	launch run.LaunchOptions
	hook   []Option
}

// world starts a launch world with the given instances and returns it with a handler over
// its fakes, configured with the hook section given.
func world(t *testing.T, specs []testkit.Spec, hookYAML string, edits ...func(*setup)) (*testkit.LaunchWorld, *Handler) {
	t.Helper()
	w, err := testkit.StartLaunchWorld(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	awsfake.Setenv(t, w.Env())
	path, err := w.WriteConfig(t.TempDir(), hookYAML)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := awsconf.Load(context.Background(), cfg.Fleet.EC2.Region)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := setup{run: fastRun(), launch: run.LaunchOptions{ReadyPoll: 20 * time.Millisecond},
		hook: []Option{WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }), WithLogger(logger)}}
	for _, e := range edits {
		e(&s)
	}
	launches, err := run.NewLaunchesFromAWS(cfg, ac, s.run, s.launch)
	if err != nil {
		t.Fatal(err)
	}
	return w, NewFromAWS(cfg, ac, launches.Verify, s.hook...)
}

func decode(t *testing.T, body string) Event {
	t.Helper()
	ev, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestHandleLaunches(t *testing.T) {
	w, h := world(t, []testkit.Spec{
		{ID: "i-good"},
		{ID: "i-repushed", Build: nil},
		{ID: "i-dead", Dead: true},
	}, "heartbeat_interval: 30ms\nready_timeout: 300ms")
	w.Fleet.Instance("i-repushed").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	cases := []struct {
		id       string
		want     Decision
		exit     int
		reason   string
		finding  model.Kind
		verdict  string
		beatsMin int
	}{
		{"i-good", Continue, 0, "serves the expected release", "", model.VerdictPass, 0},
		{"i-repushed", Abandon, 1, "serves other content", model.KindContentMismatch, model.VerdictFail, 0},
		{"i-dead", Abandon, 3, "did not answer within hook.ready_timeout", "", model.VerdictError, 3},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			token := "tok-" + c.id
			ev := decode(t, w.Launch(c.id, token, time.Minute))
			out, err := h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if out.Decision != c.want || out.ExitCode != c.exit || !out.Completed || !strings.Contains(out.Reason, c.reason) {
				t.Fatalf("outcome %+v, want %s exit %d reason ~%q", out, c.want, c.exit, c.reason)
			}
			if out.Report == nil || out.Report.Verdict != c.verdict {
				t.Fatalf("report %+v, want verdict %s", out.Report, c.verdict)
			}
			if c.finding != "" && !hasKind(out.Report, c.finding) {
				t.Fatalf("findings %+v, want %s", out.Report.Findings, c.finding)
			}
			act, _ := w.AWS.AutoScaling().Action(token)
			if act.Result != string(c.want) || act.Completions != 1 {
				t.Fatalf("action %+v: want one completion with %s", act, c.want)
			}
			if out.Heartbeats < c.beatsMin || act.Heartbeats < c.beatsMin {
				t.Fatalf("%d heartbeats sent, %d recorded, want at least %d while waiting", out.Heartbeats, act.Heartbeats, c.beatsMin)
			}
		})
	}
}

func TestHandleAnswersWithoutVerifying(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-1", Dead: true}}, "")
	launching := w.Launch("i-1", "tok-warm", time.Minute)
	cases := []struct {
		name, body string
		want       Decision
	}{
		{"test notification", `{"AccountId":"123456789012","RequestId":"x","AutoScalingGroupARN":"arn:x","AutoScalingGroupName":"store-web-prod","Service":"AWS Auto Scaling","Event":"autoscaling:TEST_NOTIFICATION","Time":"2026-11-30T12:00:00Z"}`, None},
		{"terminating", testkit.Notification(w.Group, w.Hook, "i-1", "tok-term", TransitionTerminating), Continue},
		{"into the warm pool", strings.Replace(launching, `"Destination":"AutoScalingGroup"`, `"Destination":"WarmPool"`, 1), Continue},
	}
	w.AWS.AutoScaling().AddAction(awsfake.LifecycleAction{Group: w.Group, Hook: w.Hook, Instance: "i-1", Token: "tok-term"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.AWS.Reset()
			out, err := h.Handle(context.Background(), decode(t, c.body))
			if err != nil || out.Decision != c.want || out.ExitCode != 0 {
				t.Fatalf("outcome %+v, %v: want %q exit 0", out, err, c.want)
			}
			if n := len(w.AWS.Calls("DescribeInstances")); n != 0 {
				t.Fatalf("%d DescribeInstances calls: nothing is verified", n)
			}
			if n := len(w.AWS.Calls("CompleteLifecycleAction")); (c.want == None) != (n == 0) {
				t.Fatalf("%d CompleteLifecycleAction calls for decision %q", n, c.want)
			}
		})
	}
}

func TestHandleFromWarmPoolIsVerified(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-warm"}}, "")
	w.Fleet.Instance("i-warm").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	body := strings.Replace(w.Launch("i-warm", "tok", time.Minute), `"Origin":"EC2"`, `"Origin":"WarmPool"`, 1)
	out, err := h.Handle(context.Background(), decode(t, body))
	if err != nil || out.Decision != Abandon {
		t.Fatalf("outcome %+v, %v: a warmed instance holding an old image must be abandoned", out, err)
	}
}

func TestHandleOnErrorContinue(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-dead", Dead: true}}, "ready_timeout: 100ms\non_error: continue")
	out, err := h.Handle(context.Background(), decode(t, w.Launch("i-dead", "tok", time.Minute)))
	if err != nil || out.Decision != Continue || out.ExitCode != 3 {
		t.Fatalf("outcome %+v, %v: want CONTINUE per on_error, exit 3", out, err)
	}
}

func TestHandleWaitsForTheInstance(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-slow", Status: 503}}, "heartbeat_interval: 20ms\nready_timeout: 5s")
	go func() {
		time.Sleep(200 * time.Millisecond)
		w.Fleet.Instance("i-slow").Set(func(s *testkit.Spec) { s.Status = 0 })
	}()
	out, err := h.Handle(context.Background(), decode(t, w.Launch("i-slow", "tok", time.Minute)))
	if err != nil || out.Decision != Continue || out.Heartbeats == 0 {
		t.Fatalf("outcome %+v, %v: want CONTINUE once it answers, with heartbeats while waiting", out, err)
	}
}

// An instance that answers, then fails the verification's own request (still booting, or
// slow for a moment), is asked again within hook.ready_timeout: unknown is never abandoned
// while there is time to know.
func TestHandleInstanceFailingOnceDuringVerification(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-flaky", FailRequests: []int{2}}}, "heartbeat_interval: 20ms\nready_timeout: 5s")
	out, err := h.Handle(context.Background(), decode(t, w.Launch("i-flaky", "tok", time.Minute)))
	if err != nil || out.Decision != Continue {
		t.Fatalf("outcome %+v, %v: want CONTINUE once it answers the whole verification", out, err)
	}
	if n := w.Fleet.Instance("i-flaky").Requests.Load(); n < 4 {
		t.Errorf("%d requests: want the ready check, the failed verification, and both again", n)
	}
}

func TestHandleAlreadyComplete(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-1"}}, "")
	ev := decode(t, w.Launch("i-1", "tok", time.Minute))
	if _, err := h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	out, err := h.Handle(context.Background(), ev)
	if err != nil || out.Completed || !out.AlreadyDone {
		t.Fatalf("second delivery: %+v, %v: want already done, not completed again", out, err)
	}
	if act, _ := w.AWS.AutoScaling().Action("tok"); act.Completions != 1 {
		t.Fatalf("%d completions, want 1", act.Completions)
	}
}

func TestHandleActionTimesOutUnderneath(t *testing.T) {
	// The action's heartbeat timeout is shorter than the heartbeat interval: Auto Scaling
	// times it out, the next heartbeat learns so, and the handler stops without completing.
	w, h := world(t, []testkit.Spec{{ID: "i-dead", Dead: true}}, "heartbeat_interval: 150ms\nready_timeout: 10s")
	start := time.Now()
	out, err := h.Handle(context.Background(), decode(t, w.Launch("i-dead", "tok", 50*time.Millisecond)))
	if err != nil || !out.AlreadyDone || out.Completed || out.ExitCode != 3 {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s: the handler must stop when the action is gone, not wait out ready_timeout", d)
	}
	if n := len(w.AWS.Calls("CompleteLifecycleAction")); n != 0 {
		t.Fatalf("%d completions sent for an action that is gone", n)
	}
}

func TestHandleAutoScalingFaults(t *testing.T) {
	t.Run("throttled, then accepted", func(t *testing.T) {
		w, h := world(t, []testkit.Spec{{ID: "i-1"}}, "")
		w.AWS.Fail("CompleteLifecycleAction", "Throttling", "Rate exceeded", 5)
		out, err := h.Handle(context.Background(), decode(t, w.Launch("i-1", "tok", time.Minute)))
		if err != nil || !out.Completed || out.Decision != Continue {
			t.Fatalf("outcome %+v, %v", out, err)
		}
		if n := len(w.AWS.Calls("CompleteLifecycleAction")); n != 6 {
			t.Fatalf("%d CompleteLifecycleAction calls, want 6 (5 throttled)", n)
		}
	})
	t.Run("denied", func(t *testing.T) {
		w, h := world(t, []testkit.Spec{{ID: "i-1"}}, "")
		w.AWS.Fail("CompleteLifecycleAction", "AccessDenied", "User is not authorized to perform: autoscaling:CompleteLifecycleAction", 1)
		out, err := h.Handle(context.Background(), decode(t, w.Launch("i-1", "tok", time.Minute)))
		if err == nil || out.Completed || out.ExitCode != 3 || !strings.Contains(err.Error(), "autoscaling:CompleteLifecycleAction") {
			t.Fatalf("outcome %+v, %v: want an error naming the IAM action", out, err)
		}
	})
	t.Run("heartbeats fail, verification goes on", func(t *testing.T) {
		w, h := world(t, []testkit.Spec{{ID: "i-1", Status: 503}}, "heartbeat_interval: 10ms")
		w.AWS.Fail("RecordLifecycleActionHeartbeat", "InternalFailure", "oops", 3)
		go func() {
			time.Sleep(150 * time.Millisecond)
			w.Fleet.Instance("i-1").Set(func(s *testkit.Spec) { s.Status = 0 })
		}()
		out, err := h.Handle(context.Background(), decode(t, w.Launch("i-1", "tok", time.Minute)))
		if err != nil || out.Decision != Continue {
			t.Fatalf("outcome %+v, %v", out, err)
		}
	})
	t.Run("describing the instance fails", func(t *testing.T) {
		w, h := world(t, []testkit.Spec{{ID: "i-1"}}, "")
		w.AWS.Fail("DescribeInstances", "UnauthorizedOperation", "You are not authorized to perform this operation.", 1)
		out, err := h.Handle(context.Background(), decode(t, w.Launch("i-1", "tok", time.Minute)))
		if err != nil || out.Decision != Abandon || out.ExitCode != 3 || !strings.Contains(out.Report.Error, "ec2:DescribeInstances") {
			t.Fatalf("outcome %+v, %v", out, err)
		}
	})
}

func TestHandleExpectFleet(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-a"}, {ID: "i-b"}, {ID: "i-c"}, {ID: "i-new"}, {ID: "i-odd"}}, "expect: fleet")
	w.AWS.AutoScaling().SetGroup(w.Group, awsfake.GroupInstance{ID: "i-a", State: "InService"}, awsfake.GroupInstance{ID: "i-b", State: "InService"},
		awsfake.GroupInstance{ID: "i-c", State: "InService"}, awsfake.GroupInstance{ID: "i-new", State: "Pending:Wait"}, awsfake.GroupInstance{ID: "i-odd", State: "Pending:Wait"})
	w.Fleet.Instance("i-odd").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	for id, want := range map[string]Decision{"i-new": Continue, "i-odd": Abandon} {
		out, err := h.Handle(context.Background(), decode(t, w.Launch(id, "tok-"+id, time.Minute)))
		if err != nil || out.Decision != want {
			t.Fatalf("%s: outcome %+v, %v: want %s", id, out, err, want)
		}
		if out.Report.Release.Source != model.SourceConsensus || out.Report.Summary.Instances != 4 {
			t.Fatalf("%s: report %+v: want the consensus of 3 InService instances and the launching one", id, out.Report.Summary)
		}
	}
}

func hasKind(r *model.Report, k model.Kind) bool {
	for _, f := range r.Findings {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func TestHandleTagMovedAbandonsOnlyTheRepushedImage(t *testing.T) {
	w, h := world(t, []testkit.Spec{{ID: "i-recorded"}, {ID: "i-repushed"}}, "")
	if _, _, err := testkit.Publish(context.Background(), w.Image, w.Bad); err != nil { // the tag is re-pushed after the record
		t.Fatal(err)
	}
	w.Fleet.Instance("i-repushed").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	for id, want := range map[string]Decision{"i-recorded": Continue, "i-repushed": Abandon} {
		out, err := h.Handle(context.Background(), decode(t, w.Launch(id, "tok-"+id, time.Minute)))
		if err != nil || out.Decision != want || !hasKind(out.Report, model.KindTagMoved) {
			t.Fatalf("%s: %+v, %v: want %s with tag-moved reported", id, out, err, want)
		}
	}
}
