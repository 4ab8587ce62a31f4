package policy

import "github.com/polygraph-dev/polygraph/model"

// Rule identifiers.
const (
	RuleMutableTag         = "mutable-tag"
	RuleLatestTag          = "latest-tag"
	RuleDisallowedRegistry = "disallowed-registry"
	RuleExceptionExpired   = "exception-expired"
	RuleTagMoved           = "tag-moved"
	RuleUnresolvedImage    = "unresolved-image"
	RuleInvalidReference   = "invalid-reference"
	RuleECRTagMutable      = "ecr-tag-mutable"
	RuleUnreadable         = "unreadable"
)

// RuleInfo documents a rule.
type RuleInfo struct {
	// ID is the rule's stable identifier.
	ID string
	// Title is a one-line description.
	Title string
	// Help explains why the rule exists and how to fix a finding.
	Help string
	// Severity is the rule's default severity.
	Severity model.Severity
}

// Rules documents every rule, in the order they are listed in reports.
var Rules = []RuleInfo{
	{RuleMutableTag, "Image referenced by a mutable tag",
		"A tag is a pointer anyone with push access can move: the same deploy file can start a different image tomorrow. Pin the image by digest (repo:tag@sha256:...); `polygraph policy check --resolve` prints the reference to paste. With policy.require_digest: false this is a warning.",
		model.SeverityError},
	{RuleLatestTag, "Image referenced by the latest tag, explicitly or implicitly",
		"A reference without a tag means :latest, which moves with every push. Pin the image by digest (repo@sha256:...); `polygraph policy check --resolve` prints the reference to paste.",
		model.SeverityError},
	{RuleDisallowedRegistry, "Image from a registry that policy.allowed_registries does not list",
		"Only registries listed in policy.allowed_registries may serve deploy images. Mirror the image into an allowed registry, or add the registry to the list.",
		model.SeverityError},
	{RuleExceptionExpired, "Policy exception has expired",
		"The image matches a policy exception whose expiry date has passed, so its findings are reported again. Fix the reference, or renew the exception with a new reason and date.",
		model.SeverityError},
	{RuleTagMoved, "Tag no longer points at the pinned digest",
		"The reference is pinned as tag@digest, but the registry now resolves the tag to another digest: the tag was re-pushed. The pinned digest is what runs; check which of the two is the release you mean, and update the pin.",
		model.SeverityError},
	{RuleUnresolvedImage, "Image reference cannot be determined statically",
		"The image comes from a variable without a default, a CloudFormation intrinsic function or a workflow expression, so it cannot be checked (unknown, not wrong). Give the variable a pinned default, or check the rendered output (for example `helm template | polygraph policy check -`).",
		model.SeverityWarning},
	{RuleInvalidReference, "Image reference does not parse",
		"The value is not a valid image reference (upper-case repository, bad tag or digest), so the runtime would refuse it.",
		model.SeverityError},
	{RuleECRTagMutable, "ECR repository lets tags be re-pushed",
		"With --resolve, tag references into Amazon ECR repositories whose image tag mutability is MUTABLE can be overwritten by any push. Set the repository to IMMUTABLE (aws ecr put-image-tag-mutability --image-tag-mutability IMMUTABLE), and pin by digest.",
		model.SeverityWarning},
	{RuleUnreadable, "Input polygraph cannot read",
		"A construct in the file is beyond what polygraph reads safely: YAML aliases expanding past a million nodes, << merge keys chained more than 32 deep, variables nested more than 32 deep or expanding past 1 MiB, Kubernetes Lists nested more than 4 deep. The images there cannot be checked, so the gate does not pass: flatten the construct, or exclude the file (policy.exclude, --skip-path) if it is deliberately hostile test data.",
		model.SeverityError},
}
