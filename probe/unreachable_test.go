package probe

import (
	"context"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// A target that cannot be dialed (an instance without an address of the configured kind) is
// recorded as unreachable with its reason, and nothing is dialed.
func TestUnreachableTargetIsNotDialed(t *testing.T) {
	p := New()
	why := "instance i-0abc has no public IP address (fleet.ec2.address is public_ip)"
	obs := p.Probe(context.Background(), []model.Target{{ID: "i-0abc", Unreachable: why}})
	if len(obs) != 1 || obs[0].Reached || obs[0].Error != why || obs[0].Attempts != 0 {
		t.Fatalf("%+v", obs)
	}
	if p.Requests() != 0 {
		t.Errorf("%d requests sent", p.Requests())
	}
}
