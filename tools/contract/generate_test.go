package contract

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// toolsDir is the tools module's root (the tests run in tools/contract).
const toolsDir = ".."

// run runs a command in dir and returns its combined output.
func run(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// genDir is a new package directory inside the tools module (so that it
// builds with tools/go.mod), removed after the test.
func genDir(t *testing.T, prefix string) (abs, pkg string) {
	t.Helper()
	dir, err := os.MkdirTemp(".", "gen-"+prefix+"-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	abs, err = filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs, "./contract/" + filepath.Base(dir) + "/..."
}

// generateAndBuild generates a client of every served document with gen
// (in a package of its own per document) and builds them all in one go
// build. Each failure names the document and the tool's own words.
func generateAndBuild(t *testing.T, tool string, gen func(doc, out string) (string, error)) {
	r := traffic(t)
	root, pkgs := genDir(t, tool)
	var failed []string
	for i, name := range r.docNames() {
		doc := r.docFile(t, root, name)
		out := filepath.Join(root, fmt.Sprintf("client%d", i))
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if log, err := gen(doc, out); err != nil {
			failed = append(failed, fmt.Sprintf("%s cannot generate a client of %s: %v\n%s", tool, name, err, log))
		}
	}
	if len(failed) > 0 {
		t.Fatal(strings.Join(failed, "\n"))
	}
	if log, err := run(toolsDir, "go", "build", pkgs); err != nil {
		t.Fatalf("the client %s generated from the served document does not compile (%v); "+
			"documents %v (in %s):\n%s", tool, err, r.docNames(), r.dir, log)
	}
}

// oapi-codegen with its default configuration: only the package name and
// the output file are given.
func TestOapiCodegenClientCompiles(t *testing.T) {
	t.Parallel()
	generateAndBuild(t, "oapi-codegen", func(doc, out string) (string, error) {
		return run(toolsDir, "go", "tool", "oapi-codegen", "-package", "client", "-o", filepath.Join(out, "client.gen.go"), doc)
	})
}

// ogen with its default configuration.
func TestOgenClientCompiles(t *testing.T) {
	t.Parallel()
	generateAndBuild(t, "ogen", func(doc, out string) (string, error) {
		return run(toolsDir, "go", "tool", "ogen", "-package", "client", "-target", out, "-clean", doc)
	})
}
