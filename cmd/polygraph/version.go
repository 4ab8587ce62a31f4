package main

import (
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "version",
		Usage: "print polygraph's version",
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.Writer, "polygraph %s (%s, %s/%s)\n", polygraphVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	})
}
