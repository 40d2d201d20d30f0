// Command lockcheck load-tests Redis distributed locks and checks that they
// are safe. See README.md.
package main

import (
	"os"

	"github.com/lockcheck/lockcheck/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
