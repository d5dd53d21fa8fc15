package main

import (
	"fmt"
	"runtime/debug"

	"github.com/sluicehq/sluice/slurmapi/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func init() {
	cli.Version = version // salloc --version
	register(command{name: "version", summary: "print the Sluice version", run: func([]string) error {
		goVersion := "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			goVersion = bi.GoVersion
		}
		fmt.Printf("sluice %s (%s)\n", version, goVersion)
		return nil
	}})
}
