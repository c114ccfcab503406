package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of New.
const (
	DefaultJobTimeout     = 60 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultPollInterval   = 250 * time.Millisecond
)

// MaxBody caps a response body, passport payloads and exports included.
const MaxBody = 64 << 20

// Client calls the admin API of one service for one tenant. Its members may
// be changed before the first call, not during calls.
type Client struct {
	// BaseURL is the service's URL, without a trailing slash.
	BaseURL string
	// Token is sent as Authorization: Bearer (none when empty: the public
	// routes).
	Token string
	// TenantID is the tenant TenantPath adds to query strings.
	TenantID string
	// HTTP sends the requests.
	HTTP *http.Client
	// JobTimeout bounds every wait: one job, or one state to reach.
	JobTimeout time.Duration
	// RequestTimeout bounds one request (plus wait_ms for a long poll).
	RequestTimeout time.Duration
	// PollInterval is the delay between polls of a state, and the least
	// time between two long polls of a job.
	PollInterval time.Duration
}

// New returns a client of the service at baseURL with the default timeouts.
func New(baseURL, token, tenantID string) *Client {
	return &Client{
		BaseURL:        strings.TrimRight(baseURL, "/"),
		Token:          token,
		TenantID:       tenantID,
		HTTP:           &http.Client{},
		JobTimeout:     DefaultJobTimeout,
		RequestTimeout: DefaultRequestTimeout,
		PollInterval:   DefaultPollInterval,
	}
}

// Path joins segments to prefix, escaping each: Path("/v1/jobs", id).
func Path(prefix string, segments ...string) string {
	p := prefix
	for _, s := range segments {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// TenantPath adds ?tenant_id= and the key/value pairs kv to path.
func (c *Client) TenantPath(path string, kv ...string) string {
	q := url.Values{}
	q.Set("tenant_id", c.TenantID)
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return path + "?" + q.Encode()
}

// Do sends a request with body (JSON-encoded unless nil) and decodes a 2xx
// response into out: JSON unless out is a *[]byte, which receives the raw
// body; nothing when out is nil. A response outside 2xx is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.send(ctx, method, path, body, out, c.RequestTimeout)
	return err
}

// send is Do with a timeout of its own; it returns the HTTP status.
func (c *Client) send(ctx context.Context, method, path string, body, out any, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("%s %s: error encoding the request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: error reading the response: %w", method, path, err)
	}
	if len(raw) > MaxBody {
		return resp.StatusCode, fmt.Errorf("%s %s: response larger than %d bytes", method, path, MaxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, newError(method, path, resp.StatusCode, raw)
	}
	switch o := out.(type) {
	case nil:
	case *[]byte:
		*o = raw
	default:
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: HTTP %d with a body that does not decode: %w (body: %s)",
				method, path, resp.StatusCode, err, Snippet(raw))
		}
	}
	return resp.StatusCode, nil
}

// Snippet is the start of a response body (or of any JSON the API returned)
// on one line, for an error message.
func Snippet(b []byte) string {
	const max = 300
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
