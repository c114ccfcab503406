package service

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

func kekEnv(vars map[string]string) func(string) string {
	return func(k string) string {
		switch {
		case vars[k] != "":
			return vars[k]
		case k == "DATABASE_URL":
			return "postgres://x"
		case k == "BPC_ADMIN_TOKEN":
			return "0123456789abcdef0123"
		case k == "BPC_PUBLIC_BASE_URL":
			return "https://passports.example.com"
		}
		return ""
	}
}

// BPC_KEY_ENCRYPTION_KEY: required in prod, 32 bytes of base64, never
// echoed; test uses the fixed public test key, dev a file of its own.
func TestKeyEncryptionKeyConfig(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, 32))

	_, err := LoadConfig(kekEnv(map[string]string{"BPC_ENV": "prod"}))
	require.Equal(t, errcode.ConfigMissing, errcode.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "BPC_KEY_ENCRYPTION_KEY: is required in prod")

	cfg, err := LoadConfig(kekEnv(map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": good}))
	require.NoError(t, err)
	require.Equal(t, bytes.Repeat([]byte{0x42}, 32), cfg.KeyEncryptionKey)
	require.Equal(t, "env", cfg.KeyEncryptionKeySource)
	require.Contains(t, cfg.secrets(), good, "the log redacts it")

	for name, bad := range map[string]string{
		"16 bytes":   base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x43}, 16)),
		"33 bytes":   base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x44}, 33)),
		"not base64": "this-is-a-secret-passphrase-not-base64!",
		"url base64": base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)),
	} {
		for _, env := range []string{"prod", "test", "dev"} {
			_, err := LoadConfig(kekEnv(map[string]string{"BPC_ENV": env, "BPC_KEY_ENCRYPTION_KEY": bad}))
			require.Equal(t, errcode.Validation, errcode.CodeOf(err), "%s %s: %v", name, env, err)
			require.Contains(t, err.Error(), "BPC_KEY_ENCRYPTION_KEY", name)
			require.NotContains(t, err.Error(), bad, "%s: the value is never echoed", name)
		}
	}

	cfg, err = LoadConfig(kekEnv(map[string]string{"BPC_ENV": "test"}))
	require.NoError(t, err)
	require.Equal(t, passport.TestKeyEncryptionKey(), cfg.KeyEncryptionKey)
	require.Equal(t, "test-fixed", cfg.KeyEncryptionKeySource)

	cfg, err = LoadConfig(kekEnv(map[string]string{"BPC_ENV": "dev"}))
	require.NoError(t, err)
	require.Nil(t, cfg.KeyEncryptionKey, "read or generated at start, not by LoadConfig")
	require.Equal(t, DevKeyEncryptionKeyFile, cfg.KeyEncryptionKeyFile)
}

// Dev generates its key encryption key once, keeps it 0600 and reads it
// back; a damaged file stops the start rather than being replaced.
func TestDevKeyEncryptionKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".bpc-dev", "key-encryption-key")
	first, generated, err := devKeyEncryptionKey(path)
	require.NoError(t, err)
	require.True(t, generated)
	require.Len(t, first, 32)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	dir, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dir.Mode().Perm())

	again, generated, err := devKeyEncryptionKey(path)
	require.NoError(t, err)
	require.False(t, generated)
	require.Equal(t, first, again, "a restart opens the keys it stored")

	cfg := Config{KeyEncryptionKeyFile: path, KeyEncryptionKeySource: "dev-file"}
	ring, source, err := cfg.keyring(nil)
	require.NoError(t, err)
	require.NotNil(t, ring)
	require.Equal(t, "dev-file", source)

	require.NoError(t, os.WriteFile(path, []byte("damaged"), 0o600))
	_, _, err = devKeyEncryptionKey(path)
	require.ErrorContains(t, err, "BPC_KEY_ENCRYPTION_KEY")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "damaged", string(b), "never replaced: the keys stored under it would not open")
}

// bpc doctor's check of a production run's signing variables.
func TestCheckSigningConfig(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(make([]byte, 32))
	check := func(vars map[string]string) error {
		return CheckSigningConfig(func(k string) string { return vars[k] })
	}
	err := check(map[string]string{"BPC_ENV": "prod"})
	require.Equal(t, errcode.ConfigMissing, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "BPC_KEY_ENCRYPTION_KEY")
	require.Contains(t, err.Error(), "BPC_PUBLIC_BASE_URL")
	require.NoError(t, check(map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": good, "BPC_PUBLIC_BASE_URL": "https://p.example.com"}))
	err = check(map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": good, "BPC_PUBLIC_BASE_URL": "http://p.example.com"})
	require.ErrorContains(t, err, "BPC_PUBLIC_BASE_URL: must be https in prod")
	// The base URL's rules are LoadConfig's (core/qr.CheckBaseURL): an
	// https URL that breaks one is refused by doctor too, in prod or not,
	// without echoing the value.
	for _, bad := range []string{"https://p.example.com/a?b=1", "https://user:pw@p.example.com", "https://P.Example.com",
		"https://p.example.com/a//b", "https://p.example.com:0", "https://" + strings.Repeat("a", 100) + ".example.com"} {
		for _, env := range []string{"prod", "dev"} {
			err = check(map[string]string{"BPC_ENV": env, "BPC_KEY_ENCRYPTION_KEY": good, "BPC_PUBLIC_BASE_URL": bad})
			require.Equal(t, errcode.Validation, errcode.CodeOf(err), bad)
			require.ErrorContains(t, err, "BPC_PUBLIC_BASE_URL", bad)
			require.NotContains(t, err.Error(), bad)
			_, lerr := publicBaseURL(bad, env, "", nil)
			require.Len(t, lerr, 1, "LoadConfig refuses %s too", bad)
		}
	}
	require.NoError(t, check(map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": good, "BPC_PUBLIC_BASE_URL": "https://p.example.com/passports/"}),
		"one trailing slash is dropped, as LoadConfig drops it")
	err = check(map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": "c2VjcmV0", "BPC_PUBLIC_BASE_URL": "https://p.example.com"})
	require.ErrorContains(t, err, "BPC_KEY_ENCRYPTION_KEY")
	require.False(t, strings.Contains(err.Error(), "c2VjcmV0"))
	require.NoError(t, check(map[string]string{"BPC_ENV": "dev"}), "outside prod nothing is required")
}
