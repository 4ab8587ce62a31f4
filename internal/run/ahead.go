package run

import (
	"context"
	"log/slog"
	"sync"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// aheadConcurrency bounds the connections per CDN host of the check made ahead: it runs beside
// the probe's connections, and a few are enough to keep ahead of the fleet's builds.
const aheadConcurrency = 16

// cdnAhead checks each build's assets on the CDN while the rest of the fleet is still probed:
// the first instance of every build hands its assets over, and they are checked at a
// concurrency of their own. The answers go into an Answers the check at the end reads, so
// that check asks only what is new (builds found late) and reports exactly what it would have
// by asking everything itself. Every question is asked once: when stopped, the check ahead
// asks nothing new and finishes what it is waiting for before the check at the end begins,
// so the two never hold more than cdn.concurrency connections to a host between them.
// Verify uses it; Run keeps its stages apart.
type cdnAhead struct {
	checker *probe.CDN
	cancel  context.CancelFunc // cuts short what is in flight (a run that fails)
	halt    chan struct{}      // closed by stop: ask nothing new
	done    chan struct{}      // closed when run returns

	mu     sync.Mutex
	builds map[string]bool
	queue  [][]model.Asset
	wake   chan struct{}

	stopped sync.Once
	sent    int
	outOfFD bool
}

// startCDNAhead starts the check ahead, or returns nil when the config has no CDN or the file
// descriptors left cannot hold its connections beside the probe's.
func startCDNAhead(ctx context.Context, cfg *config.Config, o Options, answers *probe.Answers) (*cdnAhead, error) {
	if len(cfg.CDN.BaseURLs) == 0 {
		return nil, nil
	}
	n := min(aheadConcurrency, cfg.CDN.Concurrency)
	if free := fdsFree(); free >= 0 && cfg.Probe.Concurrency+n*cdnHosts(cfg) > free-fdReserve {
		return nil, nil
	}
	halt := make(chan struct{})
	// The check at the end logs what it skips; this one would only say it twice.
	checker, err := newChecker(cfg, o, n, probe.WithAnswers(answers), probe.WithAhead(halt), probe.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &cdnAhead{checker: checker, cancel: cancel, halt: halt, done: make(chan struct{}), builds: map[string]bool{}, wake: make(chan struct{}, 1)}
	go a.run(ctx)
	return a, nil
}

// seen is the probe's callback: the assets of a build not seen before are queued.
func (a *cdnAhead) seen(obs model.Observation) {
	if len(obs.Assets) == 0 {
		return
	}
	key := obs.ManifestSHA256 + obs.AssetsSHA256
	a.mu.Lock()
	fresh := !a.builds[key]
	if fresh {
		a.builds[key] = true
		a.queue = append(a.queue, obs.Assets)
	}
	a.mu.Unlock()
	if fresh {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// run checks the queued builds one after another until stopped.
func (a *cdnAhead) run(ctx context.Context) {
	defer close(a.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.halt:
			return
		case <-a.wake:
		}
		for {
			a.mu.Lock()
			if len(a.queue) == 0 {
				a.mu.Unlock()
				break
			}
			assets := a.queue[0]
			a.queue = a.queue[1:]
			a.mu.Unlock()
			a.checker.Check(ctx, assets)
		}
	}
}

// stop ends the check ahead: it asks nothing new, finishes what it is waiting for, and
// returns how many requests it sent and whether it ran out of file descriptors. A nil
// cdnAhead did nothing; stopping again returns the same.
func (a *cdnAhead) stop() (requests int, outOfFiles bool) {
	if a == nil {
		return 0, false
	}
	a.stopped.Do(func() {
		close(a.halt)
		<-a.done
		a.cancel()
		a.checker.Close()
		a.sent, a.outOfFD = a.checker.Requests(), a.checker.OutOfFiles()
	})
	return a.sent, a.outOfFD
}

// abandon ends the check ahead of a run that failed: what is in flight is cut short.
func (a *cdnAhead) abandon() {
	if a != nil {
		a.cancel()
		a.stop()
	}
}
