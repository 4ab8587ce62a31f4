package diagnose

import (
	"io"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/report"
)

// BenchmarkExplain10000 is diagnose's own work on a 10,000-instance report in three groups
// (and 500 unreachable), without the registry: grouping, causes and the three renderings.
func BenchmarkExplain10000(b *testing.B) {
	d := largeDiagnosis(10000)
	rep := d.Report
	rep.Groups = nil
	for _, g := range d.Groups {
		rep.Groups = append(rep.Groups, model.Group{ID: g.ID, Instances: g.Instances, MatchesRelease: g.MatchesRelease})
	}
	b.ReportAllocs()
	for b.Loop() {
		groups := Groups(rep)
		cs := causes(causeInput{rep: rep, groups: groups, rel: &rep.Release, repo: "registry.example.com/store-web", tag: "v2.31.0"})
		out := &model.Diagnosis{Schema: model.DiagnosisSchema, Verdict: rep.Verdict, Report: rep, Groups: groups, Causes: cs, Unreachable: d.Unreachable}
		for _, f := range report.DiagnosisFormats {
			if err := report.RenderDiagnosis(io.Discard, out, f, report.DiagnosisOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
