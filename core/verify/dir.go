package verify

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
)

// The files of an artifact directory.
const (
	FileQRPayload    = "qr-payload.txt"
	FileQRPNG        = "qr.png"
	FilePayload      = "payload.json"
	FileProof        = "proof.json"
	FileReceipt      = "receipt.json"
	FileSigningKey   = "signing-key.json"
	FilePublicKeyPEM = "public-key.pem"
	FileReceiptHash  = "receipt-hash.bin"
	FileSignature    = "signature.bin"
)

// File is one file of an artifact directory.
type File struct {
	Name string
	Data []byte
}

// member is a file of an artifact directory and the member of Artifacts that
// holds it.
type member struct {
	name     string
	data     *[]byte
	optional bool
}

// files lists the files of an artifact directory besides the QR payload.
func (a *Artifacts) files() []member {
	return []member{
		{FilePayload, &a.Payload, false},
		{FileProof, &a.Proof, false},
		{FileReceipt, &a.Receipt, false},
		{FileSigningKey, &a.SigningKey, false},
		{FileQRPNG, &a.QRPNG, true},
		{FilePublicKeyPEM, &a.PublicKeyPEM, true},
		{FileReceiptHash, &a.ReceiptHash, true},
		{FileSignature, &a.Signature, true},
	}
}

// Files lays a out as the files of an artifact directory: one per non-empty
// member, its bytes as they are.
func (a Artifacts) Files() []File {
	var out []File
	if a.QRPayload != "" {
		out = append(out, File{FileQRPayload, []byte(a.QRPayload)})
	}
	for _, f := range a.files() {
		if len(*f.data) > 0 {
			out = append(out, File{f.name, *f.data})
		}
	}
	return out
}

// ReadDir reads an artifact directory (e.g. os.DirFS(dir)). The QR payload,
// payload, proof, receipt and key document are required; a missing qr.png or
// detached copy stays nil, which Verify takes as absent.
func ReadDir(fsys fs.FS) (Artifacts, error) {
	var a Artifacts
	qp, err := fs.ReadFile(fsys, FileQRPayload)
	if err != nil {
		return a, err
	}
	a.QRPayload = string(qp)
	for _, f := range a.files() {
		b, err := fs.ReadFile(fsys, f.name)
		switch {
		case err == nil:
			if b == nil {
				b = []byte{} // present, though empty
			}
			*f.data = b
		case f.optional && errors.Is(err, fs.ErrNotExist):
		default:
			return a, err
		}
	}
	return a, nil
}

// Detach sets the detached copies from the receipt and the key document: the
// public key as PEM, the 32 raw bytes of receipt_hash and the raw signature.
func (a *Artifacts) Detach() error {
	key, err := ParseKeyDocument(a.SigningKey)
	if err != nil {
		return fmt.Errorf("the key document: %w", err)
	}
	r, err := receipt.Parse(a.Receipt)
	if err != nil {
		return fmt.Errorf("the receipt is not a valid %s: %w", receipt.Version, err)
	}
	if r.Signature == "" {
		return errors.New("the receipt is not signed")
	}
	_, raw, err := receipt.Hash(r)
	if err != nil {
		return err
	}
	sig, err := sign.ParseSignature(r.Signature)
	if err != nil {
		return fmt.Errorf("the receipt's signature: %w", err)
	}
	pemKey, err := publicKeyPEM(key.PublicKey)
	if err != nil {
		return err
	}
	a.PublicKeyPEM, a.ReceiptHash, a.Signature = pemKey, raw[:], sig
	return nil
}
