package diagnose

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

var ec2ID = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// replaceAction says how to replace instances: a ready AWS CLI command when they are EC2
// instances (through their Auto Scaling group when they have one, so it launches
// replacements), else their names. why ends the sentence ("with the release").
func replaceAction(ids []string, labels map[string]map[string]string, region, why string) []string {
	var asg, plain, other []string
	for _, id := range ids {
		switch {
		case !ec2ID.MatchString(id):
			other = append(other, id)
		case labels[id]["asg"] != "":
			asg = append(asg, id)
		default:
			plain = append(plain, id)
		}
	}
	reg := ""
	if region != "" {
		reg = " --region " + region
	}
	var out []string
	switch len(asg) {
	case 0:
	case 1:
		out = append(out, fmt.Sprintf("Replace %s %s (its Auto Scaling group launches a replacement): aws autoscaling terminate-instance-in-auto-scaling-group%s --instance-id %s --no-should-decrement-desired-capacity", asg[0], why, reg, asg[0]))
	default:
		out = append(out, fmt.Sprintf("Replace the %d instances %s (their Auto Scaling groups launch replacements): for id in %s; do aws autoscaling terminate-instance-in-auto-scaling-group%s --instance-id \"$id\" --no-should-decrement-desired-capacity; done", len(asg), why, strings.Join(asg, " "), reg))
	}
	if len(plain) > 0 {
		out = append(out, fmt.Sprintf("Replace %s %s: launch new ones, then aws ec2 terminate-instances%s --instance-ids %s", count(len(plain), "instance"), why, reg, strings.Join(plain, " ")))
	}
	if len(other) > 0 {
		out = append(out, fmt.Sprintf("Redeploy or replace %s %s: %s", count(len(other), "instance"), why, strings.Join(other, ", ")))
	}
	return out
}

// uploadAction lists the files to upload (at most 20 named; the findings name every one).
func uploadAction(urls []string, what string) string {
	const named = 20
	shown := urls
	more := ""
	if len(urls) > named {
		shown = urls[:named]
		more = fmt.Sprintf(" and %d more (every one is an asset-missing finding)", len(urls)-named)
	}
	return fmt.Sprintf("Upload the %s to the CDN from %s: %s%s", count(len(urls), "missing file"), what, strings.Join(shown, " "), more)
}

// immutableAction tells how to stop a tag being re-pushed, with the ECR command for ECR.
func immutableAction(repo, tag string) string {
	host, name, _ := strings.Cut(repo, "/")
	if strings.Contains(host, ".dkr.ecr.") && strings.HasSuffix(host, ".amazonaws.com") {
		region := strings.Split(host, ".")[3]
		return fmt.Sprintf("Find the job that re-pushed %s and make tags immutable: aws ecr put-image-tag-mutability --region %s --repository-name %s --image-tag-mutability IMMUTABLE", tag, region, name)
	}
	return fmt.Sprintf("Find the job that re-pushed %s and make the repository's tags immutable (a release tag must never move)", tag)
}

// count writes "1 instance", "2 instances".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// instanceLabels maps instance IDs to their labels.
func instanceLabels(rep *model.Report) map[string]map[string]string {
	out := make(map[string]map[string]string, len(rep.Instances))
	for _, in := range rep.Instances {
		out[in.ID] = in.Labels
	}
	return out
}

// listIDs names instances, at most max of them, then how many more.
func listIDs(ids []string, max int) string {
	if len(ids) <= max {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:max], ", "), len(ids)-max)
}
