package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
)

// Option configures Check.
type Option func(*options)

type options struct {
	requireDigest bool
	allowed       []string
	exceptions    []config.Exception
	configFile    string
	now           func() time.Time
	resolver      Resolver
	mutability    TagMutability
	logger        *slog.Logger
}

// WithRequireDigest makes a tag without digest an error (true) or a warning (false); latest and
// untagged references are errors either way. The default is true.
func WithRequireDigest(v bool) Option { return func(o *options) { o.requireDigest = v } }

// WithAllowedRegistries limits the registries images may come from. An entry is a registry host
// (docker.io, ghcr.io, 123456789012.dkr.ecr.us-east-1.amazonaws.com), a registry with a
// repository prefix (ghcr.io/acme), and may use * wildcards (*.dkr.ecr.*.amazonaws.com). The
// default (nil) allows any registry.
func WithAllowedRegistries(r []string) Option { return func(o *options) { o.allowed = r } }

// WithExceptions exempts images matching a pattern until the exception's expiry date
// (inclusive); configFile names the file the exceptions come from in messages. The default is
// no exceptions.
func WithExceptions(ex []config.Exception, configFile string) Option {
	return func(o *options) { o.exceptions, o.configFile = ex, configFile }
}

// WithConfig applies the policy section of a configuration (require_digest,
// allowed_registries, exceptions).
func WithConfig(c *config.Config) Option {
	return func(o *options) {
		if c.Policy.RequireDigest != nil {
			o.requireDigest = *c.Policy.RequireDigest
		}
		o.allowed = c.Policy.AllowedRegistries
		o.exceptions, o.configFile = c.Policy.Exceptions, c.File
	}
}

// WithNow sets the clock used to expire exceptions. The default is time.Now.
func WithNow(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithResolver resolves every tag: mutable references get the pinned reference as suggestion,
// and tag@digest references whose tag moved raise tag-moved. The default (nil) resolves
// nothing and needs no network.
func WithResolver(r Resolver) Option { return func(o *options) { o.resolver = r } }

// WithTagMutability warns (ecr-tag-mutable) about tag references into repositories that let
// tags be re-pushed, as far as the checker knows the registry (ECRTagMutability knows Amazon
// ECR). The default (nil) asks nothing.
func WithTagMutability(m TagMutability) Option { return func(o *options) { o.mutability = m } }

// WithLogger sets the logger. The default discards logs.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Check applies the policy rules to the images of in. It returns an error only when the check
// could not be done (a *ResolveError when the registry cannot be asked); findings are data in
// the report.
func Check(ctx context.Context, in *Inputs, opts ...Option) (*Report, error) {
	o := options{requireDigest: true, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	c := &checker{options: o, cache: map[string]string{}, mutable: map[string]bool{}}
	if o.resolver != nil {
		if err := c.prefetch(ctx, in.Images); err != nil {
			return nil, err
		}
	}
	r := &Report{}
	r.Summary.Files = len(in.Files)
	for _, img := range in.Images {
		if img.Raw != "" || img.Unreadable == "" { // not a document polygraph could not read
			r.Summary.Images++
		}
	}
	for _, sk := range in.Skipped {
		r.Summary.Skipped = append(r.Summary.Skipped, sk.File)
	}
	r.Summary.SkippedFiles = in.Skipped
	for _, img := range in.Images {
		fs, suppressed, err := c.check(ctx, img)
		if err != nil {
			return nil, err
		}
		r.Findings = append(r.Findings, fs...)
		r.Summary.Suppressed += suppressed
	}
	r.finish()
	return r, nil
}

type checker struct {
	options
	cache   map[string]string // tag -> digest
	mutable map[string]bool   // registry/repository -> tags mutable
}

func (c *checker) finding(img Image, rule string, sev model.Severity, format string, args ...any) Finding {
	image := img.Ref
	if image == "" {
		image = img.Raw
	}
	f := Finding{Rule: rule, Severity: sev, File: img.File, Line: img.Line, Column: img.Column,
		EndColumn: img.Column + utf8.RuneCountInString(img.Raw), Image: image,
		Message: fmt.Sprintf(format, args...)}
	if img.Kind == KindCloudFormation && img.Unresolved != "" || img.Raw == "" {
		f.EndColumn = 0 // an intrinsic function's extent is not its name; no value, no extent
	}
	return f
}

// check returns the findings of one image and how many an exception suppressed.
func (c *checker) check(ctx context.Context, img Image) ([]Finding, int, error) {
	if img.Unreadable != "" {
		// Never suppressed by an exception: there is no reference to match one against.
		if img.Raw == "" {
			return []Finding{c.finding(img, RuleUnreadable, model.SeverityError,
				"cannot read %s: %s", img.Where, img.Unreadable)}, 0, nil
		}
		short := shorten(img.Raw) // a hostile value may be a megabyte long
		f := c.finding(img, RuleUnreadable, model.SeverityError,
			"cannot read image %q in %s: %s", short, img.Where, img.Unreadable)
		f.Image = short
		return []Finding{f}, 0, nil
	}
	if img.Unresolved != "" && img.Raw == "" {
		// Not one image but a whole input (a Helm chart that could not be rendered).
		return []Finding{c.finding(img, RuleUnresolvedImage, model.SeverityWarning,
			"cannot check the images of %s: %s", img.Where, img.Unresolved)}, 0, nil
	}
	if img.Unresolved != "" {
		return []Finding{c.finding(img, RuleUnresolvedImage, model.SeverityWarning,
			"cannot check image %q in %s: %s", img.Raw, img.Where, img.Unresolved)}, 0, nil
	}
	shown := quoteImage(img)
	ref, err := ParseRef(img.Ref)
	if err != nil {
		return []Finding{c.finding(img, RuleInvalidReference, model.SeverityError,
			"%s in %s is not a valid image reference: %v", shown, img.Where, unwrapAll(err))}, 0, nil
	}
	var fs []Finding
	switch {
	case ref.Pinned():
		if ref.Tag != "" && c.resolver != nil {
			d, err := c.resolve(ctx, img, ref)
			if err != nil {
				return nil, 0, err
			}
			if !model.SameDigest(d, ref.Digest) {
				f := c.finding(img, RuleTagMoved, model.SeverityError,
					"%s in %s: tag %q now points at %s, not at the pinned %s", shown, img.Where, ref.Tag, d, ref.Digest)
				f.Suggestion = ref.WithDigest(d)
				fs = append(fs, f)
			}
		}
	case ref.Latest():
		var f Finding
		if ref.Tag == "" {
			f = c.finding(img, RuleLatestTag, model.SeverityError,
				"%s in %s has no tag or digest, which means :latest; pin it by digest", shown, img.Where)
		} else {
			f = c.finding(img, RuleLatestTag, model.SeverityError,
				"%s in %s uses the latest tag; pin it by digest", shown, img.Where)
		}
		fs = append(fs, f)
	default:
		sev := model.SeverityError
		if !c.requireDigest {
			sev = model.SeverityWarning
		}
		fs = append(fs, c.finding(img, RuleMutableTag, sev,
			"%s in %s uses the mutable tag %q without a digest; pin it by digest", shown, img.Where, ref.Tag))
	}
	if len(fs) > 0 && !ref.Pinned() && c.resolver != nil {
		d, err := c.resolve(ctx, img, ref)
		if err != nil {
			return nil, 0, err
		}
		fs[0].Suggestion = ref.WithDigest(d)
	}
	if c.mutability != nil && !(ref.Pinned() && ref.Tag == "") {
		key := ref.Repository.Name()
		mutable, known := c.mutable[key]
		if !known {
			m, ok, err := c.mutability.TagsMutable(ctx, ref.Repository.RegistryStr(), ref.Repository.RepositoryStr())
			if err != nil {
				return nil, 0, &ResolveError{Image: img.Ref, File: img.File, Line: img.Line, Err: err}
			}
			mutable = ok && m
			c.mutable[key] = mutable
		}
		if mutable {
			fs = append(fs, c.finding(img, RuleECRTagMutable, model.SeverityWarning,
				"%s in %s: the repository %q lets tags be re-pushed (image tag mutability MUTABLE); make it IMMUTABLE",
				shown, img.Where, ref.Repository.RepositoryStr()))
		}
	}
	if len(c.allowed) > 0 && !c.registryAllowed(ref) {
		fs = append(fs, c.finding(img, RuleDisallowedRegistry, model.SeverityError,
			"%s in %s comes from registry %q, which policy.allowed_registries does not list (%s)",
			shown, img.Where, ref.Registry(), strings.Join(c.allowed, ", ")))
	}
	if len(fs) == 0 {
		return nil, 0, nil
	}
	ex, expired := c.exception(ref)
	switch {
	case ex == nil:
		return fs, 0, nil
	case !expired:
		return nil, len(fs), nil
	}
	where := c.configFile
	if where == "" {
		where = "the configuration"
	}
	f := c.finding(img, RuleExceptionExpired, model.SeverityError,
		"%s in %s: the exception %q (%s:%d, reason: %s) expired on %s",
		shown, img.Where, ex.Image, where, ex.Line, ex.Reason, ex.Expires.Format("2006-01-02"))
	return append([]Finding{f}, fs...), 0, nil
}

// shorten cuts a value for a message to its first 80 characters, saying how long it was.
func shorten(s string) string {
	const keep = 80
	if utf8.RuneCountInString(s) <= keep {
		return s
	}
	r := []rune(s)
	return fmt.Sprintf("%s... (%d bytes)", string(r[:keep]), len(s))
}

// quoteImage shows an image, with the value as written when interpolation changed it.
func quoteImage(img Image) string {
	if img.Raw != img.Ref {
		return fmt.Sprintf("%q (from %q)", img.Ref, img.Raw)
	}
	return fmt.Sprintf("%q", img.Ref)
}

// unwrapAll returns the parser's reason without our "parsing image reference" prefix.
func unwrapAll(err error) string {
	if inner := errors.Unwrap(err); inner != nil {
		return inner.Error()
	}
	return err.Error()
}

// resolveConcurrency bounds the registry requests in flight.
const resolveConcurrency = 8

// prefetch resolves every tag that the check will need, each once, a few at a time.
func (c *checker) prefetch(ctx context.Context, imgs []Image) error {
	type job struct {
		img Image
		ref Ref
	}
	var jobs []job
	seen := map[string]bool{}
	for _, img := range imgs {
		if img.Unresolved != "" || img.Unreadable != "" {
			continue
		}
		ref, err := ParseRef(img.Ref)
		if err != nil || ref.Pinned() && ref.Tag == "" {
			continue
		}
		if key := ref.TagRef().Name(); !seen[key] {
			seen[key] = true
			jobs = append(jobs, job{img, ref})
		}
	}
	digests := make([]string, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(resolveConcurrency)
	for i, j := range jobs {
		g.Go(func() error {
			tag := j.ref.TagRef()
			c.logger.Debug("resolving tag", "image", tag.Name())
			d, err := c.resolver.Digest(gctx, tag)
			if err != nil {
				return &ResolveError{Image: j.img.Ref, File: j.img.File, Line: j.img.Line, Err: err}
			}
			digests[i] = d
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, j := range jobs {
		c.cache[j.ref.TagRef().Name()] = digests[i]
	}
	return nil
}

// resolve returns the digest the reference's tag points at now, asking the registry once per
// tag per run.
func (c *checker) resolve(ctx context.Context, img Image, ref Ref) (string, error) {
	tag := ref.TagRef()
	key := tag.Name()
	if d, ok := c.cache[key]; ok {
		return d, nil
	}
	c.logger.Debug("resolving tag", "image", key)
	d, err := c.resolver.Digest(ctx, tag)
	if err != nil {
		return "", &ResolveError{Image: img.Ref, File: img.File, Line: img.Line, Err: err}
	}
	c.cache[key] = d
	return d, nil
}

// registryAllowed reports whether policy.allowed_registries admits the reference.
func (c *checker) registryAllowed(ref Ref) bool {
	full := ref.Registry() + "/" + ref.Repository.RepositoryStr()
	for _, a := range c.allowed {
		a = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(a), "/"))
		for _, alias := range []string{"index.docker.io", "registry-1.docker.io"} {
			if a == alias || strings.HasPrefix(a, alias+"/") {
				a = "docker.io" + strings.TrimPrefix(a, alias)
			}
		}
		if strings.Contains(a, "/") {
			if full == a || strings.HasPrefix(full, a+"/") || strings.Contains(a, "*") && globMatch(a, full) {
				return true
			}
			continue
		}
		if ref.Registry() == a || strings.Contains(a, "*") && globMatch(a, ref.Registry()) {
			return true
		}
	}
	return false
}

// exception returns the exception covering the reference, preferring one still valid, and
// whether it has expired. An exception is valid through its expiry date (UTC); one without a
// date does not expire.
func (c *checker) exception(ref Ref) (*config.Exception, bool) {
	var expired *config.Exception
	now := c.now()
	for i := range c.exceptions {
		e := &c.exceptions[i]
		if !matchesAny(e.Image, ref.Names()) {
			continue
		}
		if e.Expires.IsZero() || now.Before(e.Expires.Time.AddDate(0, 0, 1)) {
			return e, false
		}
		if expired == nil {
			expired = e
		}
	}
	return expired, expired != nil
}

func matchesAny(pattern string, names []string) bool {
	for _, n := range names {
		if globMatch(pattern, n) {
			return true
		}
	}
	return false
}
