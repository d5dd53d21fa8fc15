package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/serverconfig"
	"github.com/sluicehq/sluice/internal/servermem"
	"github.com/sluicehq/sluice/slurmapi/cli"
)

func init() {
	register(command{name: "server", summary: "run the Sluice server: scheduler, REST API, accounting, remediation", run: runServer})
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	configPath := fs.String("config", "", "YAML configuration file (see docs/configuration.md); flags below override it")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	stateDir := fs.String("state-dir", "", "directory for the server's own state")
	listen := fs.String("listen", "", "REST API address (default :6820)")
	logLevel := fs.String("log-level", "", "debug | info | warn | error")
	logFormat := fs.String("log-format", "", "text | json")
	noLeader := fs.Bool("no-leader-election", false, "schedule without taking the Lease (only for a single replica)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice server [flags]\n\nRuns the scheduler, the slurmrestd-compatible REST API, accounting and remediation.\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	cfg, err := serverconfig.Load(*configPath)
	if err != nil {
		return err
	}
	override(&cfg.Kubeconfig, *kubeconfig)
	override(&cfg.StateDir, *stateDir)
	override(&cfg.Listen, *listen)
	override(&cfg.Log.Level, *logLevel)
	override(&cfg.Log.Format, *logFormat)
	if *noLeader {
		cfg.LeaderElection.Enabled = false
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer servermem.StartProfile()()
	log := newLogger(cfg.Log, os.Stderr)
	servermem.ApplyLimit(log)
	srv, err := NewServer(cfg, log)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

func override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func newLogger(c serverconfig.LogConfig, w *os.File) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // Validate already checked it
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// shutdownContext bounds the graceful part of a shutdown.
func shutdownContext(d serverconfig.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Duration(d))
}
