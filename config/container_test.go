package config

import (
	"strings"
	"testing"
)

func TestValidContainer(t *testing.T) {
	for c, want := range map[string]bool{
		"web":                          true,
		"label=app=web":                true,
		"registry.example.com/web:v1":  true,
		"a" + strings.Repeat("b", 255): true,
		"a" + strings.Repeat("b", 256): false,
		"":                             false,
		"-web":                         false,
		"web;rm -rf /":                 false,
		"web$(id)":                     false,
		"web\n":                        false,
	} {
		if got := validContainer(c); got != want {
			t.Errorf("validContainer(%.20q, %d chars) = %v, want %v", c, len(c), got, want)
		}
	}
}
