package policy

import (
	"reflect"
	"testing"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"SET": "v1", "EMPTY": ""}
	tests := []struct {
		name, in, escape string
		want             string
		missing          []string
	}{
		{"literal", "nginx:1.25", "$$", "nginx:1.25", nil},
		{"default when unset", "nginx:${TAG:-latest}", "$$", "nginx:latest", nil},
		{"default when unset (dash only)", "nginx:${TAG-1.0}", "$$", "nginx:1.0", nil},
		{"colon default when empty", "nginx:${EMPTY:-1.0}", "$$", "nginx:1.0", nil},
		{"dash default keeps empty", "nginx${EMPTY-:1.0}", "$$", "nginx", nil},
		{"set variable", "app:${SET}", "$$", "app:v1", nil},
		{"bare variable", "app:$SET", "$$", "app:v1", nil},
		{"unset variable", "app:${TAG}", "$$", "app:", []string{"TAG"}},
		{"unset bare variable", "app:$TAG", "$$", "app:", []string{"TAG"}},
		{"required", "app:${TAG:?set TAG}", "$$", "app:", []string{"TAG"}},
		{"alternative when set", "app${SET:+:pinned}", "$$", "app:pinned", nil},
		{"alternative when unset", "app${TAG:+:pinned}", "$$", "app", nil},
		{"nested default", "${REG:-${MIRROR:-docker.io}}/app:1", "$$", "docker.io/app:1", nil},
		{"escaped dollar", "app$$x", "$$", "app$x", nil},
		{"dockerfile escape", `app\$x`, `\$`, "app$x", nil},
		{"unterminated", "app:${TAG", "$$", "app:", []string{"${TAG"}},
		{"bad operator", "app:${TAG/x/y}", "$$", "app:", []string{"${TAG/x/y}"}},
		{"lonely dollar", "a$", "$$", "a$", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, missing := expand(tt.in, vars, tt.escape)
			if got != tt.want || !reflect.DeepEqual(missing, tt.missing) {
				t.Errorf("expand(%q) = %q, %q; want %q, %q", tt.in, got, missing, tt.want, tt.missing)
			}
		})
	}
}
