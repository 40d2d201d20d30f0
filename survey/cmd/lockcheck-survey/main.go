// Command lockcheck-survey is lockcheck with the survey's Go locks built
// in (golocks.Entries): every lockcheck command, --lock rueidislock and
// the others included. See docs/survey.md.
package main

import (
	"os"

	"github.com/lockcheck/lockcheck/cli"
	"github.com/lockcheck/lockcheck/survey/golocks"
)

func main() {
	golocks.Register()
	os.Exit(cli.Main(os.Args[1:]))
}
