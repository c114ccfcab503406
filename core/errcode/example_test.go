package errcode_test

import (
	"errors"
	"fmt"

	"github.com/bpc-platform/bpc/core/errcode"
)

// A failed job attempt stores its error as Encode's one-line JSON; the SSOT
// mirror reads code and message from it into last_error.
func ExampleEncode() {
	err := fmt.Errorf("error compiling: %w", errcode.New(errcode.SnapshotNotReady, "snapshot %s is BUILDING", "5f0c2a57"))
	fmt.Println(errcode.Encode(err))
	fmt.Println(errcode.Encode(errors.New("disk on fire\nsecond line")))
	// Output:
	// {"code":"SNAPSHOT_NOT_READY","message":"snapshot 5f0c2a57 is BUILDING"}
	// {"code":"INTERNAL_ERROR","message":"disk on fire second line"}
}

func ExampleDecode() {
	e, ok := errcode.Decode(`{"code":"WEBHOOK_5XX","message":"endpoint answered HTTP 503"}`)
	fmt.Println(ok, e.Code, e.Retryable(), e.Message)
	_, ok = errcode.Decode("JobCancelError: job cancelled remotely") // River's own text
	fmt.Println(ok)
	// Output:
	// true WEBHOOK_5XX true endpoint answered HTTP 503
	// false
}
