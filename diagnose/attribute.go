package diagnose

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
)

// attributor finds the image that produced each group's content. It remembers every record
// read and every tag inspected, by digest, so groups share the registry work; the registry
// client's disk cache keeps manifests, configs and layer lookups between runs.
type attributor struct {
	client *registry.Client
	log    *slog.Logger
	rel    *model.Release
	// repo is the release's repository; tag its tag ("" for a digest reference).
	repo, tag  string
	platform   string
	files      []string // the manifest files inside images (none when unknown: nothing is confirmed)
	searchTags int

	records map[string]recordResult // by repo@digest
	catalog []tagInfo
	listed  bool
	work    *model.RegistryWork
}

type recordResult struct {
	rec *model.ReleaseRecord
	err error
}

// tagInfo is one searched tag: what it points at now and when that image was built.
type tagInfo struct {
	tag     string
	set     *registry.DigestSet
	created time.Time
}

// attribute fills g.Attribution. Registry failures are notes on the attribution (unknown),
// never errors of the diagnosis.
func (a *attributor) attribute(ctx context.Context, g *model.DiagnosisGroup) {
	at := &g.Attribution
	if g.MatchesRelease && a.rel.Source != model.SourceConsensus && a.rel.Digest != "" {
		at.How, at.Digest = model.HowRelease, a.rel.Digest
		at.Image = a.repo + "@" + a.rel.Digest
		at.Confirmed = a.rel.ManifestSHA256 != "" || a.rel.AssetsSHA256 != ""
		at.Tags = a.tagsOf(a.rel.Digest)
		return
	}
	if a.repo == "" {
		at.Note = "no release image is configured: there is no repository to search"
		return
	}
	var notes []string
	try := func(how string, digests []string) bool {
		for _, d := range digests {
			if _, ok := model.CanonicalDigest(d); !ok {
				continue
			}
			d, _ = model.CanonicalDigest(d)
			if len(a.files) == 0 {
				at.How, at.Digest, at.Image = how, d, a.repo+"@"+d
				at.Note = "release.manifest_file is not set: the image's manifest could not be read to confirm it"
				at.Tags = a.tagsOf(d)
				return true
			}
			r := a.record(ctx, a.repo+"@"+d)
			switch {
			case r.err != nil:
				notes = append(notes, fmt.Sprintf("%s %s could not be read: %v", how, short(d), r.err))
			case matches(r.rec, g):
				at.How, at.Digest, at.Image, at.Confirmed = how, r.rec.Digest, a.repo+"@"+r.rec.Digest, true
				at.Tags = a.tagsOf(r.rec.Digest)
				return true
			default:
				notes = append(notes, fmt.Sprintf("%s %s holds other content than the group serves", how, short(d)))
			}
		}
		return false
	}
	if try(model.HowRunningDigest, g.RunningDigests) || try(model.HowReportedDigest, g.ClaimedDigests) {
		if len(at.Tags) == 0 && a.searchTags > 0 {
			// Which tags name the image tells an older release from a build in no tag.
			a.list(ctx)
			at.Tags = a.tagsOf(at.Digest)
		}
		return
	}
	if len(a.files) > 0 && a.searchTags > 0 {
		a.list(ctx)
		for _, t := range a.catalog {
			r := a.record(ctx, a.repo+"@"+t.set.Digest)
			if r.err != nil || !matches(r.rec, g) {
				continue
			}
			at.How, at.Digest, at.Image, at.Confirmed = model.HowTagSearch, t.set.Digest, a.repo+"@"+t.set.Digest, true
			at.Tags = a.tagsOf(t.set.Digest)
			if !t.created.IsZero() {
				c := t.created.UTC()
				at.Created = &c
			}
			return
		}
		notes = append(notes, fmt.Sprintf("none of the %d newest tags of %s holds this content: a build that is in no recent tag", len(a.catalog), a.repo))
	}
	at.Note = strings.Join(notes, "; ")
}

// matches reports whether a record's manifest is the content a group serves.
func matches(rec *model.ReleaseRecord, g *model.DiagnosisGroup) bool {
	return (g.AssetsSHA256 != "" && rec.AssetsSHA256 == g.AssetsSHA256) ||
		(g.ManifestSHA256 != "" && rec.ManifestSHA256 == g.ManifestSHA256)
}

// record reads the manifest files out of ref's image, once per reference.
func (a *attributor) record(ctx context.Context, ref string) recordResult {
	if r, ok := a.records[ref]; ok {
		return r
	}
	rec, err := a.client.Record(ctx, ref, a.platform, a.files...)
	if err != nil {
		a.work.Errors = append(a.work.Errors, err.Error())
	}
	a.records[ref] = recordResult{rec, err}
	return a.records[ref]
}

// list lists the repository's tags once and inspects the last searchTags of them, newest first
// by the image config's created time (the listing's order, reversed, among equal times).
func (a *attributor) list(ctx context.Context) {
	if a.listed {
		return
	}
	a.listed = true
	tags, truncated, err := a.client.ListTags(ctx, a.repo)
	if err != nil {
		a.work.Errors = append(a.work.Errors, err.Error())
		return
	}
	if truncated {
		a.log.WarnContext(ctx, "tag listing truncated", "repo", a.repo, "pages", registry.MaxTagPages)
	}
	a.work.TagsListed = len(tags)
	if len(tags) > a.searchTags {
		tags = tags[len(tags)-a.searchTags:]
	}
	for i := len(tags) - 1; i >= 0; i-- {
		im, err := a.client.Inspect(ctx, a.repo+":"+tags[i], a.platform)
		a.work.TagsSearched++
		if err != nil {
			a.work.Errors = append(a.work.Errors, err.Error())
			continue
		}
		a.catalog = append(a.catalog, tagInfo{tag: tags[i], set: im.Set, created: im.Created})
	}
	sort.SliceStable(a.catalog, func(i, j int) bool { return a.catalog[i].created.After(a.catalog[j].created) })
}

// tagsOf lists the searched tags that point at digest, and the release tag when it was
// resolved and points there.
func (a *attributor) tagsOf(digest string) []string {
	out := []string{}
	if a.tag != "" {
		now := a.rel.TagDigest
		if now == "" && a.rel.Source != model.SourceConsensus {
			now = a.rel.Digest // the tag was resolved and had not moved
		}
		if model.SameDigest(now, digest) {
			out = append(out, a.tag)
		}
	}
	for _, t := range a.catalog {
		if registry.Equivalent(t.set, digest) && !contains(out, t.tag) {
			out = append(out, t.tag)
		}
	}
	return out
}

// createdOf returns the created time of the searched tag's image, when it was searched.
func (a *attributor) createdOf(tag string) time.Time {
	for _, t := range a.catalog {
		if t.tag == tag {
			return t.created
		}
	}
	return time.Time{}
}

// counter counts the HTTP requests a registry client sends.
type counter struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

// splitImage returns the repository and tag of an image reference (tag "" for a digest
// reference or none).
func splitImage(ref string) (repo, tag string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		return ref[:i], ""
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
