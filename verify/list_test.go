package verify

import (
	"reflect"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// sliceList is an ObservationList over a slice.
type sliceList []model.Observation

func (s sliceList) Len() int                   { return len(s) }
func (s sliceList) At(i int) model.Observation { return s[i] }

// Observations given one at a time (Input.List) are judged exactly as the same slice is.
func TestJudgeReadsAListAsTheSlice(t *testing.T) {
	unreachable := model.Observation{Target: model.Target{ID: "c", Address: "c:1"}, Error: "GET http://c:1/m.json: connection refused"}
	inputs := map[string]Input{
		"release and a missing asset": {Release: release(), Observations: []model.Observation{obs("a", "A"), obs("b", "B"), unreachable}, CDN: cdn("/static/js/main.b.js")},
		"consensus":                   {Observations: []model.Observation{obs("a", "A"), obs("b", "A"), obs("c", "B", func(o *model.Observation) { o.ReportedVersion = "v1" })}, CDN: cdn("/static/css/main.a.css")},
		"nobody answered":             {Release: release(), Observations: []model.Observation{unreachable}},
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			want := Judge(in)
			listed := in
			listed.List, listed.Observations = sliceList(in.Observations), nil
			got := Judge(listed)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("judged from a list:\n got %+v\nwant %+v", got, want)
			}
			if len(got.Instances) != len(in.Observations) {
				t.Errorf("%d instances judged, want %d", len(got.Instances), len(in.Observations))
			}
		})
	}
}
