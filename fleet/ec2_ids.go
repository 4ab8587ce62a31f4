package fleet

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/model"
)

// Instances describes the instances with the given IDs, whatever their state and tags (the
// lifecycle hook names a launching instance, and the InService members of its group), and
// addresses them like Targets does. IDs go 1000 to a call; an ID EC2 does not know fails the
// call with InvalidInstanceID.NotFound.
func (e *EC2) Instances(ctx context.Context, ids []string) ([]model.Target, error) {
	var out []model.Target
	for start := 0; start < len(ids); start += 1000 {
		batch := ids[start:min(start+1000, len(ids))]
		// Pages are walked by hand, not with the SDK's paginator: see ec2Ops.
		in := &ec2.DescribeInstancesInput{InstanceIds: batch}
		for in != nil {
			page, err := e.api.DescribeInstances(ctx, in)
			if err != nil {
				return nil, awsconf.Wrap(err, e.o.Region)
			}
			for _, r := range page.Reservations {
				for _, inst := range r.Instances {
					out = append(out, instanceTarget(inst, e.o.Address, e.o.Port, e.o.DigestTag))
				}
			}
			in = nextInstancesPage(in, page)
		}
	}
	return out, nil
}
