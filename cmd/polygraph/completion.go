package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, func() *cli.Command {
		return &cli.Command{
			Name:      "completion",
			Usage:     "print a shell completion script: bash, zsh or fish",
			ArgsUsage: "bash|zsh|fish",
			Description: "Load it in the current shell, or install it where your shell looks:\n\n" +
				"   source <(polygraph completion bash)\n" +
				"   polygraph completion zsh > \"${fpath[1]}/_polygraph\"\n" +
				"   polygraph completion fish > ~/.config/fish/completions/polygraph.fish\n\n" +
				"The bash and zsh scripts ask the installed binary for completions, so they follow its version;\n" +
				"the fish script lists the commands and flags of the binary that wrote it.",
			Action: completionAction,
		}
	}, func() *cli.Command {
		return &cli.Command{
			Name:   "man",
			Usage:  "print the man page (troff), generated from the command definitions",
			Hidden: true,
			Action: func(c *cli.Context) error {
				page, err := manPage(c.App)
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(c.App.Writer, page)
				return err
			},
		}
	})
}

func completionAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("completion: name one shell: bash, zsh or fish"))
	}
	switch shell := c.Args().First(); shell {
	case "bash":
		_, err := fmt.Fprint(c.App.Writer, bashCompletion)
		return err
	case "zsh":
		_, err := fmt.Fprint(c.App.Writer, zshCompletion)
		return err
	case "fish":
		script, err := c.App.ToFishCompletion()
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(c.App.Writer, script)
		return err
	default:
		return usageErr(fmt.Errorf("completion: %q is not bash, zsh or fish", shell))
	}
}

// manPage renders the man page (section 1) from the command definitions.
func manPage(app *cli.App) (string, error) {
	page, err := app.ToManWithSection(1)
	if err != nil {
		return "", fmt.Errorf("rendering the man page: %w", err)
	}
	return page, nil
}

// The bash and zsh scripts run the command line typed so far with completionFlag appended;
// urfave/cli answers with the commands or flags that fit, one a line. The bash script needs no
// bash-completion package and evaluates nothing the user typed.
var bashCompletion = strings.TrimLeft(`
# bash completion for polygraph: source <(polygraph completion bash)
_polygraph_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" `+completionFlag+` 2>/dev/null)
  else
    opts=$("${words[@]}" `+completionFlag+` 2>/dev/null)
  fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _polygraph_complete polygraph
`, "\n")

var zshCompletion = strings.TrimLeft(`
#compdef polygraph
# zsh completion for polygraph: polygraph completion zsh > "${fpath[1]}/_polygraph"

_polygraph() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} `+completionFlag+` 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} `+completionFlag+` 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}

if [[ "$funcstack[1]" == "_polygraph" ]]; then
  _polygraph "$@"
else
  compdef _polygraph polygraph
fi
`, "\n")
