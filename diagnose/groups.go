package diagnose

import (
	"sort"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// Groups builds the diagnosis groups from a verify report: the report's groups (instances with
// the same served content) with the claims, running digests, launch window, labels and
// missing assets of their instances. Instances without a group (unreachable, or answering
// without a usable manifest) are in none. It is pure.
func Groups(rep *model.Report) []model.DiagnosisGroup {
	byID := make(map[string]*model.Instance, len(rep.Instances))
	for i := range rep.Instances {
		byID[rep.Instances[i].ID] = &rep.Instances[i]
	}
	missing := missingByInstance(rep)
	out := make([]model.DiagnosisGroup, 0, len(rep.Groups))
	for _, g := range rep.Groups {
		dg := model.DiagnosisGroup{
			ID: g.ID, Instances: g.Instances, MatchesRelease: g.MatchesRelease,
			ManifestSHA256: g.ManifestSHA256, AssetsSHA256: g.AssetsSHA256,
			ClaimedVersions: []string{}, RunningDigests: append([]string{}, g.RunningDigests...),
			Labels: map[string][]string{}, Attribution: model.Attribution{Tags: []string{}, How: model.HowNone},
		}
		versions, claimed, labels := set{}, set{}, map[string]set{}
		urls := set{}
		for _, id := range g.Instances {
			in := byID[id]
			if in == nil {
				continue
			}
			versions.add(in.ReportedVersion)
			claimed.add(in.ReportedDigest)
			for k, v := range in.Labels {
				if labels[k] == nil {
					labels[k] = set{}
				}
				labels[k].add(v)
			}
			if in.LaunchedAt != nil {
				dg.LaunchedFirst = earliest(dg.LaunchedFirst, *in.LaunchedAt)
				dg.LaunchedLast = latest(dg.LaunchedLast, *in.LaunchedAt)
			}
			for _, u := range missing[id] {
				urls.add(u)
			}
		}
		dg.ClaimedVersions = versions.sorted()
		dg.ClaimedDigests = claimed.sorted()
		for k, s := range labels {
			dg.Labels[k] = s.sorted()
		}
		dg.AssetsMissing = len(urls)
		out = append(out, dg)
	}
	return out
}

// missingByInstance maps each instance to the URLs of the asset-missing findings naming it.
func missingByInstance(rep *model.Report) map[string][]string {
	out := map[string][]string{}
	for _, f := range rep.Findings {
		if f.Kind != model.KindAssetMissing {
			continue
		}
		for _, id := range f.Instances {
			out[id] = append(out[id], f.URL)
		}
		if f.Instance != "" {
			out[f.Instance] = append(out[f.Instance], f.URL)
		}
	}
	return out
}

// MissingURLs returns the URLs of the asset-missing findings that name any of ids, sorted.
func MissingURLs(rep *model.Report, ids []string) []string {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	urls := set{}
	for _, f := range rep.Findings {
		if f.Kind != model.KindAssetMissing {
			continue
		}
		if want[f.Instance] {
			urls.add(f.URL)
			continue
		}
		for _, id := range f.Instances {
			if want[id] {
				urls.add(f.URL)
				break
			}
		}
	}
	return urls.sorted()
}

type set map[string]bool

func (s set) add(v string) {
	if v != "" {
		s[v] = true
	}
}

func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func earliest(cur *time.Time, t time.Time) *time.Time {
	if cur == nil || t.Before(*cur) {
		return &t
	}
	return cur
}

func latest(cur *time.Time, t time.Time) *time.Time {
	if cur == nil || t.After(*cur) {
		return &t
	}
	return cur
}
