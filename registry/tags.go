package registry

import (
	"context"
	"fmt"
	"time"
)

// MaxTagPages caps the pages of a tag listing ListTags reads, so a repository with a huge tag
// history cannot keep a run listing until its deadline.
const MaxTagPages = 100

// ListTags lists the tags of repo ("registry.example.com/store-web"), in the registry's order,
// every page up to MaxTagPages. truncated is true when the listing had more pages than that.
func (c *Client) ListTags(ctx context.Context, repo string) (tags []string, truncated bool, err error) {
	type listing struct {
		tags      []string
		truncated bool
	}
	l, err := bounded(ctx, "listing the tags of", repo, c.registryOf(repo+":latest"), func() (listing, error) {
		r, err := c.parseRef(repo + ":latest")
		if err != nil {
			return listing{}, err
		}
		lister, err := c.puller.Lister(ctx, r.Context())
		if err != nil {
			return listing{}, fmt.Errorf("listing the tags of %q: %w", repo, classify(err, r.Context().RegistryStr(), repo))
		}
		var out listing
		for pages := 0; lister.HasNext(); pages++ {
			if pages == MaxTagPages {
				out.truncated = true
				break
			}
			page, err := lister.Next(ctx)
			if err != nil {
				return listing{}, fmt.Errorf("listing the tags of %q: %w", repo, classify(err, r.Context().RegistryStr(), repo))
			}
			out.tags = append(out.tags, page.Tags...)
		}
		return out, nil
	})
	return l.tags, l.truncated, err
}

// Image is what a reference resolves to, with its creation time.
type Image struct {
	// Set is the reference's release digest set.
	Set *DigestSet
	// Created is the `created` time of the config of the platform asked for; zero when the
	// image does not say.
	Created time.Time
}

// Inspect resolves ref and reads the config of its image for platform ("" is the client's
// default). Manifests and configs come from the disk cache when there.
func (c *Client) Inspect(ctx context.Context, ref, platform string) (*Image, error) {
	if platform == "" {
		platform = c.o.platform
	}
	return bounded(ctx, "inspecting", ref, c.registryOf(ref), func() (*Image, error) {
		res, err := c.resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		im, err := res.pick(platform)
		if err != nil {
			return nil, fmt.Errorf("inspecting %q: %w", ref, err)
		}
		cfg, err := c.configFile(ctx, res.ref.Context(), im.manifest.Config.Digest)
		if err != nil {
			return nil, fmt.Errorf("inspecting %q: %w", ref, err)
		}
		return &Image{Set: res.set, Created: cfg.Created.Time}, nil
	})
}
