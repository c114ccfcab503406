package passport

import (
	"context"
	"crypto/ed25519"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// SignPassportVersion signs a COMPILING version's receipt hash (the 32 raw
// bytes) with Ed25519, with the key the receipt names (Keyring.SigningKeyFor:
// the tenant's own key, active or retired, or the platform's legacy key for
// a version compiled before tenants had keys), stores the signature, the
// key id and public key and the signed receipt, moves the version to
// SIGNED, records passport.signed and enqueues its GENERATE_QR. A version
// signed before only gets its GENERATE_QR made sure of. A revoked key is
// KEY_REVOKED; a key this service cannot use is SIGNING_KEY_MISSING; the
// receipt must hash to the version's receipt_hash.
func SignPassportVersion(ctx context.Context, t Tx, keys *Keyring, tenantID, versionID uuid.UUID) error {
	l, err := t.Q.LockPassportVersionToSign(ctx, tenantID, versionID, AggregatePassportVersion)
	if err != nil {
		return err
	}
	v, unsigned, head := l.Version, l.Receipt, l.Head
	if v.Status != bpctype.PassportCompiling {
		return enqueueQR(ctx, t, tenantID, versionID)
	}
	r, err := receipt.Parse(unsigned)
	if err != nil {
		return err
	}
	keyID := r.SigningKeyID
	var key ed25519.PrivateKey
	var publicKey string
	if l.Key != nil && l.Key.KeyID == keyID {
		// The key the version's row names, read with it: the receipt names
		// the same one (the row's signing_key_id is the receipt's).
		key, publicKey, err = keys.SigningKeyOf(*l.Key, tenantID)
	} else {
		key, publicKey, err = keys.SigningKeyFor(ctx, t.Q, tenantID, keyID)
	}
	if err != nil {
		return err
	}
	hexHash, raw, err := receipt.Hash(r)
	if err != nil {
		return err
	}
	if hexHash != v.ReceiptHash {
		return errcode.New(errcode.SignatureInvalid, "the stored receipt does not hash to the version's receipt_hash")
	}
	r.Signature = sign.SignatureBase64(sign.SignHash(key, raw))
	signed, err := receipt.SignedCanonical(r)
	if err != nil {
		return err
	}
	if err := t.Q.SetPassportVersionSigned(ctx, tenantID, versionID, r.Signature, keyID, publicKey, signed); err != nil {
		return err
	}
	if err := t.EventAfter(ctx, &head, tenantID, AggregatePassportVersion, versionID, EventSigned,
		map[string]any{"signing_key_id": keyID, "receipt_hash": v.ReceiptHash}); err != nil {
		return err
	}
	return enqueueQR(ctx, t, tenantID, versionID)
}

func enqueueQR(ctx context.Context, t Tx, tenantID, versionID uuid.UUID) error {
	return t.EnqueueNext(ctx, &jobargs.GenerateQRArgs{Base: jobargs.Base{TenantID: tenantID}, PassportVersionID: versionID},
		"qr:"+versionID.String())
}

// QRCode is a version's QR payload (a BPC-QR-2 link since links were
// introduced; versions issued before keep their BPC-QR-1 payload) and its
// PNG.
type QRCode struct {
	Payload string
	PNG     []byte
}

// RenderQR renders a version's QR code (error correction M) from its
// hashes: the BPC-QR-2 link to its public page under baseURL, the
// service's public base URL (BPC_PUBLIC_BASE_URL). It holds no
// transaction. An empty base is CONFIG_MISSING, an invalid one a
// VALIDATION_ERROR naming base_url.
func RenderQR(baseURL string, v bpctype.PassportVersion) (QRCode, error) {
	if baseURL == "" {
		return QRCode{}, errcode.New(errcode.ConfigMissing, "the public base URL (BPC_PUBLIC_BASE_URL) the QR code links to is not known")
	}
	payload, err := qr.Link(baseURL, v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	if err != nil {
		return QRCode{}, err
	}
	png, err := qr.PNG(payload)
	if err != nil {
		return QRCode{}, err
	}
	return QRCode{Payload: payload, PNG: png}, nil
}

// RecordQR stores a SIGNED version's QR code and records
// passport.qr_generated; the status stays SIGNED. A version that has its
// QR code already is left as it is.
func RecordQR(ctx context.Context, t Tx, tenantID, versionID uuid.UUID, code QRCode) error {
	v, head, err := t.Q.LockPassportVersionForEvent(ctx, tenantID, versionID, AggregatePassportVersion)
	if err != nil {
		return err
	}
	if v.QRPayload != nil {
		return nil
	}
	if v.Status != bpctype.PassportSigned {
		return errcode.New(errcode.InvalidState, "passport version %s is %s, not SIGNED", versionID, v.Status)
	}
	if err := t.Q.SetPassportVersionQR(ctx, tenantID, versionID, code.Payload, code.PNG); err != nil {
		return err
	}
	return t.EventAfter(ctx, &head, tenantID, AggregatePassportVersion, versionID, EventQRGenerated, map[string]any{"qr_payload": code.Payload})
}

// MarkPassportVersionActive makes a SIGNED version with a QR code the
// passport's ACTIVE version and supersedes the previous ACTIVE one. It
// returns the activated version and the superseded one's id (nil if none).
// Activating the ACTIVE version again changes nothing (changed is false).
// It records no event (ActivatePassportVersion does).
func MarkPassportVersionActive(ctx context.Context, q *store.Queries, tenantID, id uuid.UUID) (v bpctype.PassportVersion, previous *uuid.UUID, changed bool, err error) {
	v, err = q.LockPassportVersion(ctx, tenantID, id)
	if err != nil {
		return bpctype.PassportVersion{}, nil, false, err
	}
	if v.Status == bpctype.PassportActive {
		return v, nil, false, nil
	}
	if v.Status != bpctype.PassportSigned || v.QRPayload == nil {
		return bpctype.PassportVersion{}, nil, false, errcode.New(errcode.InvalidState,
			"passport version %s is %s%s; only a SIGNED version with its QR code can be activated",
			id, v.Status, map[bool]string{true: " without a QR code", false: ""}[v.Status == bpctype.PassportSigned])
	}
	v, previous, err = q.SetPassportVersionActive(ctx, tenantID, v.PassportID, id)
	return v, previous, true, err
}

// ActivatePassportVersion activates a SIGNED version with its QR code,
// superseding the passport's previous ACTIVE version, and records
// passport.activated (and passport.superseded for the previous one).
// Activating the ACTIVE version again changes nothing.
func ActivatePassportVersion(ctx context.Context, t Tx, tenantID, versionID uuid.UUID) (bpctype.PassportVersion, error) {
	v, previous, changed, err := MarkPassportVersionActive(ctx, t.Q, tenantID, versionID)
	if err != nil || !changed {
		return v, err
	}
	if err := t.Event(ctx, tenantID, AggregatePassportVersion, versionID, EventPassportActivated, map[string]any{
		"passport_id": v.PassportID, "superseded_version_id": previous,
	}); err != nil {
		return v, err
	}
	if previous == nil || *previous == versionID {
		return v, nil
	}
	return v, t.Event(ctx, tenantID, AggregatePassportVersion, *previous, EventPassportSuperseded, map[string]any{
		"passport_id": v.PassportID, "superseded_by_version_id": versionID,
	})
}
