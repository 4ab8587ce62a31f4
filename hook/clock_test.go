package hook

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
)

// fakeClock ticks only when the test says so; After never fires unless its duration is zero,
// so the ready timeout and poll waits are driven by the test too.
type fakeClock struct {
	mu      sync.Mutex
	ticks   chan time.Time
	after   []chan time.Time
	tickers int
}

func newFakeClock() *fakeClock { return &fakeClock{ticks: make(chan time.Time)} }

func (c *fakeClock) Now() time.Time { return time.Unix(0, 0) }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.after = append(c.after, ch)
	c.mu.Unlock()
	return ch
}

func (c *fakeClock) Ticker(time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	c.tickers++
	c.mu.Unlock()
	return c.ticks, func() {}
}

// fireAll fires every pending After (the ready timeout among them).
func (c *fakeClock) fireAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.after {
		select {
		case ch <- time.Unix(0, 0):
		default:
		}
	}
	c.after = nil
}

func TestHeartbeatFollowsTheClock(t *testing.T) {
	clock := newFakeClock()
	w, h := world(t, []testkit.Spec{{ID: "i-dead", Dead: true}}, "", func(s *setup) {
		s.hook = append(s.hook, WithClock(clock))
		s.launch.After = clock.After
	})
	ev := decode(t, w.Launch("i-dead", "tok", time.Minute))
	done := make(chan Outcome)
	go func() {
		out, _ := h.Handle(context.Background(), ev)
		done <- out
	}()
	// Seven heartbeat intervals pass while the instance stays silent: exactly seven
	// heartbeats, however long the wall clock took.
	for range 7 {
		clock.ticks <- time.Unix(0, 0)
	}
	for deadline := time.Now().Add(5 * time.Second); len(w.AWS.Calls("RecordLifecycleActionHeartbeat")) < 7 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	// Then hook.ready_timeout passes.
	var out Outcome
	for out.Event.Token == "" {
		clock.fireAll()
		select {
		case out = <-done:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if out.Heartbeats != 7 || len(w.AWS.Calls("RecordLifecycleActionHeartbeat")) != 7 || out.Decision != Abandon {
		t.Fatalf("outcome %+v with %d heartbeats recorded: want exactly 7, then on_error's ABANDON", out, len(w.AWS.Calls("RecordLifecycleActionHeartbeat")))
	}
}
