-- A compile stores its version's payload and proof (about 150 KB for the
-- NMC811 sample, mostly hashes) in the transaction that completes its job,
-- so their compression is on every passport's pipeline. Postgres compresses
-- large values with pglz by default; lz4 compresses these about three times
-- faster to about the same size (2 cores, Postgres 15, 200 copies of the
-- sample's proof: pglz 0.86–1.33 s, lz4 0.28–0.38 s; 13 MB and 12 MB).
-- Only values written from now on use lz4; stored ones read as before. A
-- server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE passport_versions
        ALTER COLUMN payload SET COMPRESSION lz4,
        ALTER COLUMN proof SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available: passport artifacts stay pglz-compressed';
END
$$;
