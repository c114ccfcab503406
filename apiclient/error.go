package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Error is a response outside 2xx: the request, the HTTP status and, when the
// body is the service's error envelope {"error": {code, message,
// correlation_id, details}}, its members; otherwise the start of the body.
type Error struct {
	Method        string
	Path          string
	Status        int
	Code          string
	Message       string
	CorrelationID string
	Details       map[string]any
	// Body is the start of a body that is not an error envelope.
	Body string
}

// Error is one line: request, status, then code, message, details and
// correlation id, or the start of the body.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
		if len(e.Details) > 0 {
			if d, err := json.Marshal(e.Details); err == nil {
				fmt.Fprintf(&b, " %s", d)
			}
		}
		if e.CorrelationID != "" {
			fmt.Fprintf(&b, " (correlation_id %s)", e.CorrelationID)
		}
	} else if e.Body != "" {
		fmt.Fprintf(&b, ": %s", e.Body)
	}
	return b.String()
}

// IsStatus reports whether err is an *Error with the HTTP status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// HasCode reports whether err is an *Error with the error code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

func newError(method, path string, status int, body []byte) *Error {
	e := &Error{Method: method, Path: path, Status: status}
	var env struct {
		Error *struct {
			Code          string         `json:"code"`
			Message       string         `json:"message"`
			CorrelationID string         `json:"correlation_id"`
			Details       map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		e.CorrelationID, e.Details = env.Error.CorrelationID, env.Error.Details
	} else {
		e.Body = Snippet(body)
	}
	return e
}
