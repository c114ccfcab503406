package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/bpc-platform/bpc/migrations"
)

// Version is the release this binary was built as, set at build time:
// go build -ldflags "-X github.com/bpc-platform/bpc/internal/cli.Version=v1.2.3".
// Without it, bpc version prints the module version Go recorded (a
// `go install …@v1.2.3`), else "dev".
var Version = ""

// BuildInfo is what bpc version prints.
type BuildInfo struct {
	Version   string
	GoVersion string
	// Commit is the VCS revision the binary was built from ("unknown" when
	// Go recorded none: go run, a build outside a checkout, -buildvcs=false).
	Commit string
	// Dirty is true when the working tree had uncommitted changes.
	Dirty bool
	// CommitTime is the commit's time as Go recorded it, if it did.
	CommitTime string
	// Schema is the newest of this service's migrations, which a database
	// must have applied for the binary to serve; RiverSchema is River's.
	Schema      string
	RiverSchema int
}

// ReadBuildInfo reports the version of this binary: Version (ldflags),
// the Go toolchain's build information and the migrations it embeds.
func ReadBuildInfo() (BuildInfo, error) {
	bi, _ := debug.ReadBuildInfo()
	return buildInfo(Version, bi)
}

// buildInfo is ReadBuildInfo with the ldflags version and Go's build
// information (nil when the binary has none) given.
func buildInfo(version string, bi *debug.BuildInfo) (BuildInfo, error) {
	b := BuildInfo{Version: version, Commit: "unknown"}
	if bi != nil {
		b.GoVersion = bi.GoVersion
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.CommitTime = s.Value
			case "vcs.modified":
				b.Dirty, _ = strconv.ParseBool(s.Value)
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	all, err := migrations.All()
	if err != nil {
		return b, err
	}
	if len(all) > 0 {
		b.Schema = all[len(all)-1].Name
	}
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return b, fmt.Errorf("error reading River's migrations: %w", err)
	}
	if vs := m.AllVersions(); len(vs) > 0 {
		b.RiverSchema = vs[len(vs)-1].Version
	}
	return b, nil
}

// cmdVersion is bpc version (and bpc --version): it reads no
// configuration and connects to nothing.
func cmdVersion(_ context.Context, args []string, e env) error {
	fs := flags("version")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	b, err := ReadBuildInfo()
	if err != nil {
		return err
	}
	commit := b.Commit
	if b.Dirty {
		commit += " (dirty: uncommitted changes)"
	}
	if b.CommitTime != "" {
		commit += ", " + b.CommitTime
	}
	fmt.Fprintf(e.stdout, "bpc %s\n", b.Version)
	fmt.Fprintf(e.stdout, "go:      %s\n", b.GoVersion)
	fmt.Fprintf(e.stdout, "commit:  %s\n", commit)
	fmt.Fprintf(e.stdout, "schema:  %s (River migration %d)\n", b.Schema, b.RiverSchema)
	return nil
}
