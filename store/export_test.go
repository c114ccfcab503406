package store

// VerifyMirroredSQL is verifyMirroredSQL, for TestInBatchTxPlansIndexProbes.
const VerifyMirroredSQL = verifyMirroredSQL

// IdempotencySQL is idempotencySQL, for TestIdempotencyLookupProbesEachKey.
const IdempotencySQL = idempotencySQL

// KeyProbePlansSQL is keyProbePlansSQL, for TestIdempotencyLookupProbesEachKey.
const KeyProbePlansSQL = keyProbePlansSQL
