package probe

import (
	"context"
	"strings"
	"sync"

	"github.com/polygraph-dev/polygraph/model"
)

// Answers remembers the CDN's answers during one run, across checkers and checks: a check
// made ahead, while the fleet is still probed (each build's assets as its first instance
// answers), leaves its answers for the check at the end, which asks only what is new. An
// answer is kept only when it came in full: a request cut short because its check ended is
// asked again. It is safe for concurrent use.
type Answers struct {
	mu sync.Mutex
	// oks holds the status of each answer that found the asset, which is nearly all of
	// them: a fleet of many builds has tens of thousands of assets, and a whole OriginCheck
	// per answer would be as much memory again as the check itself holds.
	oks   map[headKey]int16
	heads map[headKey]model.OriginCheck // the other answers, whole
	gets  map[answerKey]bytesAnswer
}

// headKey is one question about an asset on one origin (slot 0 the primary).
type headKey struct {
	ref  string
	slot int32
}

// answerKey is one GET of an asset's bytes from the primary origin, checked against hashes.
type answerKey struct {
	ref         string
	integrities string
}

// bytesAnswer is what verifyBytes gave.
type bytesAnswer struct {
	oc      model.OriginCheck
	ics     []model.IntegrityCheck
	checked bool
}

// NewAnswers returns an empty Answers.
func NewAnswers() *Answers {
	return &Answers{oks: map[headKey]int16{}, heads: map[headKey]model.OriginCheck{}, gets: map[answerKey]bytesAnswer{}}
}

// stopped reports whether c is the check ahead and was told to ask nothing new (WithAhead); a
// question it leaves is answered by nothing, which its caller discards.
func (c *CDN) stopped() bool {
	if c.o.ahead == nil {
		return false
	}
	select {
	case <-c.o.ahead:
		return true
	default:
		return false
	}
}

// head is c.head(ctx, h, u) for asset ref on origin slot, answered from c's Answers when they
// hold it.
func (c *CDN) headOnce(ctx context.Context, h *cdnHost, ref string, slot int32, u string) model.OriginCheck {
	a := c.o.answers
	if a == nil {
		return c.head(ctx, h, u)
	}
	k := headKey{ref: ref, slot: slot}
	a.mu.Lock()
	status, found := a.oks[k]
	oc, ok := a.heads[k]
	a.mu.Unlock()
	switch {
	case found:
		return model.OriginCheck{Status: int(status), State: model.AssetOK} // as head gives it
	case ok || c.stopped():
		return oc
	}
	oc = c.head(ctx, h, u)
	if ctx.Err() == nil {
		a.mu.Lock()
		if oc.State == model.AssetOK && oc.URL == "" && oc.Error == "" && oc.Status == int(int16(oc.Status)) {
			a.oks[k] = int16(oc.Status)
		} else {
			a.heads[k] = oc
		}
		a.mu.Unlock()
	}
	return oc
}

// verifyBytesOnce is c.verifyBytes for asset ref, answered from c's Answers when they hold
// the same question (the same hashes, in the same order).
func (c *CDN) verifyBytesOnce(ctx context.Context, h *cdnHost, ref, u string, integrities []string) (model.OriginCheck, []model.IntegrityCheck, bool) {
	a := c.o.answers
	if a == nil {
		return c.verifyBytes(ctx, h, u, integrities)
	}
	if c.o.ahead != nil {
		// Bytes are checked against every hash any manifest expects of them in one GET, and
		// only the check at the end knows them all.
		return model.OriginCheck{}, nil, false
	}
	k := answerKey{ref: ref, integrities: strings.Join(integrities, "\n")}
	a.mu.Lock()
	got, ok := a.gets[k]
	a.mu.Unlock()
	if ok || c.stopped() {
		return got.oc, got.ics, got.checked
	}
	oc, ics, checked := c.verifyBytes(ctx, h, u, integrities)
	if ctx.Err() == nil {
		a.mu.Lock()
		a.gets[k] = bytesAnswer{oc, ics, checked}
		a.mu.Unlock()
	}
	return oc, ics, checked
}
