package fleet

import (
	"context"
	"errors"
	"testing"

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
