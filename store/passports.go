package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// NewPassportVersion is what COMPILE_PASSPORT stores. The id is chosen
// before compiling: the payload and the receipt contain it.
type NewPassportVersion struct {
	PassportVersionID    uuid.UUID
	TenantID             uuid.UUID
	PassportID           uuid.UUID
	SnapshotID           uuid.UUID
	RulePackageVersionID uuid.UUID
	CompilerBuildID      string
	IssuedAt             time.Time
	SigningKeyID         string
	Payload              []byte
	PayloadHash          string
	Proof                []byte
	ProofRootHash        string
	Receipt              []byte
	ReceiptHash          string
	CompileRiverJobID    int64
}

const productColumns = `battery_product_id, tenant_id, sku, name, created_at`

const passportColumns = `passport_id, tenant_id, battery_product_id, active_version_id, created_at, updated_at`

const passportVersionColumns = `passport_version_id, tenant_id, passport_id, version, status, snapshot_id,
	rule_package_version_id, compiler_build_id, issued_at, payload_hash, octet_length(payload) AS payload_bytes,
	proof_root_hash, octet_length(proof) AS proof_bytes, receipt_hash, signature, signing_key_id, signing_public_key,
	qr_payload, compile_river_job_id, created_at, signed_at, qr_generated_at, activated_at, superseded_at`

// CreateBatteryProduct creates a product; a repeated SKU is CONFLICT.
func (q *Queries) CreateBatteryProduct(ctx context.Context, tenantID uuid.UUID, sku, name string) (bpctype.BatteryProduct, error) {
	p, err := create[bpctype.BatteryProduct](ctx, q.db, "battery product", "tenant", tenantID, `INSERT INTO battery_products
		(battery_product_id, tenant_id, sku, name) VALUES ($1, $2, $3, $4)
		RETURNING `+productColumns, uuid.New(), tenantID, sku, name)
	if IsUniqueViolation(err, "battery_products_sku_uniq") {
		return bpctype.BatteryProduct{}, errcode.New(errcode.Conflict, "a battery product with SKU %q exists", sku)
	}
	return p, err
}

// GetBatteryProduct returns the tenant's product.
func (q *Queries) GetBatteryProduct(ctx context.Context, tenantID, id uuid.UUID) (bpctype.BatteryProduct, error) {
	return getOne[bpctype.BatteryProduct](ctx, q.db, "battery product", id,
		`SELECT `+productColumns+` FROM battery_products WHERE tenant_id = $1 AND battery_product_id = $2`, tenantID, id)
}

// ListBatteryProducts returns the tenant's products by SKU.
func (q *Queries) ListBatteryProducts(ctx context.Context, tenantID uuid.UUID) ([]bpctype.BatteryProduct, error) {
	return list[bpctype.BatteryProduct](ctx, q.db, "battery products",
		`SELECT `+productColumns+` FROM battery_products WHERE tenant_id = $1 ORDER BY sku`, tenantID)
}

// CreatePassport creates a passport for a product.
func (q *Queries) CreatePassport(ctx context.Context, tenantID, productID uuid.UUID) (bpctype.Passport, error) {
	return create[bpctype.Passport](ctx, q.db, "passport", "battery product", productID, `INSERT INTO passports
		(passport_id, tenant_id, battery_product_id) VALUES ($1, $2, $3)
		RETURNING `+passportColumns, uuid.New(), tenantID, productID)
}

// GetPassport returns the tenant's passport.
func (q *Queries) GetPassport(ctx context.Context, tenantID, id uuid.UUID) (bpctype.Passport, error) {
	return getOne[bpctype.Passport](ctx, q.db, "passport", id, getPassportSQL, tenantID, id)
}

const getPassportSQL = `SELECT ` + passportColumns + ` FROM passports WHERE tenant_id = $1 AND passport_id = $2`

// ListPassportVersions returns a passport's versions, newest first.
func (q *Queries) ListPassportVersions(ctx context.Context, tenantID, passportID uuid.UUID) ([]bpctype.PassportVersion, error) {
	return list[bpctype.PassportVersion](ctx, q.db, "passport versions",
		`SELECT `+passportVersionColumns+` FROM passport_versions
		WHERE tenant_id = $1 AND passport_id = $2 ORDER BY version DESC`, tenantID, passportID)
}

// InsertPassportVersion stores a compiled version (COMPILING) as the
// passport's next version. A version stored before by the same River job
// (a re-run of a completed compile job) is returned instead, existed = true.
func (q *Queries) InsertPassportVersion(ctx context.Context, in NewPassportVersion) (bpctype.PassportVersion, bool, error) {
	// The parent lock and the insert travel in one round trip: a batch's
	// statements run one after the other, so the insert, which numbers the
	// version, still runs (with a snapshot of its own) once the lock is
	// held. A missing passport fails the lock first; the insert then fails
	// too (its foreign key), unread.
	b := &pgx.Batch{}
	var locked, inserted bool
	b.Queue(`SELECT passport_id FROM passports WHERE tenant_id = $1 AND passport_id = $2 FOR UPDATE`,
		in.TenantID, in.PassportID).QueryRow(func(row pgx.Row) error {
		var id uuid.UUID
		if err := row.Scan(&id); err != nil {
			return notFound(err, "passport", in.PassportID)
		}
		locked = true
		return nil
	})
	// The compile job's key makes a re-run's insert do nothing; the version
	// stored first is then read (the parent lock orders the two).
	var v bpctype.PassportVersion
	b.Queue(`INSERT INTO passport_versions (passport_version_id, tenant_id, passport_id, version, status,
			snapshot_id, rule_package_version_id, compiler_build_id, issued_at, payload, payload_hash, proof, proof_root_hash,
			receipt, receipt_hash, signing_key_id, compile_river_job_id)
		SELECT $1, $2, $3, coalesce(max(version), 0) + 1, 'COMPILING', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15
		FROM passport_versions WHERE passport_id = $3
		ON CONFLICT (compile_river_job_id) DO NOTHING
		RETURNING `+passportVersionColumns,
		in.PassportVersionID, in.TenantID, in.PassportID, in.SnapshotID, in.RulePackageVersionID, in.CompilerBuildID, in.IssuedAt,
		in.Payload, in.PayloadHash, in.Proof, in.ProofRootHash, in.Receipt, in.ReceiptHash, in.SigningKeyID, in.CompileRiverJobID).Query(func(rows pgx.Rows) error {
		var err error
		v, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[bpctype.PassportVersion])
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		inserted = err == nil
		return err
	})
	err := q.db.SendBatch(ctx, b).Close()
	switch {
	case !locked && err != nil:
		return bpctype.PassportVersion{}, false, err // the lock's NOT_FOUND, or the batch's failure
	case err != nil:
		return bpctype.PassportVersion{}, false, fmt.Errorf("error storing passport version: %w", err)
	case !inserted:
		existing, err := getOne[bpctype.PassportVersion](ctx, q.db, "passport version of River job", in.CompileRiverJobID, `SELECT `+passportVersionColumns+`
			FROM passport_versions WHERE compile_river_job_id = $1`, in.CompileRiverJobID)
		return existing, err == nil, err
	}
	return v, false, nil
}

// PassportVersionByCompileJob returns the version a River compile job
// stored, if any (ErrNotFound otherwise).
func (q *Queries) PassportVersionByCompileJob(ctx context.Context, tenantID uuid.UUID, riverJobID int64) (bpctype.PassportVersion, error) {
	return getOne[bpctype.PassportVersion](ctx, q.db, "passport version of River job", riverJobID,
		passportVersionByCompileJobSQL, tenantID, riverJobID)
}

const passportVersionByCompileJobSQL = `SELECT ` + passportVersionColumns + ` FROM passport_versions
	WHERE tenant_id = $1 AND compile_river_job_id = $2`

// GetPassportVersion returns the tenant's passport version without artifacts.
func (q *Queries) GetPassportVersion(ctx context.Context, tenantID, id uuid.UUID) (bpctype.PassportVersion, error) {
	return q.passportVersion(ctx, tenantID, id, "")
}

// LockPassportVersion returns a version locked FOR UPDATE.
func (q *Queries) LockPassportVersion(ctx context.Context, tenantID, id uuid.UUID) (bpctype.PassportVersion, error) {
	return q.passportVersion(ctx, tenantID, id, " FOR UPDATE")
}

func (q *Queries) passportVersion(ctx context.Context, tenantID, id uuid.UUID, lock string) (bpctype.PassportVersion, error) {
	return getOne[bpctype.PassportVersion](ctx, q.db, "passport version", id,
		`SELECT `+passportVersionColumns+` FROM passport_versions
		WHERE tenant_id = $1 AND passport_version_id = $2`+lock, tenantID, id)
}

// LockPassportVersionReceipt returns a version locked FOR UPDATE with its
// unsigned receipt: what signing reads, without the payload and proof.
func (q *Queries) LockPassportVersionReceipt(ctx context.Context, tenantID, id uuid.UUID) (bpctype.PassportVersion, []byte, error) {
	type withReceipt struct {
		bpctype.PassportVersion
		Receipt []byte `db:"receipt"`
	}
	v, err := getOne[withReceipt](ctx, q.db, "passport version", id,
		`SELECT `+passportVersionColumns+`, receipt FROM passport_versions
		WHERE tenant_id = $1 AND passport_version_id = $2 FOR UPDATE`, tenantID, id)
	return v.PassportVersion, v.Receipt, err
}

// LockPassportVersionForEvent is LockPassportVersion and the head of the
// event chain of aggregate (aggregateType, the version's id), read after
// the lock is held in the same round trip: what a step that appends an
// event about the version reads first.
func (q *Queries) LockPassportVersionForEvent(ctx context.Context, tenantID, id uuid.UUID, aggregateType string) (bpctype.PassportVersion, Head, error) {
	l, err := q.lockPassportVersionFor(ctx, tenantID, id, aggregateType, false)
	return l.Version, l.Head, err
}

// VersionToSign is what signing a version reads: the version (locked), its
// unsigned receipt, its event chain's head and the signing key its row
// names (nil when no key has that id).
type VersionToSign struct {
	Version bpctype.PassportVersion
	Receipt []byte
	Head    Head
	Key     *TenantSigningKey
}

// LockPassportVersionToSign is LockPassportVersionReceipt, the head of the
// event chain of aggregate (aggregateType, the version's id) and the
// signing key the version's row names (GetSigningKey), in one round trip,
// the reads after the lock.
func (q *Queries) LockPassportVersionToSign(ctx context.Context, tenantID, id uuid.UUID, aggregateType string) (VersionToSign, error) {
	return q.lockPassportVersionFor(ctx, tenantID, id, aggregateType, true)
}

func lockedOrNotFound(err error, id uuid.UUID) error {
	if err != nil {
		return notFound(err, "passport version", id)
	}
	return nil
}

func (q *Queries) lockPassportVersionFor(ctx context.Context, tenantID, id uuid.UUID, aggregateType string, toSign bool) (VersionToSign, error) {
	var l VersionToSign
	b := &pgx.Batch{}
	if !toSign {
		b.Queue(`SELECT `+passportVersionColumns+` FROM passport_versions
			WHERE tenant_id = $1 AND passport_version_id = $2 FOR UPDATE`, tenantID, id).Query(func(rows pgx.Rows) error {
			v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[bpctype.PassportVersion])
			l.Version = v
			return lockedOrNotFound(err, id)
		})
	} else {
		b.Queue(`SELECT `+passportVersionColumns+`, receipt FROM passport_versions
			WHERE tenant_id = $1 AND passport_version_id = $2 FOR UPDATE`, tenantID, id).Query(func(rows pgx.Rows) error {
			type withReceipt struct {
				bpctype.PassportVersion
				Receipt []byte `db:"receipt"`
			}
			r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[withReceipt])
			l.Version, l.Receipt = r.PassportVersion, r.Receipt
			return lockedOrNotFound(err, id)
		})
	}
	queueChainHead(b, tenantID, aggregateType, id, &l.Head)
	if toSign {
		b.Queue(`SELECT `+tenantSigningKeyColumns+` FROM signing_keys WHERE key_id = (
			SELECT signing_key_id FROM passport_versions WHERE tenant_id = $1 AND passport_version_id = $2)`, tenantID, id).Query(func(rows pgx.Rows) error {
			k, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[TenantSigningKey])
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			l.Key = &k
			return err
		})
	}
	if err := q.db.SendBatch(ctx, b).Close(); err != nil {
		return VersionToSign{}, err
	}
	return l, nil
}

// LoadPassportArtifacts returns a version's stored bytes.
func (q *Queries) LoadPassportArtifacts(ctx context.Context, tenantID, id uuid.UUID) (bpctype.PassportArtifacts, error) {
	return getOne[bpctype.PassportArtifacts](ctx, q.db, "passport version", id,
		`SELECT payload, proof, receipt, receipt_signed, qr_png FROM passport_versions
		WHERE tenant_id = $1 AND passport_version_id = $2`, tenantID, id)
}

// SetPassportVersionSigned stores the signature and moves COMPILING → SIGNED.
func (q *Queries) SetPassportVersionSigned(ctx context.Context, tenantID, id uuid.UUID, signature, keyID, publicKey string, receiptSigned []byte) error {
	tag, err := q.db.Exec(ctx, `UPDATE passport_versions SET status = 'SIGNED', signature = $3, signing_key_id = $4,
			signing_public_key = $5, receipt_signed = $6, signed_at = now()
		WHERE tenant_id = $1 AND passport_version_id = $2 AND status = 'COMPILING'`,
		tenantID, id, signature, keyID, publicKey, receiptSigned)
	if err != nil {
		return fmt.Errorf("error storing the signature of passport version %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return errcode.New(errcode.InvalidState, "passport version %s is not COMPILING", id)
	}
	return nil
}

// SetPassportVersionQR stores the QR payload and PNG of a SIGNED version.
func (q *Queries) SetPassportVersionQR(ctx context.Context, tenantID, id uuid.UUID, payload string, png []byte) error {
	tag, err := q.db.Exec(ctx, `UPDATE passport_versions SET qr_payload = $3, qr_png = $4, qr_generated_at = now()
		WHERE tenant_id = $1 AND passport_version_id = $2 AND status = 'SIGNED'`, tenantID, id, payload, png)
	if err != nil {
		return fmt.Errorf("error storing the QR code of passport version %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return errcode.New(errcode.InvalidState, "passport version %s is not SIGNED", id)
	}
	return nil
}

// SetPassportVersionActive writes version id of passport passportID as
// ACTIVE and the passport's ACTIVE version before it, if any, as
// SUPERSEDED, under the passport's row lock. It returns the activated
// version and the superseded one's id (nil if none). The caller decided the
// version may be activated and holds its lock.
func (q *Queries) SetPassportVersionActive(ctx context.Context, tenantID, passportID, id uuid.UUID) (bpctype.PassportVersion, *uuid.UUID, error) {
	var previous *uuid.UUID
	if err := q.db.QueryRow(ctx, `SELECT active_version_id FROM passports WHERE tenant_id = $1 AND passport_id = $2 FOR UPDATE`,
		tenantID, passportID).Scan(&previous); err != nil {
		return bpctype.PassportVersion{}, nil, notFound(err, "passport", passportID)
	}
	if _, err := q.db.Exec(ctx, `UPDATE passport_versions SET status = 'SUPERSEDED', superseded_at = now()
		WHERE tenant_id = $1 AND passport_id = $2 AND status = 'ACTIVE'`, tenantID, passportID); err != nil {
		return bpctype.PassportVersion{}, nil, fmt.Errorf("error superseding the active version: %w", err)
	}
	if _, err := q.db.Exec(ctx, `UPDATE passport_versions SET status = 'ACTIVE', activated_at = now()
		WHERE tenant_id = $1 AND passport_version_id = $2`, tenantID, id); err != nil {
		return bpctype.PassportVersion{}, nil, fmt.Errorf("error activating passport version %s: %w", id, err)
	}
	if _, err := q.db.Exec(ctx, `UPDATE passports SET active_version_id = $3, updated_at = now()
		WHERE tenant_id = $1 AND passport_id = $2`, tenantID, passportID, id); err != nil {
		return bpctype.PassportVersion{}, nil, fmt.Errorf("error updating passport %s: %w", passportID, err)
	}
	v, err := q.passportVersion(ctx, tenantID, id, "")
	return v, previous, err
}

const exportColumns = `passport_export_id, tenant_id, passport_version_id, format, path, size_bytes, sha256, river_job_id, created_at`

// RecordPassportExport stores an export. The same River job recording again
// (a re-run rewrote the file) updates its row's path, size and SHA-256 and
// keeps its id.
func (q *Queries) RecordPassportExport(ctx context.Context, e bpctype.PassportExport) (bpctype.PassportExport, error) {
	out, err := queryOne[bpctype.PassportExport](ctx, q.db, `INSERT INTO passport_exports (passport_export_id, tenant_id, passport_version_id, format, path,
			size_bytes, sha256, river_job_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (river_job_id) DO UPDATE SET path = EXCLUDED.path, size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256
		RETURNING `+exportColumns,
		uuid.New(), e.TenantID, e.PassportVersionID, e.Format, e.Path, e.SizeBytes, e.SHA256, e.RiverJobID)
	if err != nil {
		return bpctype.PassportExport{}, fmt.Errorf("error recording export: %w", err)
	}
	return out, nil
}

// ListPassportExports returns a version's exports, newest first.
func (q *Queries) ListPassportExports(ctx context.Context, tenantID, versionID uuid.UUID) ([]bpctype.PassportExport, error) {
	return list[bpctype.PassportExport](ctx, q.db, "exports",
		`SELECT `+exportColumns+` FROM passport_exports
		WHERE tenant_id = $1 AND passport_version_id = $2 ORDER BY created_at DESC, passport_export_id`, tenantID, versionID)
}
