package policy

import (
	"context"
	"strings"

	"go.yaml.in/yaml/v3"
)

// isCompose recognises a compose file: a services mapping of mappings (a null service, which
// Compose accepts and runs nothing for, included).
func isCompose(root *yaml.Node) bool {
	svcs := get(root, "services")
	if svcs == nil || svcs.Kind != yaml.MappingNode {
		return false
	}
	for _, kv := range entries(svcs) {
		if kv[1] != nil && kv[1].Kind != yaml.MappingNode {
			return false
		}
	}
	return true
}

// composeImages returns services.*.image with ${VAR:-default} interpolated from the file's own
// defaults (the environment is not consulted, so the result does not depend on where the check
// runs). A service with build: and image: is checked too, since Compose pulls that image
// unless pull_policy is build or never; a service that is only built names no image.
func composeImages(ctx context.Context, file string, root *yaml.Node) []Image {
	var out []Image
	e := newExpander(ctx, nil, "$$", 0)
	for _, kv := range entries(get(root, "services")) {
		svc := kv[1]
		img := get(svc, "image")
		if img == nil || img.Kind != yaml.ScalarNode {
			continue
		}
		if get(svc, "build") != nil {
			switch str(get(svc, "pull_policy")) {
			case "build", "never":
				continue // the image is the name of what is built, never pulled
			}
		}
		im := scalarImage(file, KindCompose, "service "+kv[0].Value, img)
		e.budget = MaxExpandBytes + len(img.Value) // no variables: the budget is per value
		v, missing, err := e.expand(img.Value)
		if err != nil {
			if ctx.Err() != nil {
				return out // Extract reports the context's error
			}
			im.Ref = ""
			im.Unreadable = "interpolating: " + err.Error()
			e.err = nil
		} else if len(missing) > 0 {
			im.Ref = ""
			im.Unresolved = "the image needs " + strings.Join(quoteAll(missing), ", ") + ", which has no default in the file"
		} else {
			im.Ref = v
		}
		out = append(out, im)
	}
	return out
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if strings.HasPrefix(s, "$") {
			out[i] = s
		} else {
			out[i] = "$" + s
		}
	}
	return out
}
