package service

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

// DevKeyEncryptionKeyFile is where dev keeps the key encryption key it
// generated, beside the admin token scripts/run.sh keeps.
const DevKeyEncryptionKeyFile = ".bpc-dev/key-encryption-key"

// parseKeyEncryptionKey decodes BPC_KEY_ENCRYPTION_KEY; the error names
// the variable and never shows the value.
func parseKeyEncryptionKey(v string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return nil, configError(errcode.Validation, "BPC_KEY_ENCRYPTION_KEY", "must be %d bytes in standard base64 (openssl rand -base64 32); it is not base64", passport.KeyEncryptionKeySize)
	}
	if len(k) != passport.KeyEncryptionKeySize {
		return nil, configError(errcode.Validation, "BPC_KEY_ENCRYPTION_KEY", "must be %d bytes in standard base64 (openssl rand -base64 32), got %d bytes", passport.KeyEncryptionKeySize, len(k))
	}
	return k, nil
}

// loadKeyEncryptionKey reads BPC_KEY_ENCRYPTION_KEY (required in prod).
func (c *Config) loadKeyEncryptionKey(getenv func(string) string, errs []error) []error {
	v := getenv("BPC_KEY_ENCRYPTION_KEY")
	switch {
	case strings.TrimSpace(v) != "":
		k, err := parseKeyEncryptionKey(v)
		if err != nil {
			return append(errs, err)
		}
		c.KeyEncryptionKey, c.KeyEncryptionKeySource, c.keyEncryptionKeyBase64 = k, "env", strings.TrimSpace(v)
	case c.Env == "prod":
		return append(errs, configError(errcode.ConfigMissing, "BPC_KEY_ENCRYPTION_KEY",
			"is required in prod: 32 bytes in standard base64 (openssl rand -base64 32) that encrypt the tenants' signing keys; every process needs the same one, and the stored keys open only with it (docs/OPERATIONS.md: Signing keys)"))
	case c.Env == "test":
		c.KeyEncryptionKey, c.KeyEncryptionKeySource = passport.TestKeyEncryptionKey(), "test-fixed"
	default:
		c.KeyEncryptionKeyFile, c.KeyEncryptionKeySource = DevKeyEncryptionKeyFile, "dev-file"
	}
	return errs
}

// CheckSigningConfig checks the variables a production run signs with:
// BPC_KEY_ENCRYPTION_KEY (present and 32 bytes) and BPC_PUBLIC_BASE_URL
// (present, https, and a base core/qr accepts: LoadConfig's rules). Outside prod it checks only what is set. bpc doctor
// runs it before anything else, so that a prod deployment missing them is
// refused before it serves.
func CheckSigningConfig(getenv func(string) string) error {
	prod := getenv("BPC_ENV") == "prod"
	// LoadConfig's own rule for the key (it only reads variables: the dev
	// file is opened later, by the service).
	c := Config{Env: getenv("BPC_ENV")}
	errs := c.loadKeyEncryptionKey(getenv, nil)
	// The base is checked as LoadConfig checks it (core/qr's rules, https
	// and required in prod), so that doctor passes no base the service
	// would refuse.
	if v := getenv("BPC_PUBLIC_BASE_URL"); strings.TrimSpace(v) != "" || prod {
		_, errs = publicBaseURL(v, getenv("BPC_ENV"), "", errs)
	}
	if len(errs) > 0 {
		return joinConfigErrors(errs)
	}
	return nil
}

// devKeyEncryptionKey reads the dev key encryption key kept in path, or
// generates one and keeps it there (0600, its directory 0700). A file that
// is not 32 bytes in base64 is an error, never replaced: the keys stored
// under it would not open any more.
func devKeyEncryptionKey(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := parseKeyEncryptionKey(string(bytes.TrimSpace(b)))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w (restore it, or set BPC_KEY_ENCRYPTION_KEY)", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("error reading the dev key encryption key: %w", err)
	}
	k := make([]byte, passport.KeyEncryptionKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, false, fmt.Errorf("error generating a key encryption key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("error keeping the dev key encryption key: %w", err)
	}
	// O_EXCL: of two processes starting at once, one writes the key and the
	// other reads it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return devKeyEncryptionKey(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("error keeping the dev key encryption key: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("error keeping the dev key encryption key: %w", err)
	}
	return k, true, nil
}

// keyring resolves the key encryption key (reading or generating dev's)
// and returns the keyring over it with legacy as the platform's signer.
func (c Config) keyring(legacy *passport.Signer) (*passport.Keyring, string, error) {
	kek, source := c.KeyEncryptionKey, c.KeyEncryptionKeySource
	if kek == nil && c.KeyEncryptionKeyFile != "" {
		k, generated, err := devKeyEncryptionKey(c.KeyEncryptionKeyFile)
		if err != nil {
			return nil, "", err
		}
		kek = k
		if generated {
			source = "dev-generated"
		}
	}
	if kek == nil {
		return nil, "", configError(errcode.ConfigMissing, "BPC_KEY_ENCRYPTION_KEY", "is required")
	}
	k, err := passport.NewKeyring(kek, legacy)
	return k, source, err
}
