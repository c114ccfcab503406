package contract

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/bpc-platform/bpc/internal/contract"
)

// recorded is what the go test stage left in the traffic directory.
type recorded struct {
	dir       string
	docs      map[string][]byte // file name -> document
	exchanges []contract.Exchange
	err       error
}

var loadOnce = sync.OnceValue(func() *recorded {
	r := &recorded{dir: os.Getenv(contract.TrafficDirEnv), docs: map[string][]byte{}}
	r.err = r.load()
	return r
})

func (r *recorded) load() error {
	if r.dir == "" {
		return fmt.Errorf("%s is not set: run the service's tests with it set to a directory first "+
			"(scripts/test.sh does: its go test stage records, its contract stage runs these tests)", contract.TrafficDirEnv)
	}
	files, err := filepath.Glob(filepath.Join(r.dir, "traffic-*.jsonl"))
	if err != nil {
		return err
	}
	for _, name := range files {
		if err := r.loadFile(name); err != nil {
			return err
		}
	}
	if len(r.exchanges) == 0 {
		return fmt.Errorf("%s=%s holds no recorded exchange (%d traffic files): the go test stage recorded nothing",
			contract.TrafficDirEnv, r.dir, len(files))
	}
	for _, e := range r.exchanges {
		if _, ok := r.docs[e.Doc]; ok {
			continue
		}
		doc, err := os.ReadFile(filepath.Join(r.dir, e.Doc))
		if err != nil {
			return fmt.Errorf("the document of %s %s: %w", e.Method, e.URL, err)
		}
		r.docs[e.Doc] = doc
	}
	return nil
}

func (r *recorded) loadFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16*contract.MaxRecordedBody)
	for n := 1; sc.Scan(); n++ {
		var e contract.Exchange
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		r.exchanges = append(r.exchanges, e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// traffic is the recorded traffic; the test fails at once when there is
// none.
func traffic(t *testing.T) *recorded {
	t.Helper()
	r := loadOnce()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}

// docNames are the distinct documents served, sorted.
func (r *recorded) docNames() []string {
	var names []string
	for n := range r.docs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// docFile writes the document name, indented (so that tools report useful
// line numbers), into dir and returns its path.
func (r *recorded) docFile(t *testing.T, dir, name string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.docs[name], &v); err != nil {
		t.Fatalf("%s is not JSON: %v", name, err)
	}
	pretty, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pretty, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
