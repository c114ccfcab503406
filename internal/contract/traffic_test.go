package contract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const trafficSpec = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},
"components":{"schemas":{"ErrorBody":{"type":"object"}}},
"paths":{"/v1/things":{"get":{"responses":{"201":{"description":"ok","content":{"application/json":{"schema":{}}}}}},"post":{"responses":{
  "201":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}},
  "200":{"description":"bytes","content":{"application/octet-stream":{}}}}}}}}`

// readTraffic is every exchange of every traffic file in dir.
func readTraffic(t *testing.T, dir string) []Exchange {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "traffic-*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one traffic file per process")
	f, err := os.Open(files[0])
	require.NoError(t, err)
	defer f.Close()
	var out []Exchange
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 8*MaxRecordedBody)
	for sc.Scan() {
		var e Exchange
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %s", sc.Text())
		out = append(out, e)
	}
	require.NoError(t, sc.Err())
	return out
}

// Recording on: each exchange through Wrap and CheckResponse is one line
// with what was sent and answered, binary bodies in base64, huge bodies cut
// and marked, and the document is written once beside the traffic.
func TestTrafficRecording(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{dir: dir, docs: map[string]bool{}}
	old := traffic
	traffic = func() *recorder { return rec }
	t.Cleanup(func() { traffic = old })

	v, err := NewFromJSON([]byte(trafficSpec))
	require.NoError(t, err)
	v.t = t
	binary := []byte{0xff, 0x00, 0xfe}
	h := v.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		r.Header.Set("X-Changed-By-Handler", "1") // not what the client sent
		w.Header().Set("X-Correlation-Id", "c1")
		if strings.HasPrefix(string(in), "bin") {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(binary)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"got":`+string(bytes.TrimSpace(in))+`}`)
	}))

	req := httptest.NewRequest(http.MethodPost, "/v1/things?x=1", strings.NewReader(`{"a":"é"}`))
	req.Header.Set("Authorization", "Bearer k")
	h.ServeHTTP(httptest.NewRecorder(), req)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/things", strings.NewReader("bin")))
	// A handler that stops reading early (a rejected body) still records it.
	early := v.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{}`)
	}))
	early.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/things", strings.NewReader(`{"unread":true}`)))
	huge := []byte(`"` + strings.Repeat("a", MaxRecordedBody+10) + `"`)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/things", bytes.NewReader(huge)))
	// HEAD: net/http drops what the handler writes; so does the recording.
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodHead, "/v1/things", nil))
	// The document itself is not part of the traffic.
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, SpecPath, nil))

	// A client's view (the e2e suite's transport).
	srv := httptest.NewServer(h)
	defer srv.Close()
	creq, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/things", strings.NewReader(`{"b":2}`))
	require.NoError(t, err)
	resp, err := v.Transport(http.DefaultTransport).RoundTrip(creq)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"got":{"b":2}}`, string(body), "the client still reads the body")

	ex := readTraffic(t, dir)
	// The server-side Wrap of the last request records it too.
	require.Len(t, ex, 7)
	docs, _ := filepath.Glob(filepath.Join(dir, "openapi-*.json"))
	require.Equal(t, []string{filepath.Join(dir, v.docName)}, docs)
	written, err := os.ReadFile(docs[0])
	require.NoError(t, err)
	require.Equal(t, trafficSpec, string(written))

	e := ex[0]
	require.Equal(t, v.docName, e.Doc)
	require.Equal(t, t.Name(), e.Test)
	require.Equal(t, "POST", e.Method)
	require.Equal(t, "/v1/things?x=1", e.URL)
	require.Equal(t, "Bearer k", e.RequestHeader.Get("Authorization"))
	require.Empty(t, e.RequestHeader.Get("X-Changed-By-Handler"))
	require.Equal(t, `{"a":"é"}`, e.RequestBody)
	require.Equal(t, EncodingUTF8, e.RequestBodyEncoding)
	require.Equal(t, 201, e.Status)
	require.Equal(t, "c1", e.ResponseHeader.Get("X-Correlation-Id"))
	require.JSONEq(t, `{"got":{"a":"é"}}`, e.ResponseBody)
	require.False(t, e.RequestBodyTruncated || e.ResponseBodyTruncated)

	e = ex[1]
	require.Equal(t, 200, e.Status)
	require.Equal(t, EncodingBase64, e.ResponseBodyEncoding)
	got, err := DecodeBody(e.ResponseBody, e.ResponseBodyEncoding)
	require.NoError(t, err)
	require.Equal(t, binary, got)

	require.Equal(t, `{"unread":true}`, ex[2].RequestBody)
	require.False(t, ex[2].RequestBodyTruncated)

	e = ex[3]
	require.True(t, e.RequestBodyTruncated)
	require.Len(t, e.RequestBody, MaxRecordedBody)
	require.True(t, e.ResponseBodyTruncated)

	require.Equal(t, "HEAD", ex[4].Method)
	require.Empty(t, ex[4].ResponseBody)
	require.Equal(t, "c1", ex[4].ResponseHeader.Get("X-Correlation-Id"))

	// ex[5] is the server side, ex[6] the client side of the same exchange.
	for _, e := range ex[5:] {
		require.Equal(t, "/v1/things", e.URL)
		require.Equal(t, `{"b":2}`, e.RequestBody)
		require.False(t, e.RequestBodyTruncated)
		require.JSONEq(t, `{"got":{"b":2}}`, e.ResponseBody)
	}
	require.NotEmpty(t, ex[6].Host)
}

// Recording off: nothing is written and nothing is wrapped.
func TestNoTrafficWithoutTheVariable(t *testing.T) {
	t.Setenv(TrafficDirEnv, "")
	require.Nil(t, newTraffic())
	dir := t.TempDir()
	t.Setenv(TrafficDirEnv, dir)
	require.Equal(t, dir, newTraffic().dir)
}
