package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bpc-platform/bpc/apiclient"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/internal/demo"
)

// Defaults of bpc demo.
const (
	demoDefaultURL    = "http://127.0.0.1:8080"
	demoDefaultTenant = "00000000-0000-0000-0000-00000000de00"
	demoDefaultOut    = "demo-out"
)

// cmdDemo is bpc demo: flags and environment, then the walk-through of
// package demo against the service.
func cmdDemo(ctx context.Context, args []string, e env) error {
	getenv, stdout := e.getenv, e.stdout
	fs := flags("demo")
	baseURL := fs.String("url", cmp.Or(getenv("BPC_URL"), demoDefaultURL), "base URL of the service (BPC_URL)")
	out := fs.String("out", cmp.Or(getenv("BPC_DEMO_OUT"), demoDefaultOut), "directory for the artifacts (BPC_DEMO_OUT)")
	tenant := fs.String("tenant", cmp.Or(getenv("BPC_DEMO_TENANT"), demoDefaultTenant), "tenant id (BPC_DEMO_TENANT)")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	token := strings.TrimSpace(getenv("BPC_ADMIN_TOKEN"))
	if token == "" {
		return errors.New("demo: BPC_ADMIN_TOKEN is required (scripts/run.sh keeps the dev token in .bpc-dev/admin-token)")
	}
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(*baseURL), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("demo: --url/BPC_URL must be an http(s) URL like %s, got %q", demoDefaultURL, *baseURL)
	}
	tenantID := strings.ToLower(strings.TrimSpace(*tenant))
	if !hash.IsUUID(tenantID) {
		return fmt.Errorf("demo: --tenant/BPC_DEMO_TENANT must be a UUID, got %q", *tenant)
	}
	if strings.TrimSpace(*out) == "" {
		return errors.New("demo: --out/BPC_DEMO_OUT must not be empty")
	}
	err = demo.Run(ctx, apiclient.New(u.String(), token, tenantID), *out, stdout)
	if apiclient.IsStatus(err, http.StatusUnauthorized) {
		return fmt.Errorf("%w (is BPC_ADMIN_TOKEN the service's admin token?)", err)
	}
	return err
}
