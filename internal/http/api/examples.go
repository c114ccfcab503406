package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
)

// The document's request and response examples are not written by hand:
// TestExamplesFromAHappyPath drives the battery maker's walk-through and
// the rest of the API through a real service and database, keeps one
// exchange per operation, and with -update writes them to examples.json
// (ids and times as recorded). addExamples puts them into the document as
// media-type examples by operationId; the tests check that each still
// validates against the document's schemas and that every operation with
// a JSON body has one, so they cannot drift from the API.

// Example is one recorded exchange of an operation: the request as sent
// (path with its query, JSON body if any) and the response's status and
// JSON body (none for a binary or empty one). Shortened says that long
// arrays and strings were cut (a proof's hundreds of nodes, a rule
// package's sources), so that the reference stays readable.
type Example struct {
	Method       string          `json:"method"`
	Path         string          `json:"path"`
	RequestBody  json.RawMessage `json:"request_body,omitempty"`
	Status       int             `json:"status"`
	ResponseBody json.RawMessage `json:"response_body,omitempty"`
	Shortened    bool            `json:"shortened,omitempty"`
}

// ExamplesFile is where the examples are kept, beside this file.
const ExamplesFile = "examples.json"

//go:embed examples.json
var examplesJSON []byte

// Examples are the recorded examples by operationId.
func Examples() (map[string]Example, error) {
	var ex map[string]Example
	dec := json.NewDecoder(bytes.NewReader(examplesJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ex); err != nil {
		return nil, fmt.Errorf("error reading %s: %w", ExamplesFile, err)
	}
	return ex, nil
}

// addExamples puts each operation's recorded example into its JSON request
// body and into the JSON body of the response of the recorded status. An
// example whose operation or status the document no longer has is left
// out here; the tests name it.
func addExamples(doc *huma.OpenAPI) {
	ex, err := Examples()
	if err != nil {
		panic(err.Error())
	}
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch} {
			if op == nil {
				continue
			}
			e, ok := ex[op.OperationID]
			if !ok {
				continue
			}
			summary := "Recorded by the tests: " + e.Method + " " + e.Path
			if e.Shortened {
				summary += " (long arrays and strings shortened)"
			}
			if op.RequestBody != nil && len(e.RequestBody) > 0 {
				setExample(op.RequestBody.Content, summary, e.RequestBody)
			}
			if r := op.Responses[strconv.Itoa(e.Status)]; r != nil && len(e.ResponseBody) > 0 {
				setExample(r.Content, summary, e.ResponseBody)
			}
		}
	}
}

func setExample(content map[string]*huma.MediaType, summary string, value json.RawMessage) {
	mt := content["application/json"]
	if mt == nil {
		return
	}
	mt.Examples = map[string]*huma.Example{"recorded": {Summary: summary, Value: value}}
}
