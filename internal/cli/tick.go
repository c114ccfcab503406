package cli

import (
	"context"
	"errors"
	"time"

	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/tick"
)

// cmdTick is bpc tick: flags and configuration, then one tick of package
// tick over the service's database.
func cmdTick(ctx context.Context, args []string, e env) error {
	fs := flags("tick")
	maxDuration := fs.Duration("max-duration", 60*time.Second, "time budget")
	maxJobs := fs.Int("max-jobs", 1000, "item budget: job attempts to work at most")
	maintenance := fs.Bool("maintenance", true, "run the maintenance jobs due in their interval")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	getenv, stdout, stderr := e.getenv, e.stdout, e.stderr
	if *maxDuration <= 0 || *maxJobs <= 0 {
		return errors.New("--max-duration and --max-jobs must be positive")
	}
	cfg, pool, err := connect(ctx, getenv, service.LoadConfig)
	if err != nil {
		return err
	}
	defer pool.Close()
	cfg.Tracing.Console = stderr
	if err := requireCurrentSchema(ctx, pool, "run `bpc migrate`"); err != nil {
		return err
	}
	o := tick.Options{MaxDuration: *maxDuration, MaxJobs: *maxJobs, OnInterrupt: forceExitOnSecondSignal}
	if *maintenance {
		m := cfg.Maintenance
		o.Maintenance = &m
	}
	_, err = tick.Run(ctx, cfg, pool, o, stdout)
	return err
}
