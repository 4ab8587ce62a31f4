package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// boolFlag is a boolean flag whose POLYGRAPH_* variable takes the spellings people use for
// booleans in the environment: 1, true, yes, on and 0, false, no, off (any case). An empty
// variable counts as unset. Anything else is a usage error naming the variable.
func boolFlag(name string, aliases []string, usage string) cli.Flag {
	return &envBoolFlag{&cli.BoolFlag{Name: name, Aliases: aliases, Usage: usage, EnvVars: env(name)}}
}

type envBoolFlag struct{ *cli.BoolFlag }

// Apply reads the environment itself, then lets BoolFlag register the flag without reading it
// again (its strconv.ParseBool refuses "yes" and "on").
func (f *envBoolFlag) Apply(set *flag.FlagSet) error {
	envs := f.EnvVars
	f.EnvVars = nil
	defer func() { f.EnvVars = envs }()
	for _, name := range envs {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			continue
		}
		b, err := parseEnvBool(v)
		if err != nil {
			return usageErr(fmt.Errorf("%s=%q: %w", name, v, err))
		}
		f.Value, f.HasBeenSet = b, true
		break
	}
	return f.BoolFlag.Apply(set)
}

// parseEnvBool parses a boolean environment value.
func parseEnvBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y", "t":
		return true, nil
	case "0", "false", "no", "off", "n", "f":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean (use 1, true, yes, on or 0, false, no, off)")
}

// completionFlag is the hidden last argument with which shells ask for completions.
const completionFlag = "--generate-bash-completion"

// reorderArgs moves the flags of a command that appear after its positional arguments in front
// of them, so `polygraph policy check k8s/ --output sarif` means what it says: the flag parser
// stops at the first positional argument. It knows which flags take a value from the command's
// own definitions; after "--" everything is positional. Arguments it cannot attribute to a
// command (no command, unknown command, a command with subcommands still to choose) are left
// as they are for the parser to report.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 || args[len(args)-1] == completionFlag {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	var cmd *cli.Command
	cmds := app.Commands
	for len(rest) > 0 {
		next := findCommand(cmds, rest[0])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		out, rest = append(out, rest[0]), rest[1:]
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	valued := map[string]bool{}
	for _, f := range cmd.Flags {
		takesValue := true
		switch f.(type) {
		case *cli.BoolFlag, *envBoolFlag:
			takesValue = false
		}
		for _, n := range f.Names() {
			valued[n] = takesValue
		}
	}
	var flags, positional []string
	dashdash := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			dashdash = true
			positional = append(positional, rest[i+1:]...)
			i = len(rest)
		case a == "-" || !strings.HasPrefix(a, "-"):
			positional = append(positional, a)
		default:
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if valued[name] && i+1 < len(rest) {
				flags = append(flags, rest[i+1])
				i++
			}
		}
	}
	out = append(out, flags...)
	if dashdash {
		out = append(out, "--")
	}
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
