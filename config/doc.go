// Package config loads polygraph.yaml: decoded strictly (an unknown key is an error naming the
// file and line), defaults applied and validated once, at load.
package config
