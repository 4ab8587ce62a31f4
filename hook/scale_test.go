package hook

import (
	"fmt"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

func cdnHits(w *testkit.LaunchWorld) int {
	n := 0
	for _, b := range []*testkit.Build{w.Good, w.Bad} {
		for _, a := range b.Assets {
			n += w.CDN.Hits(a)
		}
	}
	return n
}

// TestServeScale queues 200 launches at once (one in ten a re-pushed build, each delivered
// twice as SQS may) and serves them: every action is completed exactly once, with the right
// result. `go test -run Scale -v ./hook` prints throughput and API calls per launch
// (docs/benchmark.md).
func TestServeScale(t *testing.T) {
	if testing.Short() {
		t.Skip("200 launches")
	}
	const n = 200
	specs := make([]testkit.Spec, n)
	for i := range specs {
		specs[i].ID = fmt.Sprintf("i-%04d", i)
	}
	for _, conc := range []int{4, 16} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			reg := &regtest.Counter{Base: testkit.LoopbackTransport()}
			ro := fastRun()
			ro.Registry = []registry.Option{registry.WithTransport(reg), registry.WithCacheDir("")}
			w, h := world(t, specs, "heartbeat_interval: 10s", func(s *setup) { s.run = ro })
			fq := w.AWS.SQS()
			url := fq.CreateQueue("launches", 30*time.Second)
			for i, s := range specs {
				if i%10 == 0 {
					w.Fleet.Instance(s.ID).Set(func(s *testkit.Spec) { s.Build = w.Bad })
				}
				body := w.Launch(s.ID, "tok-"+s.ID, time.Hour)
				fq.Send(url, body)
				if i%20 == 0 {
					fq.Send(url, body) // a duplicate delivery
				}
			}
			total := n + n/20
			w.AWS.Reset()
			start := time.Now()
			res := serveUntil(t, h, sqsClient(t), ServeOptions{Queue: url, Concurrency: conc, DrainTimeout: 10 * time.Second, WaitSeconds: 1},
				func() bool { return fq.Stats(url).Deleted == total })
			took := time.Since(start)
			if st := fq.Stats(url); st.Deleted != total || res.Left != 0 {
				t.Fatalf("queue %+v, result %+v", st, res)
			}
			for i, s := range specs {
				want := "CONTINUE"
				if i%10 == 0 {
					want = "ABANDON"
				}
				if act, _ := w.AWS.AutoScaling().Action("tok-" + s.ID); act.Result != want || act.Completions != 1 {
					t.Fatalf("%s: %+v, want exactly one %s", s.ID, act, want)
				}
			}
			calls := map[string]int{}
			for _, c := range w.AWS.Calls("") {
				calls[c.Action]++
			}
			t.Logf("concurrency %d: %d launches (+%d duplicates) in %s: %.1f launches/s; calls %v; %.2f AWS calls and %.2f registry requests per launch; %d CDN requests",
				conc, n, total-n, took.Round(time.Millisecond), float64(n)/took.Seconds(), calls, float64(len(w.AWS.Calls("")))/n,
				float64(reg.Stats().Requests)/n, cdnHits(w))
		})
	}
}
