package battery

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// ReadExpect reads matrix's expectations file: one "lock scenario
// verdict" per line; # starts a comment.
func ReadExpect(path string) (map[string]checker.Verdict, error) {
	return readExpect(path, "LOCK SCENARIO")
}

// ReadVerifyExpect reads verify's expectations file: one "scenario
// guarantee verdict" per line (guarantee: lease or mutex).
func ReadVerifyExpect(path string) (map[string]checker.Verdict, error) {
	return readExpect(path, "SCENARIO lease|mutex")
}

// readExpect reads lines of two names and a verdict, the names' form
// being what a bad line is told to want.
func readExpect(path, form string) (map[string]checker.Verdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, workload.ConfigErr(err)
	}
	defer f.Close()
	out := map[string]checker.Verdict{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(strings.SplitN(sc.Text(), "#", 2)[0])
		if text == "" {
			continue
		}
		fs := strings.Fields(text)
		if len(fs) != 3 || (fs[2] != string(checker.Valid) && fs[2] != string(checker.Invalid)) {
			return nil, workload.ConfigErr(fmt.Errorf("%s:%d: want \"%s valid|invalid\", got %q", path, line, form, text))
		}
		out[fs[0]+" "+fs[1]] = checker.Verdict(fs[2])
	}
	return out, sc.Err()
}
