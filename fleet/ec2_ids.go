package fleet

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

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
		var err error
		if out, err = e.describe(ctx, &ec2.DescribeInstancesInput{InstanceIds: batch}, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}
