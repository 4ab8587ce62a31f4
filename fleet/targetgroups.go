package fleet

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/model"
)

// TargetGroupsOptions say which target groups to list and how instance targets are addressed.
type TargetGroupsOptions struct {
	// Region names the region in errors.
	Region string
	// ARNs are the target groups.
	ARNs []string
	// Address is private_ip, public_ip or private_dns for instance targets. The default is
	// private_ip.
	Address string
	// DigestTag, when set, names the instance tag holding the digest claim (ec2-tag).
	DigestTag string
}

// TargetGroups lists every target registered in ELBv2 target groups, whatever its health.
type TargetGroups struct {
	groupsOp func(context.Context, *elb.DescribeTargetGroupsInput, ...func(*elb.Options)) (*elb.DescribeTargetGroupsOutput, error)
	healthOp func(context.Context, *elb.DescribeTargetHealthInput, ...func(*elb.Options)) (*elb.DescribeTargetHealthOutput, error)
	ec2      ec2Ops
	o        TargetGroupsOptions
}

// NewTargetGroups returns the target group source; instance targets are looked up through
// ec2c. It keeps the three operations it calls, never the clients (see ec2Ops).
func NewTargetGroups(elbc *elb.Client, ec2c *ec2.Client, o TargetGroupsOptions) *TargetGroups {
	if o.Address == "" {
		o.Address = "private_ip"
	}
	return &TargetGroups{groupsOp: elbc.DescribeTargetGroups, healthOp: elbc.DescribeTargetHealth, ec2: ec2Ops{ec2c.DescribeInstances}, o: o}
}

// Name returns "target_groups".
func (*TargetGroups) Name() string { return "target_groups" }

// registered is one target of one or more groups, before instances are looked up.
type registered struct {
	id, ip   string // instance ID, or IP for ip targets
	port     int
	groups   []string
	health   []string
	instance bool
}

// Targets describes the groups, their targets' health, then the instances behind instance
// targets in batches.
func (g *TargetGroups) Targets(ctx context.Context) ([]model.Target, error) {
	groups, err := g.describeGroups(ctx)
	if err != nil {
		return nil, err
	}
	var regs []*registered
	byKey := map[string]*registered{}
	for _, tg := range groups {
		name := groupName(aws.ToString(tg.TargetGroupArn))
		out, err := g.healthOp(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			return nil, g.notFound(err, aws.ToString(tg.TargetGroupArn))
		}
		for _, d := range out.TargetHealthDescriptions {
			if d.Target == nil {
				continue
			}
			port := int(aws.ToInt32(d.Target.Port))
			if port == 0 {
				port = int(aws.ToInt32(tg.Port))
			}
			id := aws.ToString(d.Target.Id)
			key := id + "|" + strconv.Itoa(port)
			r := byKey[key]
			if r == nil {
				r = &registered{port: port, instance: tg.TargetType == "instance"}
				if r.instance {
					r.id = id
				} else {
					r.ip = id
				}
				byKey[key] = r
				regs = append(regs, r)
			}
			health := "unknown"
			if d.TargetHealth != nil && d.TargetHealth.State != "" {
				health = string(d.TargetHealth.State)
			}
			r.groups = append(r.groups, name)
			r.health = append(r.health, health)
		}
	}
	instances, err := g.instances(ctx, regs)
	if err != nil {
		return nil, err
	}
	seenInstance := map[string]bool{}
	out := make([]model.Target, 0, len(regs))
	for _, r := range regs {
		var t model.Target
		if r.instance {
			inst, ok := instances[r.id]
			if ok {
				t = instanceTarget(inst, g.o.Address, r.port, g.o.DigestTag)
			} else {
				t = model.Target{ID: r.id, Labels: map[string]string{},
					Unreachable: fmt.Sprintf("instance %s is registered in target group %s but DescribeInstances does not know it (terminated?)", r.id, strings.Join(r.groups, ","))}
			}
			if seenInstance[r.id] {
				t.ID = r.id + ":" + strconv.Itoa(r.port)
			}
			seenInstance[r.id] = true
		} else {
			t = model.Target{ID: net.JoinHostPort(r.ip, strconv.Itoa(r.port)), Labels: map[string]string{}}
			t.Address = t.ID
		}
		t.Source = "target_groups"
		t.Labels["target_group"] = strings.Join(r.groups, ",")
		t.Labels["target_health"] = strings.Join(r.health, ",")
		out = append(out, t)
	}
	return out, nil
}

// describeGroups describes the configured groups; an unknown ARN or a lambda or alb group is
// a configuration error naming it.
func (g *TargetGroups) describeGroups(ctx context.Context) ([]elbTargetGroup, error) {
	var groups []elbTargetGroup
	for start := 0; start < len(g.o.ARNs); start += 20 {
		batch := g.o.ARNs[start:min(start+20, len(g.o.ARNs))]
		// Pages are walked by hand, not with the SDK's paginator: see ec2Ops.
		in := &elb.DescribeTargetGroupsInput{TargetGroupArns: batch}
		for in != nil {
			page, err := g.groupsOp(ctx, in)
			if err != nil && awsconf.Code(err) == "TargetGroupNotFound" && len(batch) > 1 {
				return nil, g.findMissing(ctx, batch, err)
			}
			if err != nil {
				return nil, g.notFound(err, strings.Join(batch, ", "))
			}
			for _, tg := range page.TargetGroups {
				switch tg.TargetType {
				case "instance", "ip":
				default:
					return nil, &config.Error{Msg: fmt.Sprintf("fleet.target_groups: target group %s has target type %s: only instance and ip targets can be probed", aws.ToString(tg.TargetGroupArn), tg.TargetType)}
				}
				groups = append(groups, elbTargetGroup{TargetGroupArn: tg.TargetGroupArn, TargetType: string(tg.TargetType), Port: tg.Port})
			}
			in = nextGroupsPage(in, page)
		}
	}
	return groups, nil
}

// nextGroupsPage returns the request for the page after page, or nil when page is the last
// (no next marker, or the marker it was asked with again).
func nextGroupsPage(in *elb.DescribeTargetGroupsInput, page *elb.DescribeTargetGroupsOutput) *elb.DescribeTargetGroupsInput {
	next := aws.ToString(page.NextMarker)
	if next == "" || next == aws.ToString(in.Marker) {
		return nil
	}
	req := *in
	req.Marker = aws.String(next)
	return &req
}

// findMissing asks about each ARN of a batch that failed with TargetGroupNotFound, to name
// the unknown ones.
func (g *TargetGroups) findMissing(ctx context.Context, batch []string, batchErr error) error {
	for _, arn := range batch {
		_, err := g.groupsOp(ctx, &elb.DescribeTargetGroupsInput{TargetGroupArns: []string{arn}})
		if err != nil {
			return g.notFound(err, arn)
		}
	}
	return awsconf.Wrap(batchErr, g.o.Region)
}

// notFound turns TargetGroupNotFound into a configuration error naming the ARN.
func (g *TargetGroups) notFound(err error, arn string) error {
	if awsconf.Code(err) == "TargetGroupNotFound" {
		return &config.Error{Msg: fmt.Sprintf("fleet.target_groups: target group %s not found in %s", arn, g.o.Region)}
	}
	return awsconf.Wrap(err, g.o.Region)
}

type elbTargetGroup struct {
	TargetGroupArn *string
	TargetType     string
	Port           *int32
}

// instances describes the instances behind instance targets.
func (g *TargetGroups) instances(ctx context.Context, regs []*registered) (map[string]ec2types.Instance, error) {
	var ids []string
	seen := map[string]bool{}
	for _, r := range regs {
		if r.instance && !seen[r.id] {
			seen[r.id] = true
			ids = append(ids, r.id)
		}
	}
	return lookup(ctx, g.ec2, ids, g.o.Region)
}

// groupName is the name part of arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID.
func groupName(arn string) string {
	_, rest, ok := strings.Cut(arn, ":targetgroup/")
	if !ok {
		return arn
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}
