package fleet

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/model"
)

// EC2Options say which instances the EC2 source lists and how they are addressed.
type EC2Options struct {
	// Region names the region in errors (the client already carries it).
	Region string
	// AutoScalingGroups keeps instances whose aws:autoscaling:groupName tag is one of these.
	AutoScalingGroups []string
	// Filters are extra DescribeInstances filters ("tag:Service": ["store-web"]).
	Filters map[string][]string
	// Address is private_ip, public_ip or private_dns. The default is private_ip.
	Address string
	// Port is the port every instance is probed on.
	Port int
	// DigestTag, when set, names the instance tag holding the digest the instance claims
	// (the ec2-tag digest source). The default is no tag claim.
	DigestTag string
}

// EC2 lists the pending and running instances DescribeInstances returns, filtered server-side.
type EC2 struct {
	api ec2Ops
	o   EC2Options
}

// ec2Ops holds the one EC2 operation the sources call: (*ec2.Client).DescribeInstances.
//
// The sources keep the client's method, never the client: a *ec2.Client in a field of a
// source, once the source is an interface value (Source), or in any interface value, makes
// the linker keep every exported method of the client, because urfave/cli's help links
// text/template, which calls methods by name. That is all of EC2's operations: about 30 MB
// of code, and 4 MiB more resident memory at every start. For the same reason pages are
// walked by hand (nextInstancesPage), not by the SDK's paginators (they take the client as
// an interface). cmd/polygraph's TestUnusedAWSOperationsAreNotLinked keeps it so.
type ec2Ops struct {
	describeInstances func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// DescribeInstances calls the client's DescribeInstances.
func (o ec2Ops) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) (*ec2.DescribeInstancesOutput, error) {
	return o.describeInstances(ctx, in)
}

// NewEC2 returns the EC2 fleet source over client (one *ec2.Client built from the run's
// aws.Config; tests point it at a local fake).
func NewEC2(client *ec2.Client, o EC2Options) *EC2 {
	if o.Address == "" {
		o.Address = "private_ip"
	}
	return &EC2{api: ec2Ops{client.DescribeInstances}, o: o}
}

// Name returns "ec2".
func (*EC2) Name() string { return "ec2" }

// asgTag is the tag Auto Scaling puts on every instance it launches.
const asgTag = "aws:autoscaling:groupName"

// Filters returns the server-side filters of one DescribeInstances listing: states pending
// and running, the Auto Scaling groups, then the user's filters in name order.
func (e *EC2) Filters() []types.Filter {
	out := []types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}
	if len(e.o.AutoScalingGroups) > 0 {
		out = append(out, types.Filter{Name: aws.String("tag:" + asgTag), Values: e.o.AutoScalingGroups})
	}
	names := make([]string, 0, len(e.o.Filters))
	for k := range e.o.Filters {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		out = append(out, types.Filter{Name: aws.String(k), Values: e.o.Filters[k]})
	}
	return out
}

// Targets lists every page of DescribeInstances.
func (e *EC2) Targets(ctx context.Context) ([]model.Target, error) {
	in := &ec2.DescribeInstancesInput{Filters: e.Filters(), MaxResults: aws.Int32(1000)}
	var out []model.Target
	err := describePages(ctx, e.api, in, func(inst types.Instance) {
		out = append(out, instanceTarget(inst, e.o.Address, e.o.Port, e.o.DigestTag))
	})
	if err != nil {
		return nil, awsconf.Wrap(err, e.o.Region)
	}
	return out, nil
}

// addressWords says in an error which address an instance lacks.
var addressWords = map[string]string{"private_ip": "private IP address", "public_ip": "public IP address", "private_dns": "private DNS name"}

// instanceTarget turns one described instance into a target addressed per kind and port.
func instanceTarget(inst types.Instance, kind string, port int, digestTag string) model.Target {
	id := aws.ToString(inst.InstanceId)
	t := model.Target{ID: id, Source: "ec2", Labels: map[string]string{}}
	if inst.LaunchTime != nil {
		t.LaunchedAt = inst.LaunchTime.UTC()
	}
	var host string
	switch kind {
	case "public_ip":
		host = aws.ToString(inst.PublicIpAddress)
	case "private_dns":
		host = aws.ToString(inst.PrivateDnsName)
	default:
		host = aws.ToString(inst.PrivateIpAddress)
	}
	if host == "" {
		t.Unreachable = fmt.Sprintf("instance %s has no %s (fleet.ec2.address is %s)", id, addressWords[kind], kind)
	} else {
		t.Address = net.JoinHostPort(host, strconv.Itoa(port))
	}
	if inst.Placement != nil && aws.ToString(inst.Placement.AvailabilityZone) != "" {
		t.Labels["az"] = aws.ToString(inst.Placement.AvailabilityZone)
	}
	if inst.InstanceType != "" {
		t.Labels["instance_type"] = string(inst.InstanceType)
	}
	t.Labels["lifecycle"] = "on-demand"
	if inst.InstanceLifecycle != "" {
		t.Labels["lifecycle"] = string(inst.InstanceLifecycle)
	}
	if ami := aws.ToString(inst.ImageId); ami != "" {
		t.Labels["ami"] = ami
	}
	for _, tag := range inst.Tags {
		switch k := aws.ToString(tag.Key); {
		case k == asgTag:
			t.Labels["asg"] = aws.ToString(tag.Value)
		case digestTag != "" && k == digestTag:
			t.ReportedDigest = tagDigest(aws.ToString(tag.Value))
		}
	}
	return t
}

// tagDigest reads a digest claim from a tag value in canonical form (model.CanonicalDigest).
// A value that is no digest is no claim.
func tagDigest(v string) string {
	d, _ := model.CanonicalDigest(v)
	return d
}

// instanceBatch is how many instance IDs one DescribeInstances call asks about.
const instanceBatch = 200

var instanceIDs = regexp.MustCompile(`\bi-[0-9a-f]{8,17}\b`)

// Instances looks instances up by ID (the lifecycle hook's one instance, say) and returns one
// target per ID, in order, addressed per o.Address and o.Port and labelled like the EC2
// source's. An ID EC2 does not know (terminated and gone) is a target with Unreachable set.
// o's AutoScalingGroups and Filters do not apply.
func Instances(ctx context.Context, client *ec2.Client, ids []string, o EC2Options) ([]model.Target, error) {
	if o.Address == "" {
		o.Address = "private_ip"
	}
	found, err := lookup(ctx, ec2Ops{client.DescribeInstances}, ids, o.Region)
	if err != nil {
		return nil, err
	}
	out := make([]model.Target, 0, len(ids))
	for _, id := range ids {
		inst, ok := found[id]
		if !ok {
			out = append(out, model.Target{ID: id, Source: "ec2", Labels: map[string]string{},
				Unreachable: fmt.Sprintf("instance %s is unknown to DescribeInstances in %s (terminated?)", id, o.Region)})
			continue
		}
		out = append(out, instanceTarget(inst, o.Address, o.Port, o.DigestTag))
	}
	return out, nil
}

// lookup describes instances by ID, in batches, every page. IDs DescribeInstances names as
// unknown (InvalidInstanceID.NotFound fails the whole call) are left out and the call is
// repeated without them; they are absent from the answer.
func lookup(ctx context.Context, api ec2Ops, ids []string, region string) (map[string]types.Instance, error) {
	out := map[string]types.Instance{}
	for start := 0; start < len(ids); start += instanceBatch {
		batch := ids[start:min(start+instanceBatch, len(ids))]
		for len(batch) > 0 {
			err := describeIDs(ctx, api, batch, out)
			if err == nil {
				break
			}
			if awsconf.Code(err) != "InvalidInstanceID.NotFound" {
				return nil, awsconf.Wrap(err, region)
			}
			gone := instanceIDs.FindAllString(err.Error(), -1)
			var left []string
			for _, id := range batch {
				if !slices.Contains(gone, id) {
					left = append(left, id)
				}
			}
			if len(left) == len(batch) {
				return nil, awsconf.Wrap(err, region)
			}
			batch = left
		}
	}
	return out, nil
}

func describeIDs(ctx context.Context, api ec2Ops, ids []string, into map[string]types.Instance) error {
	return describePages(ctx, api, &ec2.DescribeInstancesInput{InstanceIds: ids}, func(inst types.Instance) {
		into[aws.ToString(inst.InstanceId)] = inst
	})
}

// describePages calls DescribeInstances for every page of in, handing each instance to each.
func describePages(ctx context.Context, api ec2Ops, in *ec2.DescribeInstancesInput, each func(types.Instance)) error {
	for in != nil {
		page, err := api.DescribeInstances(ctx, in)
		if err != nil {
			return err
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				each(inst)
			}
		}
		in = nextInstancesPage(in, page)
	}
	return nil
}

// nextInstancesPage returns the request for the page after page, or nil when page is the
// last: no next token, or the token it was asked with again (a service that would otherwise
// be asked the same page forever).
func nextInstancesPage(in *ec2.DescribeInstancesInput, page *ec2.DescribeInstancesOutput) *ec2.DescribeInstancesInput {
	next := aws.ToString(page.NextToken)
	if next == "" || next == aws.ToString(in.NextToken) {
		return nil
	}
	req := *in
	req.NextToken = aws.String(next)
	return &req
}
