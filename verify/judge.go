package verify

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// Compare returns the content key of a manifest: two manifests with the same key are the same
// content.
type Compare func(manifestSHA256, assetsSHA256 string) string

// CompareAssets compares the canonical asset sets: builds that reference the same assets are
// equal even when their manifest bytes differ (timestamps, key order).
func CompareAssets(_, assetsSHA256 string) string { return assetsSHA256 }

// CompareBytes compares the raw manifest bytes.
func CompareBytes(manifestSHA256, _ string) string { return manifestSHA256 }

// CompareMode returns the Compare named in the config ("assets" or "bytes").
func CompareMode(name string) (Compare, error) {
	switch name {
	case "", "assets":
		return CompareAssets, nil
	case "bytes":
		return CompareBytes, nil
	}
	return nil, fmt.Errorf("unknown compare mode %q (assets or bytes)", name)
}

// Input is everything the judge weighs.
type Input struct {
	// Release is what should run. With no manifest hash (or nil), the fleet's consensus is the
	// expected content.
	Release *model.Release
	// Observations has one entry per instance.
	Observations []model.Observation
	// List, when set, gives the observations instead of Observations, one at a time: a large
	// fleet's observations stay compact (probe.Observations) while the judge reads them.
	List ObservationList
	// Running is the evidence of trusted digest sources, at most one per target ID (nil when
	// none is configured). It travels apart from the observations, which hold only what the
	// instances said.
	Running []model.RunningDigest
	// CDN is the outcome of the asset checks (nil when none ran).
	CDN *model.CDNResult
	// Compare decides when two manifests are the same content; the default is CompareAssets.
	Compare Compare
	// Now is the time certificate expiry is measured from; the default is StartedAt.
	Now               time.Time
	CertExpiryWarning time.Duration
	StartedAt         time.Time
	Duration          time.Duration
	// Extra findings raised before judging (tag-moved from the registry, say).
	Extra []model.Finding
	// CompactInstances leaves the report's instances to be built when they are read
	// (model.Report.SetInstanceList) instead of held in Report.Instances: for a caller that
	// renders the report and is done with it.
	CompactInstances bool
}

// ObservationList gives observations one at a time, in the targets' order.
type ObservationList interface {
	Len() int
	At(i int) model.Observation
}

// observations yields every observation, from List when set, else from Observations.
func (j *judge) observations() func(yield func(model.Observation) bool) {
	return func(yield func(model.Observation) bool) {
		if l := j.in.List; l != nil {
			for i := range l.Len() {
				if !yield(l.At(i)) {
					return
				}
			}
			return
		}
		for _, o := range j.in.Observations {
			if !yield(o) {
				return
			}
		}
	}
}

// observation returns the i-th observation.
func (j *judge) observation(i int) model.Observation {
	if l := j.in.List; l != nil {
		return l.At(i)
	}
	return j.in.Observations[i]
}

// count is the number of observations.
func (j *judge) count() int {
	if j.in.List != nil {
		return j.in.List.Len()
	}
	return len(j.in.Observations)
}

// Judge compares expected and observed and writes the report. It is pure: the same input
// gives the same report.
func Judge(in Input) *model.Report {
	// Per-instance state is 5 bytes, sized once: a status and the content key's number. The
	// report's instances are built from it and the observation when they are read.
	j := &judge{in: in, rel: model.Release{Source: model.SourceConsensus}}
	n := j.count()
	j.status, j.keyIdx = make([]status, 0, n), make([]int32, 0, n)
	j.keyNum = map[string]int32{}
	if in.Release != nil {
		j.rel = *in.Release
	}
	if j.in.Compare == nil {
		j.in.Compare = CompareAssets
	}
	if j.in.Now.IsZero() {
		j.in.Now = in.StartedAt
	}
	j.findings = append(j.findings, in.Extra...)
	j.running = map[string]runningEvidence{}
	for _, r := range in.Running {
		j.running[r.TargetID] = j.weigh(r)
	}
	j.instances()
	j.groups()
	j.claims()
	j.assets()
	j.certs()
	return j.report()
}

type judge struct {
	in       Input
	rel      model.Release
	expected string // expected content key ("" unknown)
	findings []model.Finding
	// status[i] is the i-th instance's status, which the checks below set.
	status []status
	// keyIdx[i] numbers the content key of the i-th instance in keys, -1 when it has none (it
	// gave no usable manifest); distinct keys are few (one per build), instances many.
	keyIdx []int32
	keys   []string
	keyNum map[string]int32
	// keyGroup[k] is the ID of the group of the instances with key number k.
	keyGroup []int
	grps     []model.Group
	running  map[string]runningEvidence
}

// status is an instance's status, compactly.
type status uint8

const (
	statusOK status = iota
	statusMismatch
	statusUnreachable
	statusError
)

var statusNames = [...]string{statusOK: model.StatusOK, statusMismatch: model.StatusMismatch, statusUnreachable: model.StatusUnreachable, statusError: model.StatusError}

func (j *judge) add(f model.Finding) { j.findings = append(j.findings, f) }

// keyAt returns the content key of the i-th instance, and false when it has none.
func (j *judge) keyAt(i int) (string, bool) {
	if k := j.keyIdx[i]; k >= 0 {
		return j.keys[k], true
	}
	return "", false
}

// setKey records the content key of the instance being added.
func (j *judge) setKey(key string) {
	k, ok := j.keyNum[key]
	if !ok {
		k = int32(len(j.keys))
		j.keys = append(j.keys, key)
		j.keyNum[key] = k
	}
	j.keyIdx[len(j.keyIdx)-1] = k
}

// mismatch marks the instance at position i as mismatched.
func (j *judge) mismatch(i int32) { j.status[i] = statusMismatch }

// first says what an observation alone makes of its instance: its status before any
// comparison, and the error the report shows.
func first(o *model.Observation) (status, string) {
	switch {
	case !o.Reached && o.TLS != nil && o.TLS.VerifyError != "":
		// It answered, with a certificate that fails verification: certs() raises
		// cert-invalid; its content was never fetched, so it is neither unreachable nor
		// compared.
		return statusError, o.Error
	case !o.Reached:
		return statusUnreachable, o.Error
	case o.ManifestInvalid != "":
		return statusError, o.ManifestInvalid
	}
	var problems []string
	if o.VersionError != "" {
		problems = append(problems, "version claim: "+o.VersionError)
	}
	if o.DigestError != "" {
		problems = append(problems, "digest claim: "+o.DigestError)
	}
	return statusOK, strings.Join(problems, "; ")
}

func (j *judge) instances() {
	for o := range j.observations() {
		t := o.Target
		j.keyIdx = append(j.keyIdx, -1)
		st, _ := first(&o)
		j.status = append(j.status, st)
		switch {
		case st == statusUnreachable:
			j.add(model.Finding{Kind: model.KindUnreachable, Severity: model.SeverityError, Instance: t.ID,
				Message: fmt.Sprintf("%s (%s) gave no usable answer: %s", t.ID, t.Address, o.Error)})
		case st == statusError && o.Reached:
			j.add(model.Finding{Kind: model.KindManifestInvalid, Severity: model.SeverityError, Instance: t.ID,
				Message: fmt.Sprintf("%s serves no usable manifest: %s", t.ID, o.ManifestInvalid)})
		case st == statusOK:
			j.setKey(j.in.Compare(o.ManifestSHA256, o.AssetsSHA256))
		}
	}
}

// instance builds the report's i-th instance from its observation and the judge's verdict.
func (j *judge) instance(i int, o model.Observation) model.Instance {
	t := o.Target
	_, why := first(&o)
	inst := model.Instance{
		ID: t.ID, Address: t.Address, Labels: t.Labels,
		ReportedVersion: o.ReportedVersion, ReportedDigest: o.ReportedDigest, RunningDigest: j.running[t.ID].shown,
		ManifestSHA256: o.ManifestSHA256, AssetsSHA256: o.AssetsSHA256, Assets: len(o.Assets),
		Format: o.ManifestFormat, TLS: o.TLS, Status: statusNames[j.status[i]], Error: why,
	}
	if k := j.keyIdx[i]; k >= 0 && int(k) < len(j.keyGroup) {
		inst.Group = j.keyGroup[k]
	}
	if !t.LaunchedAt.IsZero() {
		at := t.LaunchedAt.UTC()
		inst.LaunchedAt = &at
	}
	return inst
}

// instanceList builds the report's instances when they are read.
type instanceList struct{ j *judge }

func (l instanceList) Len() int { return l.j.count() }

func (l instanceList) At(i int) model.Instance { return l.j.instance(i, l.j.observation(i)) }

// groups groups answering instances by content and decides the expected content.
func (j *judge) groups() {
	byKey := map[string]*model.Group{}
	var order []*model.Group
	// Each group's instance list is made at its final size: appending would leave as much
	// again behind as garbage, at the end of the run, where a large fleet's peak is.
	size := make([]int, len(j.keys))
	for _, k := range j.keyIdx {
		if k >= 0 {
			size[k]++
		}
	}
	i := -1
	for o := range j.observations() {
		i++
		key, ok := j.keyAt(i)
		if !ok {
			continue
		}
		g := byKey[key]
		if g == nil {
			g = &model.Group{ManifestSHA256: o.ManifestSHA256, AssetsSHA256: o.AssetsSHA256, RunningDigests: []string{},
				Instances: make([]string, 0, size[j.keyIdx[i]])}
			byKey[key] = g
			order = append(order, g)
		}
		g.Instances = append(g.Instances, o.Target.ID)
		if d := j.running[o.Target.ID].shown; d != "" && !contains(g.RunningDigests, d) {
			g.RunningDigests = append(g.RunningDigests, d)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return len(order[a].Instances) > len(order[b].Instances) })
	j.expected = j.in.Compare(j.rel.ManifestSHA256, j.rel.AssetsSHA256)
	consensus := j.expected == ""
	if consensus && len(order) > 0 {
		top := order[0]
		tie := len(order) > 1 && len(order[1].Instances) == len(top.Instances)
		if !tie {
			j.expected = j.in.Compare(top.ManifestSHA256, top.AssetsSHA256)
			j.rel.ManifestSHA256, j.rel.AssetsSHA256 = top.ManifestSHA256, top.AssetsSHA256
			j.rel.Assets = j.assetCount(top.Instances[0])
			if j.rel.Source == "" {
				j.rel.Source = model.SourceConsensus
			}
		}
		if j.in.Release == nil || j.in.Release.Source == "" {
			j.rel.Source = model.SourceConsensus
		}
	}
	j.keyGroup = make([]int, len(j.keys))
	for n, g := range order {
		g.ID = n + 1
		key := j.in.Compare(g.ManifestSHA256, g.AssetsSHA256)
		g.MatchesRelease = j.expected != "" && key == j.expected
		num := j.keyNum[key]
		j.keyGroup[num] = g.ID
		j.grps = append(j.grps, *g)
		if !consensus || g.MatchesRelease {
			continue
		}
		why := "the majority serve other content"
		if j.expected == "" {
			why = "no majority: instances are split evenly"
		}
		j.add(model.Finding{Kind: model.KindContentDrift, Severity: model.SeverityError, Instances: g.Instances,
			Message:  fmt.Sprintf("%d instance(s) serve content that differs from the rest of the fleet (%s): %s", len(g.Instances), why, strings.Join(g.Instances, ", ")),
			Evidence: map[string]string{"want": j.expected, "got": key}})
		for i, k := range j.keyIdx {
			if k == num {
				j.mismatch(int32(i))
			}
		}
	}
	if consensus {
		return
	}
	i = -1
	for o := range j.observations() {
		i++
		key, ok := j.keyAt(i)
		if !ok || key == j.expected {
			continue
		}
		j.mismatch(int32(i))
		j.add(model.Finding{Kind: model.KindContentMismatch, Severity: model.SeverityError, Instance: o.Target.ID,
			Message:  fmt.Sprintf("%s serves a manifest that differs from the release's (%s compared)", o.Target.ID, j.compareWord()),
			Evidence: map[string]string{"want": j.expected, "got": key}})
	}
}

func (j *judge) compareWord() string {
	if j.in.Compare("m", "a") == "m" {
		return "raw bytes"
	}
	return "asset sets"
}

func (j *judge) assetCount(id string) int {
	for o := range j.observations() {
		if o.Target.ID == id {
			return len(o.Assets)
		}
	}
	return 0
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
