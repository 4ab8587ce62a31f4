package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/urfave/cli/v2"
)

// writeAtomic writes what render produces to path through a temporary file beside it, renamed
// over path once complete: a failed or interrupted run never leaves a truncated file, and a
// report from an earlier run never survives as if it were this one's.
func writeAtomic(path string, render func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing left to remove
	bw := bufio.NewWriter(f)
	err = render(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// reportExit turns a report into the command's error, and so its exit code
// (model.Report.ExitCode decides): nil for 0, the run's own error when it could not verify.
func reportExit(rep *model.Report, runErr error, threshold model.Severity) error {
	switch code := rep.ExitCode(threshold); {
	case code == model.ExitOK:
		return nil
	case code == model.ExitUnverifiable && runErr != nil:
		return unverifiable(runErr)
	case code == model.ExitUnverifiable:
		return unverifiable(errors.New(rep.Error))
	default:
		return &exitError{code: code}
	}
}

// outputFormat reads --output and checks it is one of formats.
func outputFormat(c *cli.Context, formats []string) (string, error) {
	output := c.String("output")
	if !slices.Contains(formats, output) {
		return "", usageErr(fmt.Errorf("--output must be one of %s, got %q", strings.Join(formats, ", "), output))
	}
	return output, nil
}
