package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

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

// Exit statuses of bpc verify beyond 0 (VERIFIED) and 2 (usage).
const (
	// exitNotVerified: a check failed (red).
	exitNotVerified = 1
	// exitIssuerNotVerified: with --keys, everything checks out but the
	// directory says the issuer's identity is not verified (amber).
	exitIssuerNotVerified = 3
)

// cmdVerify checks a passport version's artifacts offline — no database, no
// network: an export file (BPC-EXPORT-1) or an artifact directory such as
// the one `bpc demo` writes. It prints one line per check and a verdict;
// the status is 0 when every check passes, 1 when one fails or the path
// holds no artifacts, 2 for a usage error (no such path, wrong arguments,
// a --keys file that is not a key directory). With --keys FILE, a saved
// copy of the issuer's key directory (GET /public/v1/issuers/{tenant_id}),
// the signature is checked with the directory's key, and the key's owner,
// its revocation and the issuer's identity are checked too: 3 when only
// the issuer's identity is not verified.
func cmdVerify(_ context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	fs := flags("verify")
	keysFile := fs.String("keys", "", "a saved copy of the issuer's key directory (GET /public/v1/issuers/{tenant_id}) to pin the signing key to")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: bpc verify [--keys FILE] PATH   (an export file or an artifact directory)")
		return &exitError{2, errors.New("verify takes exactly one PATH")}
	}
	var dir *verify.Directory
	if *keysFile != "" {
		d, err := readDirectory(*keysFile)
		if err != nil {
			fmt.Fprintf(stderr, "bpc verify: --keys %s: %v\n", *keysFile, err)
			return &exitError{2, fmt.Errorf("--keys %s: %w", *keysFile, err)}
		}
		dir = &d
	}
	path := fs.Arg(0)
	a, want, missing, err := readArtifacts(path)
	if missing {
		return &exitError{2, err}
	}
	if err != nil {
		fmt.Fprintf(stdout, "NOT VERIFIED: %s holds no passport artifacts: %v\n", path, err)
		return &exitError{exitNotVerified, fmt.Errorf("%s: %w", path, err)}
	}
	if dir != nil {
		return verifyPinned(stdout, a, want, *dir)
	}
	rep, err := verify.Verify(a, want)
	for _, c := range rep.Checks {
		fmt.Fprintln(stdout, c)
	}
	if err != nil {
		fmt.Fprintf(stdout, "NOT VERIFIED: %s failed\n", strings.Join(rep.FailedNames(), ", "))
		return &exitError{exitNotVerified, err}
	}
	fmt.Fprintf(stdout, "VERIFIED: %d checks passed\n", len(rep.Checks))
	return nil
}

// verifyPinned is bpc verify --keys: the checks of the bytes with the
// directory's key as the trusted one, then the trust checks, the issuer
// and the verdict as a colour in words.
func verifyPinned(stdout io.Writer, a verify.Artifacts, want verify.Expect, d verify.Directory) error {
	trust, pub, trustErr := verify.PinnedTrust(d, a.Receipt)
	if pub != nil {
		want.PublicKey, want.From = pub, "the key directory"
	}
	rep, err := verify.Verify(a, want)
	checks := append(rep.Checks, trust.Checks...)
	for _, c := range checks {
		fmt.Fprintln(stdout, c)
	}
	if is := d.Issuer(); is != nil {
		state := "identity NOT verified"
		if is.IdentityVerifiedAt != nil {
			state = "identity verified by the platform at " + is.IdentityVerifiedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "Issuer: %s, %s, %s (tenant %s; %s)\n", is.LegalName, is.Country, is.RegistrationID, d.TenantID, state)
	} else {
		fmt.Fprintf(stdout, "Issuer: tenant %s has not identified itself (no issuer profile)\n", d.TenantID)
	}
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	switch verdict := trust.Verdict(err == nil && trustErr == nil); {
	case trustErr != nil:
		fmt.Fprintf(stdout, "NOT VERIFIED (red): %v\n", trustErr)
		return &exitError{exitNotVerified, trustErr}
	case verdict == verify.VerdictVerified:
		fmt.Fprintf(stdout, "VERIFIED (green): %d checks passed\n", len(checks))
		return nil
	case verdict == verify.VerdictIssuerNotVerified:
		fmt.Fprintln(stdout, "SIGNED — ISSUER NOT VERIFIED (amber): the data checks out and is signed by the issuer's key, but the issuer's identity is not verified")
		return &exitError{exitIssuerNotVerified, errors.New("the issuer's identity is not verified")}
	default:
		reason := trust.Reason(err == nil)
		fmt.Fprintf(stdout, "NOT VERIFIED (red): %s failed (%s)\n", strings.Join(failed, ", "), reason)
		return &exitError{exitNotVerified, fmt.Errorf("not verified: %s", reason)}
	}
}

// readDirectory reads a saved key directory, at most
// verify.MaxDirectoryBytes of it.
func readDirectory(path string) (verify.Directory, error) {
	f, err := os.Open(path)
	if err != nil {
		return verify.Directory{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, verify.MaxDirectoryBytes+1))
	if err != nil {
		return verify.Directory{}, err
	}
	return verify.ParseDirectory(b)
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
