package api

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
)

// The job endpoints answer jobs by the thousand (a batch enqueue of 1000
// answers 1000 jobs), and encoding/json spent a quarter of such a
// request's CPU on them: every time and raw member goes through its
// MarshalJSON and is then scanned again to compact it. jsonFormat writes
// jobs member by member instead, to the very bytes encoding/json writes
// (SetEscapeHTML(false)); anything this writer does not handle on its own
// (a string that needs escaping, a time RFC 3339 cannot say, a payload
// that is not valid JSON) makes it fall back to encoding/json for the
// whole body, so that the answer, or the error, stays encoding/json's. A
// client can make a body take both paths (one escaped character in a
// job's key), at most twice the cost of writing it, within the body limit.

// jsonFormat is huma.DefaultJSONFormat (SetEscapeHTML(false), one value
// and a newline) with jobs written by appendJob.
var jsonFormat = func() huma.Format {
	f := huma.DefaultJSONFormat
	marshal := f.Marshal
	f.Marshal = func(w io.Writer, v any) error {
		buf := jobBuffers.Get().(*[]byte)
		defer func() {
			// A batch's answer of a few MB is not kept for the next
			// request of one job.
			if cap(*buf) <= maxPooledJobBuffer {
				jobBuffers.Put(buf)
			}
		}()
		if b, ok := appendJobBody((*buf)[:0], v); ok {
			b = append(b, '\n')
			*buf = b
			_, err := w.Write(b)
			return err
		}
		return marshal(w, v)
	}
	return f
}()

// jobBuffers holds the buffers jsonFormat writes jobs into, of at most
// maxPooledJobBuffer bytes.
var jobBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledJobBuffer = 1 << 20

// maxCompactDepth is how deep appendRaw's compactor nests before it leaves
// a payload to json.Compact.
const maxCompactDepth = 1000

// appendJobBody appends v when it is a body of jobs appendJob writes:
// false for any other body, or when a job needs encoding/json.
func appendJobBody(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case bpctype.Job:
		return appendJob(b, &v, nil)
	case items[batchItem]:
		if v.Items == nil {
			return b, false
		}
		// A job takes some 600 bytes: grown once, not a dozen times.
		b = slices.Grow(b, 640*len(v.Items))
		b = append(b, `{"items":[`...)
		for i := range v.Items {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJob(b, &v.Items[i].Job, &v.Items[i].Existing); !ok {
				return b, false
			}
		}
		return append(b, "]}"...), true
	}
	return b, false
}

// appendJob appends j as encoding/json writes a bpctype.Job, followed
// (when existing is not nil) by a batchItem's existing member.
func appendJob(b []byte, j *bpctype.Job, existing *bool) ([]byte, bool) {
	ok := true
	b = append(b, `{"job_id":`...)
	b = appendUUID(b, j.JobID)
	b = append(b, `,"tenant_id":`...)
	b = appendUUID(b, j.TenantID)
	b = append(b, `,"type":`...)
	b, ok = appendString(b, j.Type, ok)
	b = append(b, `,"status":`...)
	b, ok = appendString(b, j.Status, ok)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(j.Priority), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(j.Attempts), 10)
	b = append(b, `,"max_attempts":`...)
	b = strconv.AppendInt(b, int64(j.MaxAttempts), 10)
	b = append(b, `,"idempotency_key":`...)
	b, ok = appendStringPtr(b, j.IdempotencyKey, ok)
	b = append(b, `,"payload":`...)
	b, ok = appendRaw(b, j.Payload, ok)
	b = append(b, `,"queue":`...)
	b, ok = appendString(b, j.Queue, ok)
	b = append(b, `,"scheduled_at":`...)
	b, ok = appendTime(b, j.ScheduledAt, ok)
	b = append(b, `,"started_at":`...)
	b, ok = appendTimePtr(b, j.StartedAt, ok)
	b = append(b, `,"finished_at":`...)
	b, ok = appendTimePtr(b, j.FinishedAt, ok)
	b = append(b, `,"lease_owner":`...)
	b, ok = appendStringPtr(b, j.LeaseOwner, ok)
	b = append(b, `,"lease_expires_at":`...)
	b, ok = appendTimePtr(b, j.LeaseExpiresAt, ok)
	b = append(b, `,"last_error":`...)
	b, ok = appendRaw(b, j.LastError, ok)
	b = append(b, `,"river_job_id":`...)
	b = strconv.AppendInt(b, j.RiverJobID, 10)
	if j.RiverDeletedAt != nil { // omitempty
		b = append(b, `,"river_deleted_at":`...)
		b, ok = appendTime(b, *j.RiverDeletedAt, ok)
	}
	b = append(b, `,"created_at":`...)
	b, ok = appendTime(b, j.CreatedAt, ok)
	b = append(b, `,"updated_at":`...)
	b, ok = appendTime(b, j.UpdatedAt, ok)
	if existing != nil {
		b = append(b, `,"existing":`...)
		b = strconv.AppendBool(b, *existing)
	}
	return append(b, '}'), ok
}

func appendUUID(b []byte, id uuid.UUID) []byte {
	b = append(b, '"')
	b = append(b, make([]byte, 36)...)
	uuidEncode(b[len(b)-36:], id)
	return append(b, '"')
}

// uuidEncode writes id's canonical form into dst (36 bytes), as
// uuid.UUID.MarshalText does.
func uuidEncode(dst []byte, id uuid.UUID) {
	const hexDigits = "0123456789abcdef"
	n := 0
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[n] = '-'
			n++
		}
		dst[n], dst[n+1] = hexDigits[c>>4], hexDigits[c&0xf]
		n += 2
	}
}

// appendString appends s quoted when no byte of it needs escaping (printable
// ASCII but for '"' and '\'); else ok is false.
func appendString(b []byte, s string, ok bool) ([]byte, bool) {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), ok
}

func appendStringPtr(b []byte, s *string, ok bool) ([]byte, bool) {
	if s == nil {
		return append(b, "null"...), ok
	}
	return appendString(b, *s, ok)
}

// appendTime appends t as time.Time.MarshalJSON writes it (strict RFC 3339);
// ok is false when it cannot (a year outside 0–9999).
func appendTime(b []byte, t time.Time, ok bool) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), ok
}

func appendTimePtr(b []byte, t *time.Time, ok bool) ([]byte, bool) {
	if t == nil {
		return append(b, "null"...), ok
	}
	return appendTime(b, *t, ok)
}

// appendRaw appends raw JSON compacted, as encoding/json writes a
// json.RawMessage (null when nil); ok is false when it is not valid JSON.
func appendRaw(b []byte, raw json.RawMessage, ok bool) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), ok
	}
	if c := (compactor{src: raw, dst: b}); c.value(0) && c.end() {
		return c.dst, ok
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, false
	}
	return buf.Bytes(), ok
}

// compactor appends src to dst as json.Compact does (without its HTML
// escapes, as the encoder with SetEscapeHTML(false)): the JSON value
// without the whitespace between its tokens, strings as they are. It is
// json.Compact's own scanner that took most of the time of writing a job
// (a step function called per byte); this one reads a payload in a few
// loops. It answers false for what it leaves to json.Compact: invalid
// JSON, or nesting deeper than maxAnyDepth.
type compactor struct {
	src, dst []byte
	i        int
}

// end skips the whitespace after the value and says whether src ends there.
func (c *compactor) end() bool {
	c.space()
	return c.i == len(c.src)
}

func (c *compactor) space() {
	for c.i < len(c.src) && (c.src[c.i] == ' ' || c.src[c.i] == '\t' || c.src[c.i] == '\n' || c.src[c.i] == '\r') {
		c.i++
	}
}

// token appends src[start:c.i], the token just read.
func (c *compactor) token(start int) bool {
	c.dst = append(c.dst, c.src[start:c.i]...)
	return true
}

func (c *compactor) value(depth int) bool {
	c.space()
	if c.i == len(c.src) {
		return false
	}
	switch c.src[c.i] {
	case '{', '[':
		return c.container(depth + 1)
	case '"':
		return c.string()
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	}
	return c.number()
}

// container reads an object or an array: its members, or elements,
// separated by commas.
func (c *compactor) container(depth int) bool {
	if depth > maxCompactDepth {
		return false
	}
	closing, object := byte(']'), c.src[c.i] == '{'
	if object {
		closing = '}'
	}
	c.dst = append(c.dst, c.src[c.i])
	c.i++
	c.space()
	if c.i < len(c.src) && c.src[c.i] == closing {
		c.dst = append(c.dst, closing)
		c.i++
		return true
	}
	for {
		if object {
			if c.space(); c.i == len(c.src) || c.src[c.i] != '"' || !c.string() {
				return false
			}
			if c.space(); c.i == len(c.src) || c.src[c.i] != ':' {
				return false
			}
			c.dst = append(c.dst, ':')
			c.i++
		}
		if !c.value(depth) {
			return false
		}
		if c.space(); c.i == len(c.src) {
			return false
		}
		switch c.src[c.i] {
		case ',':
			c.dst = append(c.dst, ',')
			c.i++
		case closing:
			c.dst = append(c.dst, closing)
			c.i++
			return true
		default:
			return false
		}
	}
}

// string reads a string, which compacting leaves as it is: any byte but a
// control character, and valid escapes.
func (c *compactor) string() bool {
	start := c.i
	for c.i++; c.i < len(c.src); c.i++ {
		switch ch := c.src[c.i]; {
		case ch == '"':
			c.i++
			return c.token(start)
		case ch < 0x20:
			return false
		case ch == '\\':
			if c.i++; c.i == len(c.src) {
				return false
			}
			switch c.src[c.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if c.i+4 >= len(c.src) {
					return false
				}
				for _, h := range c.src[c.i+1 : c.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				c.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func (c *compactor) literal(lit string) bool {
	if !bytes.HasPrefix(c.src[c.i:], []byte(lit)) {
		return false
	}
	c.i += len(lit)
	return c.token(c.i - len(lit))
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *compactor) number() bool {
	start := c.i
	digits := func() bool {
		k := c.i
		for c.i < len(c.src) && '0' <= c.src[c.i] && c.src[c.i] <= '9' {
			c.i++
		}
		return c.i > k
	}
	if c.src[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(c.src) && c.src[c.i] == '0':
		c.i++
	case !digits():
		return false
	}
	if c.i < len(c.src) && c.src[c.i] == '.' {
		c.i++
		if !digits() {
			return false
		}
	}
	if c.i < len(c.src) && (c.src[c.i] == 'e' || c.src[c.i] == 'E') {
		c.i++
		if c.i < len(c.src) && (c.src[c.i] == '+' || c.src[c.i] == '-') {
			c.i++
		}
		if !digits() {
			return false
		}
	}
	return c.token(start)
}
