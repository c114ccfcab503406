package contract

// This package's tests serve responses that break the document on purpose:
// they are never recorded as the suite's traffic, whatever TrafficDirEnv
// says. TestTrafficRecording records to a directory of its own.
func init() { traffic = func() *recorder { return nil } }
