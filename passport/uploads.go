package passport

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
)

// ReadUpload reads the document an INGEST_DOCUMENT content_ref names: the
// regular file at ref in the tenant's own directory of the uploads
// directory dir (dir/<tenant_id>/ref), of at most maxBytes bytes. Its bytes
// are then ingested exactly as inline content would be. One tenant's keys
// cannot name another tenant's uploads.
//
// The file is opened through os.Root, so that neither "..", an absolute
// path nor a symbolic link (at any step) leads out of the tenant's
// directory; a link that stays inside is followed. It is opened non-blocking, so that a FIFO
// answers at once instead of waiting for a writer, and what was opened is
// checked to be a regular file (not a directory, FIFO, device or socket)
// before anything is read. A refused or missing file is VALIDATION_ERROR
// naming content_ref, which a retry cannot fix; no uploads directory
// (dir empty) is one too. A failure to read the directory or the file is
// IO_ERROR, retried.
func ReadUpload(dir string, tenantID uuid.UUID, ref string, maxBytes int) ([]byte, error) {
	if dir == "" {
		return nil, errcode.Invalid("content_ref", "uploads are not configured on this service (BPC_UPLOADS_DIR is unset); send the content base64 in content")
	}
	if err := jobargs.CheckContentRef(ref); err != nil {
		return nil, err
	}
	uploads, err := os.OpenRoot(dir)
	if err != nil {
		return nil, errcode.Wrap(errcode.IOError, err, "error opening the uploads directory: %s", err.Error())
	}
	defer uploads.Close()
	// The tenant's entry must be a directory itself: a link (even one that
	// stays in the uploads directory) could name another tenant's.
	entry, err := uploads.Lstat(tenantID.String())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.Invalid("content_ref", "the uploads directory has no directory for this tenant (%s)", tenantID)
	case err != nil:
		return nil, errcode.Invalid("content_ref", "the tenant's uploads directory cannot be opened: %s", rootCause(err))
	case !entry.IsDir():
		return nil, errcode.Invalid("content_ref", "the tenant's entry in the uploads directory is %s, not a directory", fileKind(entry.Mode()))
	}
	root, err := uploads.OpenRoot(tenantID.String())
	if err != nil {
		return nil, errcode.Invalid("content_ref", "the tenant's uploads directory cannot be opened: %s", rootCause(err))
	}
	defer root.Close()
	f, err := root.OpenFile(ref, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.Invalid("content_ref", "no file %q in the uploads directory", ref)
	case err != nil:
		// Escaping the directory, a symbolic link loop, no permission: the
		// reason is in err's text, and a retry would meet it again.
		return nil, errcode.Invalid("content_ref", "%q cannot be opened in the uploads directory: %s", ref, rootCause(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, errcode.Wrap(errcode.IOError, err, "error reading content_ref %q: %s", ref, err.Error())
	}
	if !st.Mode().IsRegular() {
		return nil, errcode.Invalid("content_ref", "%q is not a regular file (%s)", ref, fileKind(st.Mode()))
	}
	if st.Size() > int64(maxBytes) {
		return nil, errcode.Invalid("content_ref", "%q is %d bytes, limit is %d (BPC_PAYLOAD_MAX_BYTES)", ref, st.Size(), maxBytes)
	}
	// Read one byte more than allowed: a file that grew since Stat is
	// refused too.
	b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err != nil {
		return nil, errcode.Wrap(errcode.IOError, err, "error reading content_ref %q: %s", ref, err.Error())
	}
	if len(b) > maxBytes {
		return nil, errcode.Invalid("content_ref", "%q grew past the limit of %d bytes (BPC_PAYLOAD_MAX_BYTES) while it was read", ref, maxBytes)
	}
	if len(b) == 0 {
		return nil, errcode.Invalid("content_ref", "%q is empty", ref)
	}
	return b, nil
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a file"
	}
	return m.Type().String()
}

// rootCause is the reason of a path error, without the path (which names
// the service's directories).
func rootCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}
