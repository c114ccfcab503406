package jobrun_test

import "github.com/bpc-platform/bpc/internal/testriver"

// env is what every test env of this package has (a test schema's store and
// a River client on it); the tests of each subject embed it in their own
// env.
type env = testriver.Env
