package fleet

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/polygraph-dev/polygraph/model"
)

type failing struct{}

func (failing) Name() string { return "ec2" }
func (failing) Targets(context.Context) ([]model.Target, error) {
	return nil, errors.New("DescribeInstances: access denied")
}

func TestDiscoverMergesAndDeduplicates(t *testing.T) {
	a := Static{{ID: "web-1", Address: "127.0.1.1:8080", Labels: map[string]string{"az": "a"}}, {Address: "127.0.1.2:8080"}}
	b := Static{{ID: "i-0abc", Address: "127.0.1.1:8080", Labels: map[string]string{"az": "b", "asg": "web"}}, {ID: "i-0def", Address: "127.0.1.3:8080"}}
	got, err := Discover(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d targets, want 3: %+v", len(got), got)
	}
	first := got[0]
	if first.ID != "web-1" || first.Labels["az"] != "a" || first.Labels["asg"] != "web" {
		t.Errorf("first source should win and gain missing labels: %+v", first)
	}
	if got[1].ID != "127.0.1.2:8080" || got[1].Source != "static" {
		t.Errorf("an entry without an id is named by its address: %+v", got[1])
	}
}

func TestDiscoverNamesTheFailingSource(t *testing.T) {
	_, err := Discover(context.Background(), Static{{Address: "127.0.1.1:1"}}, failing{})
	if err == nil || err.Error() != "listing ec2 instances: DescribeInstances: access denied" {
		t.Fatalf("err = %v", err)
	}
}

// TestDiscoverSharesEqualLabels: targets with equal labels share one map once discovered, and
// labels merged from a second source reach only the target both sources name.
func TestDiscoverSharesEqualLabels(t *testing.T) {
	web := func() map[string]string { return map[string]string{"az": "us-east-1a", "asg": "web"} }
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	a := Static{
		{ID: "i-1", Address: "127.0.1.1:8080", Labels: web(), ReportedDigest: strings.Clone(digest)},
		{ID: "i-2", Address: "127.0.1.2:8080", Labels: web(), ReportedDigest: strings.Clone(digest)},
		{ID: "i-3", Address: "127.0.1.3:8080", Labels: web()},
		{ID: "i-4", Address: "127.0.1.4:8080", Labels: map[string]string{"az": "us-east-1b", "asg": "web"}},
		// Lengths keep pairs apart: "a"="b:c" is not "a:b"="c".
		{ID: "i-5", Address: "127.0.1.5:8080", Labels: map[string]string{"a": "b1:c"}},
		{ID: "i-6", Address: "127.0.1.6:8080", Labels: map[string]string{"a1:b": "c"}},
	}
	b := Static{{ID: "tg", Address: "127.0.1.3:8080", Labels: map[string]string{"target_group": "store"}}}
	got, err := Discover(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	same := func(x, y map[string]string) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(got[0].Labels, got[1].Labels) {
		t.Error("i-1 and i-2 have equal labels in maps of their own")
	}
	if unsafe.StringData(got[0].ReportedDigest) != unsafe.StringData(got[1].ReportedDigest) {
		t.Error("i-1 and i-2 claim one digest in strings of their own")
	}
	if same(got[2].Labels, got[0].Labels) || got[2].Labels["target_group"] != "store" || got[0].Labels["target_group"] != "" {
		t.Errorf("the target group's label reached the wrong targets: i-1 %v, i-3 %v", got[0].Labels, got[2].Labels)
	}
	if same(got[3].Labels, got[0].Labels) || got[3].Labels["az"] != "us-east-1b" {
		t.Errorf("i-4 (another zone) shares i-1's labels: %v", got[3].Labels)
	}
	if same(got[4].Labels, got[5].Labels) || got[4].Labels["a"] != "b1:c" || got[5].Labels["a1:b"] != "c" {
		t.Errorf("different labels share a map: %v, %v", got[4].Labels, got[5].Labels)
	}
}
