package store

// VerifyMirroredSQL is verifyMirroredSQL, for TestInBatchTxPlansIndexProbes.
const VerifyMirroredSQL = verifyMirroredSQL
