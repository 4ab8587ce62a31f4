package verify

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

var (
	buildA = []model.Asset{{Ref: "/static/js/main.a.js"}, {Ref: "/static/css/main.a.css"}}
	buildB = []model.Asset{{Ref: "/static/js/main.b.js"}, {Ref: "/static/css/main.b.css"}}
)

const (
	relDigest    = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	configDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	otherDigest  = "sha256:9999999999999999999999999999999999999999999999999999999999999999"
)

func obs(id, build string, mods ...func(*model.Observation)) model.Observation {
	o := model.Observation{Target: model.Target{ID: id, Address: id + ":8080"}, Reached: true, ReportedVersion: "v2"}
	switch build {
	case "A":
		o.Assets, o.AssetsSHA256, o.ManifestSHA256 = buildA, "assets-A", "bytes-A"
	case "A'": // same assets, different bytes (a timestamp)
		o.Assets, o.AssetsSHA256, o.ManifestSHA256 = buildA, "assets-A", "bytes-A2"
	case "B":
		o.Assets, o.AssetsSHA256, o.ManifestSHA256 = buildB, "assets-B", "bytes-B"
	}
	for _, m := range mods {
		m(&o)
	}
	return o
}

func release() *model.Release {
	return &model.Release{Version: "v2", Digest: relDigest, Digests: []string{relDigest, configDigest}, ManifestSHA256: "bytes-A", AssetsSHA256: "assets-A", Source: model.SourceRecord}
}

func cdn(missing ...string) *model.CDNResult {
	r := &model.CDNResult{Checks: map[string]*model.AssetCheck{}, Checked: len(buildA) + len(buildB)}
	for _, a := range append(append([]model.Asset{}, buildA...), buildB...) {
		st := model.AssetOK
		if slices.Contains(missing, a.Ref) {
			st = model.AssetMissing
		}
		r.Checks[a.Ref] = &model.AssetCheck{Ref: a.Ref, State: st, Primary: model.OriginCheck{URL: "https://cdn" + a.Ref, State: st, Status: map[bool]int{true: 403, false: 200}[st == model.AssetMissing]}}
	}
	return r
}

type want struct {
	kind     model.Kind
	instance string // or "a,b" for Instances
}

func kindsOf(r *model.Report) []want {
	var out []want
	for _, f := range r.Findings {
		who := f.Instance
		if who == "" {
			ids := append([]string(nil), f.Instances...)
			sort.Strings(ids)
			for i, id := range ids {
				if i > 0 {
					who += ","
				}
				who += id
			}
		}
		out = append(out, want{f.Kind, who})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].kind != out[j].kind {
			return out[i].kind < out[j].kind
		}
		return out[i].instance < out[j].instance
	})
	return out
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		want    []want
		verdict string
		status  map[string]string
	}{
		{
			name:    "all serve the release",
			in:      Input{Release: release(), Observations: []model.Observation{obs("a", "A"), obs("b", "A")}, CDN: cdn()},
			verdict: model.VerdictPass,
			status:  map[string]string{"a": "ok", "b": "ok"},
		},
		{
			name: "the incident: claims the release, serves a rebuild whose assets are missing",
			in:   Input{Release: release(), Observations: []model.Observation{obs("a", "A"), obs("b", "B")}, CDN: cdn("/static/js/main.b.js")},
			want: []want{
				{model.KindAssetMissing, "b"}, {model.KindContentMismatch, "b"}, {model.KindVersionLie, "b"},
			},
			verdict: model.VerdictFail,
			status:  map[string]string{"a": "ok", "b": "mismatch"},
		},
		{
			name: "honest old version: mismatch, not a lie",
			in: Input{Release: release(), Observations: []model.Observation{obs("a", "A"), obs("b", "B", func(o *model.Observation) { o.ReportedVersion = "v1" })},
				CDN: cdn()},
			want:    []want{{model.KindContentMismatch, "b"}},
			verdict: model.VerdictFail,
		},
		{
			name: "the reverse lie: claims another version but serves the release",
			in: Input{Release: release(), Observations: []model.Observation{obs("a", "A", func(o *model.Observation) { o.ReportedVersion = "v1" })},
				CDN: cdn()},
			want:    []want{{model.KindVersionLie, "a"}},
			verdict: model.VerdictFail,
		},
		{
			name: "config digest and index digest are the same release",
			in: Input{Release: release(), Observations: []model.Observation{
				obs("a", "A"),
				obs("b", "A", func(o *model.Observation) { o.ReportedDigest = configDigest }),
			}, Running: []model.RunningDigest{
				{TargetID: "a", Source: "ssm", ImageID: configDigest},
				{TargetID: "b", Source: "ssm", RepoDigests: []string{"registry.example.com/store-web@" + relDigest}},
			}},
			verdict: model.VerdictPass,
		},
		{
			name: "running another image while reporting the release digest",
			in: Input{Release: release(), Observations: []model.Observation{
				obs("a", "A", func(o *model.Observation) { o.ReportedDigest = relDigest }),
			}, Running: []model.RunningDigest{{TargetID: "a", Source: "ssm", ImageID: otherDigest}}},
			want:    []want{{model.KindDigestMismatch, "a"}, {model.KindVersionLie, "a"}},
			verdict: model.VerdictFail,
		},
		{
			name: "a runtime that cannot tell is unknown, not wrong",
			in: Input{Release: release(), Observations: []model.Observation{obs("a", "A")},
				Running: []model.RunningDigest{{TargetID: "a", Source: "ssm", Unknown: "the instance is not managed by SSM"}}},
			want:    []want{{model.KindDigestUnchecked, "a"}},
			verdict: model.VerdictWarn,
			status:  map[string]string{"a": "ok"},
		},
		{
			name: "an honest instance spelling the release digest its own way",
			in: Input{Release: release(), Observations: []model.Observation{
				obs("a", "A", func(o *model.Observation) {
					o.ReportedDigest = "registry.example.com/store-web@" + strings.ToUpper(relDigest)
				}),
				obs("b", "A", func(o *model.Observation) { o.ReportedDigest = strings.TrimPrefix(relDigest, "sha256:") }),
			}},
			verdict: model.VerdictPass,
		},
		{
			name:    "compare assets ignores byte differences",
			in:      Input{Release: release(), Observations: []model.Observation{obs("a", "A'")}, Compare: CompareAssets},
			verdict: model.VerdictPass,
		},
		{
			name:    "compare bytes sees them",
			in:      Input{Release: release(), Observations: []model.Observation{obs("a", "A'", func(o *model.Observation) { o.ReportedVersion = "" })}, Compare: CompareBytes},
			want:    []want{{model.KindContentMismatch, "a"}},
			verdict: model.VerdictFail,
		},
		{
			name: "unreachable is unknown, not a mismatch",
			in: Input{Release: release(), Observations: []model.Observation{obs("a", "A"),
				{Target: model.Target{ID: "b", Address: "b:1"}, Error: "GET http://b:1/m.json: connection refused"}}},
			want:    []want{{model.KindUnreachable, "b"}},
			verdict: model.VerdictFail,
			status:  map[string]string{"a": "ok", "b": "unreachable"},
		},
		{
			name: "SPA fallback is manifest-invalid",
			in: Input{Release: release(), Observations: []model.Observation{obs("a", "A"),
				obs("b", "", func(o *model.Observation) { o.ManifestInvalid = "an HTML page was served" })}},
			want:    []want{{model.KindManifestInvalid, "b"}},
			verdict: model.VerdictFail,
			status:  map[string]string{"b": "error"},
		},
		{
			name: "consensus: the minority drifts",
			in: Input{Release: &model.Release{Version: "v2"}, Observations: []model.Observation{obs("a", "A"), obs("b", "A"), obs("c", "B")},
				CDN: cdn()},
			want:    []want{{model.KindContentDrift, "c"}, {model.KindVersionLie, "c"}},
			verdict: model.VerdictFail,
		},
		{
			name:    "consensus with an even split: every group drifts",
			in:      Input{Observations: []model.Observation{obs("a", "A"), obs("b", "B")}},
			want:    []want{{model.KindContentDrift, "a"}, {model.KindContentDrift, "b"}},
			verdict: model.VerdictFail,
		},
		{
			name: "an asset missing names every instance referencing it",
			in:   Input{Observations: []model.Observation{obs("a", "A"), obs("b", "A"), obs("c", "A")}, CDN: cdn("/static/css/main.a.css")},
			want: []want{{model.KindAssetMissing, "a,b,c"}},
		},
		{
			name: "unchecked assets are warnings",
			in: Input{Observations: []model.Observation{obs("a", "A")}, CDN: func() *model.CDNResult {
				r := cdn()
				r.Checks["/static/js/main.a.js"].State = model.AssetUnchecked
				return r
			}()},
			want:    []want{{model.KindAssetUnchecked, "a"}},
			verdict: model.VerdictWarn,
		},
		{
			name: "certificate expiring and different",
			in: Input{Now: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), CertExpiryWarning: 14 * 24 * time.Hour, Observations: []model.Observation{
				obs("a", "A", func(o *model.Observation) {
					o.TLS = &model.TLSInfo{SHA256: "c1", MatchesHost: true, NotAfter: time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)}
				}),
				obs("b", "A", func(o *model.Observation) {
					o.TLS = &model.TLSInfo{SHA256: "c1", MatchesHost: true, NotAfter: time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)}
				}),
				obs("c", "A", func(o *model.Observation) {
					o.TLS = &model.TLSInfo{SHA256: "c2", MatchesHost: true, NotAfter: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
				}),
			}},
			want:    []want{{model.KindCertExpiring, "c"}, {model.KindCertMismatch, "c"}},
			verdict: model.VerdictWarn,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Judge(tc.in)
			got := kindsOf(r)
			wantSorted := append([]want(nil), tc.want...)
			sort.Slice(wantSorted, func(i, j int) bool {
				if wantSorted[i].kind != wantSorted[j].kind {
					return wantSorted[i].kind < wantSorted[j].kind
				}
				return wantSorted[i].instance < wantSorted[j].instance
			})
			if !slices.Equal(got, wantSorted) {
				t.Errorf("findings:\n got %v\nwant %v", got, wantSorted)
				for _, f := range r.Findings {
					t.Logf("  %s %s", f.Kind, f.Message)
				}
			}
			if tc.verdict != "" && r.Verdict != tc.verdict {
				t.Errorf("verdict = %s, want %s", r.Verdict, tc.verdict)
			}
			for id, st := range tc.status {
				for _, in := range r.Instances {
					if in.ID == id && in.Status != st {
						t.Errorf("%s status = %s, want %s", id, in.Status, st)
					}
				}
			}
			if r.Summary.Instances != len(tc.in.Observations) || r.Summary.Findings != len(r.Findings) {
				t.Errorf("summary %+v", r.Summary)
			}
			sameCompact(t, tc.in, r)
		})
	}
}

// sameCompact judges in again with the observations given one at a time and the instances
// left to be built as they are read, and wants the same report, instance for instance.
func sameCompact(t *testing.T, in Input, full *model.Report) {
	t.Helper()
	in.List, in.Observations, in.CompactInstances = sliceList(in.Observations), nil, true
	c := Judge(in)
	if len(c.Instances) != 0 || c.NumInstances() != len(full.Instances) {
		t.Fatalf("compact report holds %d instances and lists %d, want 0 and %d", len(c.Instances), c.NumInstances(), len(full.Instances))
	}
	for i := range full.Instances {
		if got, want := c.InstanceAt(i), full.Instances[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("instance %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	a, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("the compact report marshals differently:\n got %s\nwant %s", b, a)
	}
}

func TestJudgeIsPure(t *testing.T) {
	in := Input{Release: release(), Observations: []model.Observation{obs("a", "A"), obs("b", "B")}, CDN: cdn("/static/js/main.b.js")}
	a, b := Judge(in), Judge(in)
	if len(a.Findings) != len(b.Findings) || a.Verdict != b.Verdict {
		t.Fatal("same input, different reports")
	}
	for i := range a.Findings {
		if a.Findings[i].Message != b.Findings[i].Message {
			t.Fatalf("finding %d differs", i)
		}
	}
}
