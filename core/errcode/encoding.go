package errcode

import (
	"bytes"
	"encoding/json"
)

// A failed job attempt keeps its error as a one-line JSON object,
// {"code":"SNAPSHOT_NOT_READY","message":"…"}: the worker middleware hands
// River an error whose text is Encode's, River stores that text with the
// attempt, and the SSOT mirror reads code and message from it with jsonb
// operators into last_error (SQL bpc_last_error). The lease reaper writes the
// same object in SQL. Decode reads it back in Go.

// attemptError is the stored form; the field order is the text's.
type attemptError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Encode returns the text a job attempt stores for err: {"code","message"}
// as compact JSON on one line, the message as Error's (one line, no control
// characters, HTML characters left readable). An untyped err is
// INTERNAL_ERROR with its text as the message; nil is "".
func Encode(err error) string {
	if err == nil {
		return ""
	}
	a := attemptError{Code: Internal, Message: err.Error()}
	if e := As(err); e != nil {
		a = attemptError{Code: e.Code, Message: e.Message}
	}
	a.Message = oneLine(a.Message)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(a) // two strings: cannot fail
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// Decode reads a text Encode wrote (or the reaper, in SQL) into an Error
// with its code and message. ok is false for any other text: an error River
// wrote itself, or one stored before attempts were encoded.
func Decode(text string) (e *Error, ok bool) {
	var a attemptError
	if json.Unmarshal([]byte(text), &a) != nil || a.Code == "" {
		return nil, false
	}
	return &Error{Code: a.Code, Message: a.Message}, true
}
