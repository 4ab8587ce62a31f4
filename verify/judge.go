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
}

// Judge compares expected and observed and writes the report. It is pure: the same input
// gives the same report.
func Judge(in Input) *model.Report {
	j := &judge{in: in, rel: model.Release{Source: model.SourceConsensus}, status: map[string]string{}}
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
	insts    []model.Instance
	grps     []model.Group
	status   map[string]string // instance ID -> status
	keyOf    map[string]string // instance ID -> content key
	running  map[string]runningEvidence
}

func (j *judge) add(f model.Finding) { j.findings = append(j.findings, f) }

func (j *judge) instances() {
	j.keyOf = map[string]string{}
	for _, o := range j.in.Observations {
		t := o.Target
		inst := model.Instance{
			ID: t.ID, Address: t.Address, Labels: t.Labels,
			ReportedVersion: o.ReportedVersion, ReportedDigest: o.ReportedDigest, RunningDigest: j.running[t.ID].shown,
			ManifestSHA256: o.ManifestSHA256, AssetsSHA256: o.AssetsSHA256, Assets: len(o.Assets),
			Format: o.ManifestFormat, TLS: o.TLS, Status: model.StatusOK,
		}
		if !t.LaunchedAt.IsZero() {
			at := t.LaunchedAt.UTC()
			inst.LaunchedAt = &at
		}
		switch {
		case !o.Reached && o.TLS != nil && o.TLS.VerifyError != "":
			// It answered, with a certificate that fails verification: certs() raises
			// cert-invalid; its content was never fetched, so it is neither unreachable nor
			// compared.
			inst.Status, inst.Error = model.StatusError, o.Error
		case !o.Reached:
			inst.Status, inst.Error = model.StatusUnreachable, o.Error
			j.add(model.Finding{Kind: model.KindUnreachable, Severity: model.SeverityError, Instance: t.ID,
				Message: fmt.Sprintf("%s (%s) gave no usable answer: %s", t.ID, t.Address, o.Error)})
		case o.ManifestInvalid != "":
			inst.Status, inst.Error = model.StatusError, o.ManifestInvalid
			j.add(model.Finding{Kind: model.KindManifestInvalid, Severity: model.SeverityError, Instance: t.ID,
				Message: fmt.Sprintf("%s serves no usable manifest: %s", t.ID, o.ManifestInvalid)})
		default:
			j.keyOf[t.ID] = j.in.Compare(o.ManifestSHA256, o.AssetsSHA256)
			var problems []string
			if o.VersionError != "" {
				problems = append(problems, "version claim: "+o.VersionError)
			}
			if o.DigestError != "" {
				problems = append(problems, "digest claim: "+o.DigestError)
			}
			inst.Error = strings.Join(problems, "; ")
		}
		j.status[t.ID] = inst.Status
		j.insts = append(j.insts, inst)
	}
}

// groups groups answering instances by content and decides the expected content.
func (j *judge) groups() {
	byKey := map[string]*model.Group{}
	var order []*model.Group
	for _, o := range j.in.Observations {
		key, ok := j.keyOf[o.Target.ID]
		if !ok {
			continue
		}
		g := byKey[key]
		if g == nil {
			g = &model.Group{ManifestSHA256: o.ManifestSHA256, AssetsSHA256: o.AssetsSHA256, RunningDigests: []string{}}
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
	idx := map[string]int{}
	for n, g := range order {
		g.ID = n + 1
		key := j.in.Compare(g.ManifestSHA256, g.AssetsSHA256)
		g.MatchesRelease = j.expected != "" && key == j.expected
		for _, id := range g.Instances {
			idx[id] = g.ID
		}
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
		for _, id := range g.Instances {
			j.status[id] = model.StatusMismatch
		}
	}
	for i := range j.insts {
		j.insts[i].Group = idx[j.insts[i].ID]
	}
	if consensus {
		return
	}
	for _, o := range j.in.Observations {
		key, ok := j.keyOf[o.Target.ID]
		if !ok || key == j.expected {
			continue
		}
		j.status[o.Target.ID] = model.StatusMismatch
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
	for _, o := range j.in.Observations {
		if o.Target.ID == id {
			return len(o.Assets)
		}
	}
	return 0
}

// claims checks digests and looks for claims the evidence contradicts.
func (j *judge) claims() {
	digestsKnown := j.rel.Digest != "" || len(j.rel.Digests) > 0
	want := j.rel.Digest
	for _, o := range j.in.Observations {
		id := o.Target.ID
		run, hasRun := j.running[id]
		switch {
		case hasRun && run.unknown != "":
			j.add(model.Finding{Kind: model.KindDigestUnchecked, Severity: model.SeverityWarning, Instance: id,
				Message:  fmt.Sprintf("%s: %s could not tell which image it runs (%s): unknown, not wrong", id, run.source, run.unknown),
				Evidence: map[string]string{"source": run.source}})
		case hasRun && digestsKnown && run.other:
			// Evidence from the runtime stands whether or not the instance answered over HTTP.
			j.status[id] = model.StatusMismatch
			j.add(model.Finding{Kind: model.KindDigestMismatch, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s runs %s (per %s), which is not in the release digest set of %s", id, short(run.shown), run.source, j.relName()),
				Evidence: map[string]string{"want": want, "got": run.shown, "digest": "running", "source": run.source}})
		}
		if !o.Reached {
			continue
		}
		if digestsKnown && o.ReportedDigest != "" && !j.rel.HasDigest(o.ReportedDigest) {
			j.status[id] = model.StatusMismatch
			j.add(model.Finding{Kind: model.KindDigestMismatch, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s reported digest %s is not in the release digest set of %s", id, short(o.ReportedDigest), j.relName()),
				Evidence: map[string]string{"want": want, "got": o.ReportedDigest, "digest": "reported"}})
		}
		key, valid := j.keyOf[id]
		contentKnown := valid && j.expected != ""
		runsOther := digestsKnown && run.other
		servesOther := (contentKnown && key != j.expected) || runsOther
		servesRelease := contentKnown && key == j.expected && !runsOther

		var claimsRelease, claimsOther []string
		if j.rel.Version != "" && o.ReportedVersion != "" {
			if o.ReportedVersion == j.rel.Version {
				claimsRelease = append(claimsRelease, "version "+o.ReportedVersion)
			} else {
				claimsOther = append(claimsOther, "version "+o.ReportedVersion)
			}
		}
		if digestsKnown && o.ReportedDigest != "" {
			if j.rel.HasDigest(o.ReportedDigest) {
				claimsRelease = append(claimsRelease, "digest "+short(o.ReportedDigest))
			} else {
				claimsOther = append(claimsOther, "digest "+short(o.ReportedDigest))
			}
		}
		switch {
		case len(claimsRelease) > 0 && servesOther:
			what := "content"
			got := key
			if runsOther {
				what, got = "image", run.shown
			}
			j.status[id] = model.StatusMismatch
			j.add(model.Finding{Kind: model.KindVersionLie, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s claims %s (the release) but serves other %s", id, strings.Join(claimsRelease, " and "), what),
				Evidence: map[string]string{"claim": strings.Join(claimsRelease, ", "), "want": j.expected, "got": got}})
		case len(claimsOther) > 0 && servesRelease:
			j.status[id] = model.StatusMismatch
			j.add(model.Finding{Kind: model.KindVersionLie, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s claims %s but serves the release %s", id, strings.Join(claimsOther, " and "), j.relName()),
				Evidence: map[string]string{"claim": strings.Join(claimsOther, ", "), "want": j.rel.Version, "got": key}})
		}
	}
}

func (j *judge) relName() string {
	switch {
	case j.rel.Version != "":
		return j.rel.Version
	case j.rel.Image != "":
		return j.rel.Image
	}
	return "the release"
}

// assets turns CDN answers into findings naming every instance that references the asset.
func (j *judge) assets() {
	cdn := j.in.CDN
	if cdn == nil {
		return
	}
	// Instances share asset lists per build: walk each distinct list once.
	type list struct {
		assets []model.Asset
		ids    []string
	}
	lists := map[string]*list{}
	var order []string
	for _, o := range j.in.Observations {
		if _, ok := j.keyOf[o.Target.ID]; !ok || len(o.Assets) == 0 {
			continue
		}
		l := lists[o.AssetsSHA256]
		if l == nil {
			l = &list{assets: o.Assets}
			lists[o.AssetsSHA256] = l
			order = append(order, o.AssetsSHA256)
		}
		l.ids = append(l.ids, o.Target.ID)
	}
	refIDs := map[string][]string{}
	for _, h := range order {
		l := lists[h]
		for _, a := range l.assets {
			ac := cdn.Checks[a.Ref]
			if ac == nil || !ac.Problem() {
				continue
			}
			refIDs[a.Ref] = append(refIDs[a.Ref], l.ids...)
		}
	}
	refs := make([]string, 0, len(refIDs))
	for r := range refIDs {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		ac, ids := cdn.Checks[ref], uniqueSorted(refIDs[ref])
		p := ac.Primary
		switch ac.State {
		case model.AssetMissing:
			for _, id := range ids {
				j.status[id] = model.StatusMismatch
			}
			j.add(model.Finding{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s answers %d: referenced by %d instance(s) (%s)", p.URL, p.Status, len(ids), list3(ids))})
		case model.AssetUnchecked:
			j.add(model.Finding{Kind: model.KindAssetUnchecked, Severity: model.SeverityWarning, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s could not be checked (%s): unknown, not missing", p.URL, p.Error)})
		case model.AssetDegraded:
			j.add(model.Finding{Kind: model.KindAssetDegraded, Severity: model.SeverityWarning, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s is failing on the primary (%s) but a replica serves it: degraded, not missing", p.URL, orStatus(p))})
		}
		if ac.State == model.AssetOK || ac.State == model.AssetMissing {
			for _, r := range ac.Replicas {
				if r.State == model.AssetMissing && ac.State == model.AssetOK {
					j.add(model.Finding{Kind: model.KindAssetReplicaMissing, Severity: model.SeverityWarning, Instances: ids, URL: r.URL, Status: r.Status,
						Message: fmt.Sprintf("%s answers %d on a replica origin, while the primary has it", r.URL, r.Status)})
				}
			}
		}
		if ac.IntegrityError != "" {
			for _, id := range ids {
				j.status[id] = model.StatusMismatch
			}
			j.add(model.Finding{Kind: model.KindAssetIntegrity, Severity: model.SeverityError, Instances: ids, URL: p.URL,
				Message:  fmt.Sprintf("%s: the CDN's bytes do not match the manifest's hash: %s", p.URL, ac.IntegrityError),
				Evidence: map[string]string{"want": ac.Integrity}})
		}
		if ac.IntegrityUnchecked != "" {
			j.add(model.Finding{Kind: model.KindAssetUnchecked, Severity: model.SeverityWarning, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s exists, but its bytes could not be checked against the manifest's hash (%s): unknown, not wrong", p.URL, ac.IntegrityUnchecked)})
		}
	}
}

func orStatus(o model.OriginCheck) string {
	if o.Error != "" {
		return o.Error
	}
	return fmt.Sprintf("status %d", o.Status)
}

// certs raises certificate findings from TLS evidence.
func (j *judge) certs() {
	count := map[string]int{}
	for _, o := range j.in.Observations {
		if o.TLS != nil && o.TLS.SHA256 != "" {
			count[o.TLS.SHA256]++
		}
	}
	common, best := "", 0
	for fp, n := range count {
		if n > best || (n == best && fp < common) {
			common, best = fp, n
		}
	}
	for _, o := range j.in.Observations {
		c, id := o.TLS, o.Target.ID
		if c == nil {
			continue
		}
		if c.VerifyError != "" {
			j.add(model.Finding{Kind: model.KindCertInvalid, Severity: model.SeverityError, Instance: id,
				Message: fmt.Sprintf("%s presents a certificate that fails verification: %s", id, c.VerifyError)})
		}
		if left := c.NotAfter.Sub(j.in.Now); j.in.CertExpiryWarning > 0 && left < j.in.CertExpiryWarning {
			msg := fmt.Sprintf("%s's certificate expires %s (in %s)", id, c.NotAfter.Format(time.RFC3339), left.Round(time.Hour))
			if left <= 0 {
				msg = fmt.Sprintf("%s's certificate expired %s", id, c.NotAfter.Format(time.RFC3339))
			}
			j.add(model.Finding{Kind: model.KindCertExpiring, Severity: model.SeverityWarning, Instance: id, Message: msg,
				Evidence: map[string]string{"not_after": c.NotAfter.Format(time.RFC3339)}})
		}
		if len(count) > 1 && c.SHA256 != common {
			j.add(model.Finding{Kind: model.KindCertMismatch, Severity: model.SeverityWarning, Instance: id,
				Message:  fmt.Sprintf("%s presents a different certificate from the one %d other instance(s) present", id, best),
				Evidence: map[string]string{"want": common, "got": c.SHA256}})
		}
		if !c.MatchesHost && c.VerifyError == "" {
			j.add(model.Finding{Kind: model.KindCertInvalid, Severity: model.SeverityError, Instance: id,
				Message: fmt.Sprintf("%s presents a certificate (%s) that does not cover the probed host", id, c.Subject)})
		}
	}
}

func (j *judge) report() *model.Report {
	r := &model.Report{
		Schema: model.ReportSchema, StartedAt: j.in.StartedAt.UTC(), DurationMS: j.in.Duration.Milliseconds(),
		Release: j.rel, Instances: j.insts, Groups: j.grps, Findings: j.findings,
	}
	if r.Instances == nil {
		r.Instances = []model.Instance{}
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
	for i := range r.Instances {
		in := &r.Instances[i]
		in.Status = j.status[in.ID]
		r.Summary.Instances++
		switch in.Status {
		case model.StatusOK:
			r.Summary.OK++
		case model.StatusMismatch:
			r.Summary.Mismatch++
		case model.StatusUnreachable:
			r.Summary.Unreachable++
		default:
			r.Summary.Error++
		}
	}
	r.Summary.Findings = len(r.Findings)
	if c := j.in.CDN; c != nil {
		r.CDN = model.CDNSummary{Checked: c.Checked, Skipped: c.Skipped, Requests: c.Requests}
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
	if n := len(j.in.Observations); n > 0 && j.answered() == 0 {
		r.Verdict = model.VerdictError
		r.Error = fmt.Sprintf("not a single instance answered (%d probed)", n)
	}
	return r
}

// answered counts the instances that answered: with a usable HTTP response, or with a
// certificate that fails verification (evidence of its own, a cert-invalid finding). Whether
// the fleet is probed over http or https makes no difference: a fleet answering only 5xx has
// not answered.
func (j *judge) answered() int {
	n := 0
	for _, o := range j.in.Observations {
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

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func uniqueSorted(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	n := 0
	for i, x := range out {
		if i == 0 || x != out[n-1] {
			out[n] = x
			n++
		}
	}
	return out[:n]
}

// list3 names up to three items and counts the rest.
func list3(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:3], ", "), len(ids)-3)
}

// short abbreviates a digest for messages.
func short(d string) string {
	if i := strings.Index(d, ":"); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
