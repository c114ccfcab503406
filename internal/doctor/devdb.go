package doctor

import (
	"context"
	"crypto/sha1" //nolint:gosec // names a directory the way scripts/pg.sh does, not a security use
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DevSearch says where FindDevDatabase looks, in scripts/pg.sh's order.
type DevSearch struct {
	// Dir is where the search starts: the checkout is Dir or the nearest
	// parent holding scripts/pg.sh.
	Dir string
	// Addr is the shared server tried first (127.0.0.1:5432).
	Addr string
	// DBName is the database (bpc, the one `make run` creates).
	DBName string
	// Params are added to the URL's query (tests set search_path).
	Params url.Values
}

// DefaultDevSearch is what `make doctor` finds: scripts/pg.sh's defaults
// from the current directory.
func DefaultDevSearch() DevSearch {
	dir, _ := os.Getwd()
	return DevSearch{Dir: dir, Addr: "127.0.0.1:5432", DBName: "bpc"}
}

// FindDevDatabase finds the dev database the way scripts/pg.sh does when
// DATABASE_URL is unset: a Postgres on 127.0.0.1:5432 that lets user
// postgres in without a password, else this checkout's private cluster
// (.pgdata/, or /tmp/bpc-pgdata-<hash of the checkout's path> when pg.sh
// put it there). It only connects: unlike pg.sh it starts and creates
// nothing. It returns the URL and how it was found, or an error that says
// what was tried and what to set.
func FindDevDatabase(ctx context.Context, s DevSearch) (dbURL, how string, err error) {
	type candidate struct{ addr, how string }
	cands := []candidate{{s.Addr, "Postgres on " + s.Addr}}
	var tried []string
	root, inCheckout := checkoutRoot(s.Dir)
	if inCheckout {
		for _, base := range privateClusterDirs(root) {
			data := filepath.Join(base, "data")
			if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
				continue
			}
			port, ok := clusterPort(data)
			if !ok {
				tried = append(tried, "the private cluster in "+data+" is not running (`make run` or `scripts/pg.sh` starts it)")
				continue
			}
			cands = append(cands, candidate{"127.0.0.1:" + strconv.Itoa(port), "the private cluster in " + data})
		}
	}
	for _, c := range cands {
		u := devURL(c.addr, s.DBName, s.Params)
		err := ping(ctx, u)
		if err == nil {
			return u, c.how + ", database " + s.DBName, nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name
			tried = append(tried, fmt.Sprintf("%s has no database %s yet (`make run` or `make migrate` creates it)", c.how, s.DBName))
			continue
		}
		tried = append(tried, fmt.Sprintf("%s: %s", c.how, oneLine(err)))
	}
	if !inCheckout {
		tried = append(tried, fmt.Sprintf("no checkout's private cluster: %s is not inside a checkout (no scripts/pg.sh above it)", s.Dir))
	}
	return "", "", fmt.Errorf("DATABASE_URL is not set and no dev database was found:\n  - %s\n"+
		"Set DATABASE_URL (postgres://user@host:5432/db), or run `make run` in the checkout, "+
		"which starts the dev database, creates %s and migrates it", strings.Join(tried, "\n  - "), s.DBName)
}

func devURL(addr, db string, params url.Values) string {
	q := url.Values{"sslmode": {"disable"}, "connect_timeout": {"3"}}
	for k, v := range params {
		q[k] = v
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: addr, Path: "/" + db, RawQuery: q.Encode()}
	return u.String()
}

func ping(ctx context.Context, dbURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// checkoutRoot is dir or its nearest parent holding scripts/pg.sh, with
// symbolic links resolved (pg.sh hashes `pwd -P`).
func checkoutRoot(dir string) (string, bool) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	for {
		if fi, err := os.Stat(filepath.Join(d, "scripts", "pg.sh")); err == nil && !fi.IsDir() {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

// privateClusterDirs are where scripts/pg.sh keeps root's private cluster:
// .pgdata in the checkout, or a /tmp directory named by the checkout's path.
func privateClusterDirs(root string) []string {
	sum := sha1.Sum([]byte(root)) //nolint:gosec // see the import
	return []string{filepath.Join(root, ".pgdata"), "/tmp/bpc-pgdata-" + hex.EncodeToString(sum[:])[:12]}
}

// clusterPort is the port of the running cluster in data: the fourth line
// of postmaster.pid.
func clusterPort(data string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	return port, err == nil && port > 0
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
