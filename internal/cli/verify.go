package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bpc-platform/bpc/core/verify"
)

// exitError ends the process with its own exit status rather than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process status for an error Run returned: 2 for a usage
// error (an unknown subcommand or flag, bpc verify's arguments), 1 for any
// other error.
func ExitCode(err error) int {
	if ee := (*exitError)(nil); errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// cmdVerify checks a passport version's artifacts offline — no database, no
// network: an export file (BPC-EXPORT-1) or an artifact directory such as
// the one `bpc demo` writes. It prints one line per check and a verdict;
// the status is 0 when every check passes, 1 when one fails or the path
// holds no artifacts, 2 for a usage error (no such path, wrong arguments).
func cmdVerify(_ context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	fs := flags("verify")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: bpc verify PATH   (an export file or an artifact directory)")
		return &exitError{2, errors.New("verify takes exactly one PATH")}
	}
	path := fs.Arg(0)
	a, want, missing, err := readArtifacts(path)
	if missing {
		return &exitError{2, err}
	}
	if err != nil {
		fmt.Fprintf(stdout, "NOT VERIFIED: %s holds no passport artifacts: %v\n", path, err)
		return &exitError{1, fmt.Errorf("%s: %w", path, err)}
	}
	rep, err := verify.Verify(a, want)
	for _, c := range rep.Checks {
		fmt.Fprintln(stdout, c)
	}
	if err != nil {
		fmt.Fprintf(stdout, "NOT VERIFIED: %s failed\n", strings.Join(rep.FailedNames(), ", "))
		return &exitError{1, err}
	}
	fmt.Fprintf(stdout, "VERIFIED: %d checks passed\n", len(rep.Checks))
	return nil
}

// readArtifacts reads an artifact directory, or an export file; missing
// says nothing is at path (a usage error).
func readArtifacts(path string) (a verify.Artifacts, want verify.Expect, missing bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return a, want, true, err
	case fi.IsDir():
		a, err = verify.ReadDir(os.DirFS(path))
		return a, want, false, err
	}
	b, err := os.ReadFile(path)
	if err == nil {
		a, want, err = verify.ReadExport(b)
	}
	return a, want, false, err
}
