package passport_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

// uploader is the tenant whose uploads the tests read; other has uploads
// of its own beside them.
var uploader, other = uuid.MustParse("11111111-1111-4111-8111-111111111111"), uuid.MustParse("22222222-2222-4222-8222-222222222222")

// uploadsDir is an uploads directory (returned) holding the uploader's
// directory, beside a secret outside it and another tenant's uploads: a
// file, a subdirectory, links that stay inside and links that lead out
// (to the secret, to the other tenant), a FIFO and a file over the limit.
func uploadsDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	uploads := filepath.Join(base, "uploads")
	dir := filepath.Join(uploads, uploader.String())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "2026", "11"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(uploads, other.String()), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(uploads, other.String(), "theirs.json"), []byte(`{"theirs":true}`), 0o600))
	require.NoError(t, os.Symlink(filepath.Join("..", other.String(), "theirs.json"), filepath.Join(dir, "theirs.json")))
	write := func(path, content string) {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	write(filepath.Join(base, "secret.json"), `{"secret":true}`)
	write(filepath.Join(dir, "bom.json"), `{"a":1}`)
	write(filepath.Join(dir, "2026", "11", "pcf.json"), `{"b":2}`)
	write(filepath.Join(dir, "big.json"), strings.Repeat(" ", 65)+"{}")
	write(filepath.Join(dir, "empty.json"), "")
	require.NoError(t, os.Symlink("bom.json", filepath.Join(dir, "inside.json")))
	require.NoError(t, os.Symlink("../../bom.json", filepath.Join(dir, "2026", "11", "up-inside.json")))
	require.NoError(t, os.Symlink("../secret.json", filepath.Join(dir, "outside.json")))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.json"), filepath.Join(dir, "absolute.json")))
	require.NoError(t, os.Symlink(base, filepath.Join(dir, "parent")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600))
	return uploads
}

func TestReadUpload(t *testing.T) {
	t.Parallel()
	dir := uploadsDir(t)
	const limit = 64

	for ref, want := range map[string]string{
		"bom.json":               `{"a":1}`,
		"2026/11/pcf.json":       `{"b":2}`,
		"./2026//11/pcf.json":    `{"b":2}`,
		"inside.json":            `{"a":1}`,
		"2026/11/up-inside.json": `{"a":1}`,
	} {
		b, err := passport.ReadUpload(dir, uploader, ref, limit)
		require.NoError(t, err, ref)
		require.Equal(t, want, string(b), ref)
	}

	for ref, reason := range map[string]string{
		"../secret.json":       "must not contain '..'",
		"/etc/passwd":          "not an absolute path",
		"outside.json":         "cannot be opened in the uploads directory",
		"absolute.json":        "cannot be opened in the uploads directory",
		"parent/secret.json":   "cannot be opened in the uploads directory",
		"2026":                 "is not a regular file (a directory)",
		"fifo.json":            "is not a regular file (a FIFO)",
		"big.json":             `"big.json" is 67 bytes, limit is 64 (BPC_PAYLOAD_MAX_BYTES)`,
		"missing.json":         `no file "missing.json" in the uploads directory`,
		"empty.json":           "is empty",
		"s3://bucket/bom.json": "not a URL",
		"theirs.json":          "cannot be opened in the uploads directory",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := passport.ReadUpload(dir, uploader, ref, limit)
			done <- err
		}()
		select {
		case err := <-done:
			require.Equal(t, errcode.Validation, errcode.CodeOf(err), "%s: %v", ref, err)
			require.Equal(t, "content_ref", errcode.As(err).Field, ref)
			require.ErrorContains(t, err, reason, ref)
		case <-time.After(5 * time.Second):
			t.Fatalf("reading %s blocked", ref)
		}
	}

	// Another tenant reads only its own directory; one without a directory
	// reads nothing.
	_, err := passport.ReadUpload(dir, other, "bom.json", limit)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	b, err := passport.ReadUpload(dir, other, "theirs.json", limit)
	require.NoError(t, err)
	require.Equal(t, `{"theirs":true}`, string(b))
	_, err = passport.ReadUpload(dir, uuid.New(), "bom.json", limit)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.ErrorContains(t, err, "no directory for this tenant")
	// A tenant whose entry is a link to another tenant's directory reads
	// nothing through it, though the link stays in the uploads directory.
	linked := uuid.New()
	require.NoError(t, os.Symlink(other.String(), filepath.Join(dir, linked.String())))
	_, err = passport.ReadUpload(dir, linked, "theirs.json", limit)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.ErrorContains(t, err, "is a symbolic link, not a directory")

	_, err = passport.ReadUpload("", uploader, "bom.json", limit)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.ErrorContains(t, err, "BPC_UPLOADS_DIR is unset")
	_, err = passport.ReadUpload(filepath.Join(dir, "gone"), uploader, "bom.json", limit)
	require.Equal(t, errcode.IOError, errcode.CodeOf(err), "a directory that cannot be opened is the service's problem, retried")
}
