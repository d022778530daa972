// compose-check loads a Compose file with Compose's own loader (compose-go, the library behind
// `docker compose`), so a file the engine would refuse fails here without any Docker engine.
//
// Usage: compose-check COMPOSE_FILE ENV_FILE
//
// The environment is ENV_FILE alone (never the caller's), as `docker compose --env-file` would
// read it. Exit 0 prints the project's services; otherwise the loader's error, exit 1.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: compose-check COMPOSE_FILE ENV_FILE")
		os.Exit(2)
	}
	composeFile, envFile := os.Args[1], os.Args[2]
	options, err := cli.NewProjectOptions(
		[]string{composeFile},
		cli.WithWorkingDirectory(filepath.Dir(composeFile)),
		cli.WithEnvFiles(envFile),
		cli.WithDotEnv,
		cli.WithName("boardstream"),
		cli.WithConsistency(true),
	)
	if err != nil {
		fail(err)
	}
	project, err := cli.ProjectFromOptions(context.Background(), options)
	if err != nil {
		fail(err)
	}
	fmt.Printf("ok: %d services: %s\n", len(project.Services), strings.Join(project.ServiceNames(), " "))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "compose-check: %v\n", err)
	os.Exit(1)
}
