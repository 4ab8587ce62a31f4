package verify

import (
	"fmt"
	"sort"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

func (j *judge) report() *model.Report {
	r := &model.Report{
		Schema: model.ReportSchema, StartedAt: j.in.StartedAt.UTC(), DurationMS: j.in.Duration.Milliseconds(),
		Release: j.rel, Groups: j.grps, Findings: j.findings,
	}
	if j.in.CompactInstances {
		r.SetInstanceList(instanceList{j})
	} else {
		r.Instances = make([]model.Instance, j.count())
		i := -1
		for o := range j.observations() {
			i++
			r.Instances[i] = j.instance(i, o)
		}
	}
	if r.Groups == nil {
		r.Groups = []model.Group{}
	}
	if r.Findings == nil {
		r.Findings = []model.Finding{}
	}
	sort.SliceStable(r.Findings, func(a, b int) bool {
		fa, fb := r.Findings[a], r.Findings[b]
		if fa.Severity.Rank() != fb.Severity.Rank() {
			return fa.Severity.Rank() > fb.Severity.Rank()
		}
		if fa.Kind != fb.Kind {
			return kindOrder(fa.Kind) < kindOrder(fb.Kind)
		}
		if fa.Instance != fb.Instance {
			return fa.Instance < fb.Instance
		}
		return fa.URL < fb.URL
	})
	for _, st := range j.status {
		r.Summary.Instances++
		switch st {
		case statusOK:
			r.Summary.OK++
		case statusMismatch:
			r.Summary.Mismatch++
		case statusUnreachable:
			r.Summary.Unreachable++
		default:
			r.Summary.Error++
		}
	}
	r.Summary.Findings = len(r.Findings)
	if c := j.in.CDN; c != nil {
		r.CDN = model.CDNSummary{Checked: c.Checked, Skipped: c.Skipped, Requests: c.Requests, Unchecked: c.Unchecked, IntegrityChecked: c.IntegrityChecked}
		for _, ac := range c.Checks {
			if ac.State == model.AssetMissing {
				r.CDN.Missing++
			}
		}
	}
	switch r.Worst() {
	case model.SeverityError:
		r.Verdict = model.VerdictFail
	case model.SeverityWarning:
		r.Verdict = model.VerdictWarn
	default:
		r.Verdict = model.VerdictPass
	}
	if n := j.count(); n > 0 && j.answered() == 0 {
		r.Verdict = model.VerdictError
		r.Error = fmt.Sprintf("not a single instance answered (%d probed)", n)
	} else if c := j.in.CDN; c != nil && c.PrimaryDown != "" {
		// Error findings stand (verdict fail, exit 1 at the default threshold); otherwise the
		// run could not verify the CDN: verdict error, exit 3, never a pass.
		r.Error = c.PrimaryDown
		if r.Verdict != model.VerdictFail {
			r.Verdict = model.VerdictError
		}
	}
	return r
}

// answered counts the instances that answered: with a usable HTTP response, or with a
// certificate that fails verification (evidence of its own, a cert-invalid finding). Whether
// the fleet is probed over http or https makes no difference: a fleet answering only 5xx has
// not answered.
func (j *judge) answered() int {
	n := 0
	for o := range j.observations() {
		if o.Reached || (o.TLS != nil && o.TLS.VerifyError != "") {
			n++
		}
	}
	return n
}

// Unverified is the report of a run that could not verify at all (verdict "error", exit 3):
// what is known of the release, and why. It is written like any report, so a report from an
// earlier run never stands in for this one.
func Unverified(rel *model.Release, started time.Time, d time.Duration, why string) *model.Report {
	r := &model.Report{
		Schema: model.ReportSchema, Verdict: model.VerdictError, Error: why,
		StartedAt: started.UTC(), DurationMS: d.Milliseconds(),
		Release:   model.Release{Source: model.SourceConsensus},
		Instances: []model.Instance{}, Groups: []model.Group{}, Findings: []model.Finding{},
	}
	if rel != nil {
		r.Release = *rel
	}
	return r
}

var kinds = []model.Kind{
	model.KindTagMoved, model.KindVersionLie, model.KindDigestMismatch, model.KindContentMismatch, model.KindContentDrift,
	model.KindAssetMissing, model.KindAssetIntegrity, model.KindManifestInvalid, model.KindUnreachable, model.KindCertInvalid,
	model.KindAssetUnchecked, model.KindDigestUnchecked, model.KindAssetReplicaMissing, model.KindAssetDegraded, model.KindCertExpiring, model.KindCertMismatch,
}

func kindOrder(k model.Kind) int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return len(kinds)
}
