package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
)

// causeInput is what the causes are inferred from; inferring them is pure.
type causeInput struct {
	rep    *model.Report
	groups []model.DiagnosisGroup
	rel    *model.Release
	// recordedAt is when the release was recorded (zero when there is no record).
	recordedAt time.Time
	repo, tag  string
	// tagNow is what the release tag points at now, when it moved (nil otherwise).
	tagNow *registry.DigestSet
	region string
}

// Causes infers the likely causes. A cause names exactly the groups it explains and the
// evidence it rests on; what it could not check is said in NotEnoughEvidence.
func causes(in causeInput) []model.Cause {
	labels := instanceLabels(in.rep)
	explained := map[int]bool{}
	var out []model.Cause
	if c, ok := tagRePushed(in, labels, explained); ok {
		out = append(out, c)
	}
	if c, ok := otherBuild(in, labels, explained, true); ok {
		out = append(out, c)
	}
	if c, ok := otherBuild(in, labels, explained, false); ok {
		out = append(out, c)
	}
	if c, ok := assetsNotUploaded(in); ok {
		out = append(out, c)
	}
	if c, ok := claimsUnreliable(in); ok {
		out = append(out, c)
	}
	if c, ok := unreachable(in, labels); ok {
		out = append(out, c)
	}
	return out
}

func tagRePushed(in causeInput, labels map[string]map[string]string, explained map[int]bool) (model.Cause, bool) {
	if in.rel.TagDigest == "" {
		return model.Cause{}, false
	}
	ref := in.repo + ":" + in.tag
	c := model.Cause{Kind: model.CauseTagRePushed, Groups: []int{}}
	c.Evidence = append(c.Evidence, fmt.Sprintf("%s now resolves to %s; the release record%s says %s", ref, in.rel.TagDigest, at(in.recordedAt, " (recorded %s)"), in.rel.Digest))
	var ids []string
	var missing, late, early, unknown int
	for _, g := range in.groups {
		d := g.Attribution.Digest
		if g.MatchesRelease || d == "" || !(model.SameDigest(d, in.rel.TagDigest) || registry.Equivalent(in.tagNow, d)) {
			continue
		}
		explained[g.ID] = true
		c.Groups = append(c.Groups, g.ID)
		ids = append(ids, g.Instances...)
		c.Evidence = append(c.Evidence, fmt.Sprintf("group %d (%s) serves the manifest read from the image the tag now points at (%s, attributed by %s)", g.ID, count(len(g.Instances), "instance"), short(d), g.Attribution.How))
		switch {
		case g.LaunchedFirst == nil:
			unknown++
		case !in.recordedAt.IsZero() && g.LaunchedFirst.After(in.recordedAt):
			late++
			c.Evidence = append(c.Evidence, fmt.Sprintf("group %d launched %s, after the release was recorded at %s", g.ID, window(g), stamp(in.recordedAt)))
		default:
			early++
		}
		if g.AssetsMissing > 0 {
			missing += g.AssetsMissing
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s its manifest references are missing on the CDN", count(g.AssetsMissing, "asset")))
		}
		if contains(g.ClaimedVersions, in.rel.Version) && in.rel.Version != "" {
			c.Evidence = append(c.Evidence, fmt.Sprintf("group %d claims %s like the release: its version claim cannot tell the two builds apart", g.ID, in.rel.Version))
		}
	}
	pin := fmt.Sprintf("While %s points at the rebuild, every new instance runs it: pin the release by digest in the launch template, user data or task definition: %s@%s", in.tag, in.repo, in.rel.Digest)
	if len(ids) == 0 {
		c.Summary = fmt.Sprintf("The tag %s was re-pushed after the release was recorded; no instance serves the new image yet, but every instance launched from the tag will.", in.tag)
		c.Actions = []string{pin, immutableAction(in.repo, in.tag)}
		return c, true
	}
	switch {
	case unknown > 0:
		c.NotEnoughEvidence = "launch times are unknown (a static fleet has none): it is not shown that these instances launched after the release was recorded"
	case early > 0:
		c.NotEnoughEvidence = fmt.Sprintf("%d group(s) launched before the release was recorded at %s: the re-push alone does not explain how they got the image (a warm pool or a manual deploy may)", early, stamp(in.recordedAt))
	case in.recordedAt.IsZero():
		c.NotEnoughEvidence = "the release record has no time: it is not shown that these instances launched after it"
	}
	c.Summary = fmt.Sprintf("The tag %s was re-pushed with a rebuilt image after the release was recorded; %s launched since then pulled the rebuild and %s its content, not the release's", in.tag, count(len(ids), "instance"), verb(len(ids), "serves", "serve"))
	if missing > 0 {
		c.Summary += fmt.Sprintf(", and %s it references were never uploaded to the CDN", count(missing, "asset"))
	}
	c.Summary += "."
	c.Actions = append([]string{pin}, replaceAction(ids, labels, in.region, "after pinning, so replacements run the release")...)
	c.Actions = append(c.Actions, immutableAction(in.repo, in.tag))
	return c, true
}

// otherBuild explains the groups that serve another build than the release: with older set,
// those some tag of the repository names (old-release); without, those no searched tag names
// (unknown-build).
func otherBuild(in causeInput, labels map[string]map[string]string, explained map[int]bool, older bool) (model.Cause, bool) {
	c := model.Cause{Kind: model.CauseUnknownBuild, Groups: []int{}}
	if older {
		c.Kind = model.CauseOldRelease
	}
	var ids, tags []string
	for _, g := range in.groups {
		if g.MatchesRelease || explained[g.ID] {
			continue
		}
		a := g.Attribution
		named := len(a.Tags) > 0 && !(in.tag != "" && contains(a.Tags, in.tag))
		if older != named {
			continue
		}
		explained[g.ID] = true
		c.Groups = append(c.Groups, g.ID)
		ids = append(ids, g.Instances...)
		if older {
			tags = append(tags, a.Tags...)
			c.Evidence = append(c.Evidence, fmt.Sprintf("group %d (%s) serves the manifest of %s (%s, attributed by %s%s)", g.ID, count(len(g.Instances), "instance"), strings.Join(a.Tags, ", "), short(a.Digest), a.How, created(a.Created)))
		} else {
			what := "no image was found that holds it"
			if a.Digest != "" {
				what = fmt.Sprintf("the image %s holds it (attributed by %s), but no searched tag names it", short(a.Digest), a.How)
			}
			c.Evidence = append(c.Evidence, fmt.Sprintf("group %d (%s) serves content that is not the release's: %s", g.ID, count(len(g.Instances), "instance"), what))
			if a.Note != "" {
				c.Evidence = append(c.Evidence, a.Note)
			}
		}
		if len(g.ClaimedVersions) > 0 {
			c.Evidence = append(c.Evidence, fmt.Sprintf("group %d claims %s", g.ID, strings.Join(g.ClaimedVersions, ", ")))
		}
		if g.LaunchedFirst != nil {
			c.Evidence = append(c.Evidence, fmt.Sprintf("group %d launched %s", g.ID, window(g)))
		}
		if g.AssetsMissing > 0 {
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s group %d references are missing on the CDN", count(g.AssetsMissing, "asset"), g.ID))
		}
	}
	if len(ids) == 0 {
		return c, false
	}
	rel := in.rel.Version
	if rel == "" {
		rel = "the release"
	}
	if older {
		sort.Strings(tags)
		c.Summary = fmt.Sprintf("%s still %s another release of %s (%s) instead of %s: a deploy did not replace %s.", count(len(ids), "instance"), verb(len(ids), "runs", "run"), in.repo, strings.Join(uniq(tags), ", "), rel, verb(len(ids), "it", "them"))
		c.Actions = replaceAction(ids, labels, in.region, "with "+rel)
		c.Actions = append(c.Actions, fmt.Sprintf("Check why the last deploy skipped %s (an instance refresh that stopped, a scale-in protection, a host outside the deploy group)", verb(len(ids), "it", "them")))
		return c, true
	}
	if in.repo == "" {
		c.Summary = fmt.Sprintf("%s %s other content than the release, from a build that cannot be named.", count(len(ids), "instance"), verb(len(ids), "serves", "serve"))
		c.NotEnoughEvidence = "no release image is configured (release.image or release.record): there is no repository to find the build in"
	} else {
		c.Summary = fmt.Sprintf("%s %s a build that is in no recent tag of %s: it was built or copied outside the release process.", count(len(ids), "instance"), verb(len(ids), "serves", "serve"), in.repo)
	}
	c.Actions = replaceAction(ids, labels, in.region, "with "+rel)
	c.Actions = append(c.Actions, "Find how that build reached them (a manual deploy, a hotfix image, a tag deleted since): the digests and launch times above say which and when")
	return c, true
}

func assetsNotUploaded(in causeInput) (model.Cause, bool) {
	c := model.Cause{Kind: model.CauseAssetsNotUploaded, Groups: []int{}}
	var ids []string
	for _, g := range in.groups {
		if !g.MatchesRelease || g.AssetsMissing == 0 {
			continue
		}
		c.Groups = append(c.Groups, g.ID)
		ids = append(ids, g.Instances...)
		c.Evidence = append(c.Evidence, fmt.Sprintf("group %d (%s) serves the release's manifest; %s it references are missing on the primary CDN", g.ID, count(len(g.Instances), "instance"), count(g.AssetsMissing, "asset")))
	}
	if len(ids) == 0 {
		return c, false
	}
	urls := MissingURLs(in.rep, ids)
	if len(urls) == 0 {
		return c, false
	}
	c.Summary = fmt.Sprintf("The release runs where it should, but %s it references were never uploaded to the CDN: pages that load them break.", count(len(urls), "asset"))
	c.Actions = []string{uploadAction(urls, "the release's build output (the same build whose manifest the record holds)")}
	return c, true
}

func claimsUnreliable(in causeInput) (model.Cause, bool) {
	c := model.Cause{Kind: model.CauseClaimsUnreliable, Groups: []int{}}
	liars := map[string]string{}
	for _, f := range in.rep.Findings {
		if f.Kind == model.KindVersionLie && f.Instance != "" {
			liars[f.Instance] = f.Message
		}
	}
	if len(liars) == 0 {
		return c, false
	}
	var n int
	for _, g := range in.groups {
		var ids []string
		for _, id := range g.Instances {
			if _, ok := liars[id]; ok {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		n += len(ids)
		c.Groups = append(c.Groups, g.ID)
		c.Evidence = append(c.Evidence, fmt.Sprintf("group %d: %s (%s) %s %s, contradicted by what %s or %s; e.g. %s", g.ID, count(len(ids), "instance"), listIDs(ids, 3), verb(len(ids), "claims", "claim"), strings.Join(g.ClaimedVersions, ", "), verb(len(ids), "it serves", "they serve"), verb(len(ids), "runs", "run"), liars[ids[0]]))
	}
	c.Summary = fmt.Sprintf("%s %s a version %s content contradicts: dashboards and health checks that read the claim show the wrong picture.", count(n, "instance"), verb(n, "claims", "claim"), verb(n, "its", "their"))
	c.Actions = []string{"Do not trust the version claim to tell builds apart: derive it from the artifact (the image digest) at build time, not from the source tag"}
	if !hasRunning(in.rep) {
		c.Actions = append(c.Actions, "Configure probe.runtime (ssm or docker) so polygraph reads the digest each instance's runtime actually runs")
	}
	return c, true
}

// hasRunning reports whether a trusted runtime source told what any instance runs.
func hasRunning(rep *model.Report) bool {
	for _, i := range rep.Instances {
		if i.RunningDigest != "" {
			return true
		}
	}
	return false
}

func unreachable(in causeInput, labels map[string]map[string]string) (model.Cause, bool) {
	var ids []string
	errs := map[string]int{}
	for _, i := range in.rep.Instances {
		if i.Status == model.StatusUnreachable {
			ids = append(ids, i.ID)
			errs[i.Error]++
		}
	}
	if len(ids) == 0 {
		return model.Cause{}, false
	}
	c := model.Cause{Kind: model.CauseInstancesUnreachable, Groups: []int{}, Instances: ids}
	c.Summary = fmt.Sprintf("%s of %d gave no usable answer: what %s is unknown, not wrong.", count(len(ids), "instance"), len(in.rep.Instances), verb(len(ids), "it serves", "they serve"))
	for _, kv := range shared(ids, in.rep, labels) {
		c.Evidence = append(c.Evidence, kv)
	}
	var top string
	for e, n := range errs {
		if top == "" || n > errs[top] || n == errs[top] && e < top {
			top = e
		}
	}
	c.Evidence = append(c.Evidence, fmt.Sprintf("most common error (%d of %d): %s", errs[top], len(ids), top))
	if len(c.Evidence) == 1 {
		c.NotEnoughEvidence = "they share no label (AZ, subnet, Auto Scaling group) that sets them apart"
	}
	var ec2 []string
	for _, id := range ids {
		if ec2ID.MatchString(id) {
			ec2 = append(ec2, id)
		}
	}
	if len(ec2) > 0 {
		reg := ""
		if in.region != "" {
			reg = " --region " + in.region
		}
		c.Actions = append(c.Actions, fmt.Sprintf("Check their state and status checks: aws ec2 describe-instance-status%s --include-all-instances --instance-ids %s", reg, strings.Join(ec2, " ")))
	}
	c.Actions = append(c.Actions, "Check what they share above (security group, network ACL, a stopped service), then run diagnose again: until they answer, what they serve is unknown")
	return c, true
}

// shared returns, for each label every unreachable instance has with the same value, how many
// reachable instances have it too: "az=us-east-1b on all 3 (0 of 12 reachable ones)".
func shared(ids []string, rep *model.Report, labels map[string]map[string]string) []string {
	first := labels[ids[0]]
	var keys []string
	for k := range first {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v := first[k]
		all := true
		for _, id := range ids[1:] {
			if labels[id][k] != v {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		var same, reachable int
		for _, i := range rep.Instances {
			if i.Status != model.StatusUnreachable {
				reachable++
				if i.Labels[k] == v {
					same++
				}
			}
		}
		who := fmt.Sprintf("all %d share", len(ids))
		if len(ids) == 1 {
			who = "it has"
		}
		out = append(out, fmt.Sprintf("%s %s=%s (%d of the %d reachable instances have it too)", who, k, v, same, reachable))
	}
	return out
}

// verb picks the singular or plural form for n.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func window(g model.DiagnosisGroup) string {
	if g.LaunchedLast == nil || g.LaunchedFirst.Equal(*g.LaunchedLast) {
		return "at " + stamp(*g.LaunchedFirst)
	}
	return "between " + stamp(*g.LaunchedFirst) + " and " + stamp(*g.LaunchedLast)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func at(t time.Time, format string) string {
	if t.IsZero() {
		return ""
	}
	return fmt.Sprintf(format, stamp(t))
}

func created(t *time.Time) string {
	if t == nil {
		return ""
	}
	return ", built " + stamp(*t)
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
