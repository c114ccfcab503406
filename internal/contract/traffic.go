package contract

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"unicode/utf8"
)

// TrafficDirEnv names the directory the exchanges the validator sees are
// recorded to, for the tools module's contract stage (tools/contract): when
// it is set, every exchange a Validator checks (through Wrap, Transport or
// CheckResponse) is appended as one JSON line to traffic-<pid>-<random>.jsonl
// in that directory (one file per test process), and each document served is
// written once beside it as openapi-<sha256 prefix>.json, named by the
// exchange's Doc. Unset (the default), nothing is recorded and nothing is
// copied.
const TrafficDirEnv = "BPC_CONTRACT_TRAFFIC_DIR"

// MaxRecordedBody is the most bytes of one request or response body an
// exchange keeps; a longer body is cut and marked truncated, so a reader
// skips its body checks.
const MaxRecordedBody = 1 << 20

// Body encodings of an Exchange.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// Exchange is one recorded request and its response (a line of a traffic
// file).
type Exchange struct {
	// Doc is the file name of the document the service served, beside the
	// traffic file.
	Doc  string `json:"doc"`
	Test string `json:"test,omitempty"`

	Method string `json:"method"`
	// URL is the request's path and query as sent (escaped), without host.
	URL                  string      `json:"url"`
	Host                 string      `json:"host,omitempty"`
	RequestHeader        http.Header `json:"request_headers"`
	RequestBody          string      `json:"request_body"`
	RequestBodyEncoding  string      `json:"request_body_encoding"`
	RequestBodyTruncated bool        `json:"request_body_truncated,omitempty"`

	Status                int         `json:"status"`
	ResponseHeader        http.Header `json:"response_headers"`
	ResponseBody          string      `json:"response_body"`
	ResponseBodyEncoding  string      `json:"response_body_encoding"`
	ResponseBodyTruncated bool        `json:"response_body_truncated,omitempty"`
}

// DecodeBody returns the bytes of a body recorded with encoding.
func DecodeBody(body, encoding string) ([]byte, error) {
	if encoding == EncodingBase64 {
		return base64.StdEncoding.DecodeString(body)
	}
	return []byte(body), nil
}

// encodeBody is body as text when it is UTF-8, else base64, cut at
// MaxRecordedBody.
func encodeBody(b []byte) (text, encoding string, truncated bool) {
	if len(b) > MaxRecordedBody {
		b, truncated = b[:MaxRecordedBody], true
	}
	if utf8.Valid(b) {
		return string(b), EncodingUTF8, truncated
	}
	return base64.StdEncoding.EncodeToString(b), EncodingBase64, truncated
}

// recorder appends exchanges to this process's traffic file.
type recorder struct {
	dir string

	mu   sync.Mutex
	file *os.File
	err  error
	docs map[string]bool // document file names already written
}

// traffic is the process's recorder, nil when TrafficDirEnv is unset.
var traffic = sync.OnceValue(newTraffic)

func newTraffic() *recorder {
	dir := os.Getenv(TrafficDirEnv)
	if dir == "" {
		return nil
	}
	return &recorder{dir: dir, docs: map[string]bool{}}
}

// docName is the file name of a document: its content's hash, so that each
// distinct document is written once however many processes serve it.
func docName(spec []byte) string {
	sum := sha256.Sum256(spec)
	return "openapi-" + hex.EncodeToString(sum[:8]) + ".json"
}

// record appends e, and writes its document (spec) the first time.
func (r *recorder) record(spec []byte, e *Exchange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.err = r.write(spec, e)
	return r.err
}

func (r *recorder) write(spec []byte, e *Exchange) error {
	if r.file == nil {
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return fmt.Errorf("error creating %s: %w", TrafficDirEnv, err)
		}
		var suffix [4]byte
		_, _ = rand.Read(suffix[:])
		name := filepath.Join(r.dir, fmt.Sprintf("traffic-%d-%x.jsonl", os.Getpid(), suffix))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("error opening traffic file: %w", err)
		}
		r.file = f
	}
	if !r.docs[e.Doc] {
		// Written to a temporary file and renamed: processes serving the
		// same document may write it at once.
		tmp, err := os.CreateTemp(r.dir, ".openapi-*.tmp")
		if err != nil {
			return fmt.Errorf("error writing the document: %w", err)
		}
		_, werr := tmp.Write(spec)
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("error writing the document: %v %v", werr, cerr)
		}
		if err := os.Rename(tmp.Name(), filepath.Join(r.dir, e.Doc)); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("error writing the document: %w", err)
		}
		r.docs[e.Doc] = true
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("error encoding an exchange: %w", err)
	}
	if _, err := r.file.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("error appending to the traffic file: %w", err)
	}
	return nil
}

// recordExchange records one exchange when recording is on; a failure to
// write fails the test (the contract stage would otherwise judge partial
// traffic).
func (v *Validator) recordExchange(r *recorder, req *http.Request, reqBody []byte, reqTruncated bool,
	status int, header http.Header, body []byte) {
	e := &Exchange{
		Doc:            v.docName,
		Method:         req.Method,
		URL:            req.URL.RequestURI(),
		Host:           req.Host,
		RequestHeader:  req.Header.Clone(),
		Status:         status,
		ResponseHeader: header.Clone(),
	}
	if e.Host == "" {
		e.Host = req.URL.Host
	}
	if v.t != nil {
		e.Test = v.t.Name()
	}
	if req.Method == http.MethodHead {
		body = nil // what a handler writes to HEAD never reaches the client
	}
	var cut bool
	e.RequestBody, e.RequestBodyEncoding, cut = encodeBody(reqBody)
	e.RequestBodyTruncated = reqTruncated || cut
	e.ResponseBody, e.ResponseBodyEncoding, e.ResponseBodyTruncated = encodeBody(body)
	if err := r.record(v.spec, e); err != nil && v.t != nil {
		v.t.Errorf("contract: recording traffic to %s: %v", r.dir, err)
	}
}

// requestBody is a copy of a client request's body, from GetBody (set by
// http.NewRequest for in-memory bodies); truncated when it cannot be had.
func requestBody(req *http.Request) (body []byte, truncated bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, false
	}
	if req.GetBody == nil {
		return nil, true
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, true
	}
	defer rc.Close()
	body, err = io.ReadAll(io.LimitReader(rc, MaxRecordedBody+1))
	return body, err != nil || len(body) > MaxRecordedBody
}

// captureBody keeps a copy of what a handler reads from a request body, up
// to MaxRecordedBody.
type captureBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	read int  // bytes the handler read
	eof  bool // the handler read the body to its end
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if room := MaxRecordedBody - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(n, room)])
	}
	c.read += n
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// finish is the body as far as it is known: when the handler stopped
// before the end (it rejected the request early), the rest is read here,
// within the bound, so that a short body is still recorded whole.
func (c *captureBody) finish() ([]byte, bool) {
	over := c.read > MaxRecordedBody
	if !c.eof && !over {
		rest, err := io.ReadAll(io.LimitReader(c.ReadCloser, int64(MaxRecordedBody-c.buf.Len())+1))
		c.buf.Write(rest)
		if err != nil || c.buf.Len() > MaxRecordedBody {
			return c.buf.Bytes()[:min(c.buf.Len(), MaxRecordedBody)], true
		}
		return c.buf.Bytes(), false
	}
	return c.buf.Bytes(), over
}

// isRecorded says whether an exchange on path belongs to the document (the
// document itself, its page and ignored prefixes are not recorded).
func (v *Validator) isRecorded(path string) bool {
	return !unrouted[path] && !v.isIgnored(path)
}
