// Package docs_test checks the README and the pages under docs/: every
// relative link resolves (file and heading), and every test a page names
// exists, so that a sentence saying "a test covers this" names one.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/scenario"
)

var (
	link     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading  = regexp.MustCompile("(?m)^#{1,6} (.*)$")
	testName = regexp.MustCompile(`\b(Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)
	fence    = regexp.MustCompile("(?ms)^```.*?^```")
)

// pages are the README and every page under docs/.
func pages(t *testing.T) []string {
	t.Helper()
	ps, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, ps...)
}

// anchors are the GitHub anchors of a page's headings.
func anchors(t *testing.T, path string, cache map[string]map[string]bool) map[string]bool {
	if a, ok := cache[path]; ok {
		return a
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		a[slug(m[1])] = true
	}
	cache[path] = a
	return a
}

// slug is GitHub's anchor for a heading: lower case, punctuation but
// hyphens dropped, spaces as hyphens.
func slug(h string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func TestDocs_LinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %s: %v", page, target, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(t, file, cache)[anchor] {
				t.Errorf("%s: link %s: no heading #%s in %s", page, target, anchor, file)
			}
		}
	}
}

// testFuncs are the names of every test, benchmark and fuzz target in
// the module.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w+)\(`)
	names := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "results") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestDocs_NamedTestsExist(t *testing.T) {
	funcs := testFuncs(t)
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range testName.FindAllString(string(b), -1) {
			if !funcs[name] {
				t.Errorf("%s names %s, which no _test.go declares", page, name)
			}
		}
	}
}

// TestDocs_EveryScenarioProven: verify.md's table of how each scenario
// is proven has a row for every scenario of the battery, and none for a
// scenario that does not exist; the tests it names exist
// (TestDocs_NamedTestsExist).
func TestDocs_EveryScenarioProven(t *testing.T) {
	b, err := os.ReadFile("verify.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "## How each scenario is proven")
	if i < 0 {
		t.Fatal("verify.md has no section \"How each scenario is proven\"")
	}
	section := page[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	rows := map[string]bool{}
	test := regexp.MustCompile("`(?:Test|Benchmark)\\w+`")
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|(.*)$").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = true
		// Each side names the test that proves it (TestDocs_NamedTestsExist
		// checks that they exist).
		cells := strings.Split(strings.Trim(m[2], " |"), " | ")
		for i, c := range cells {
			if !test.MatchString(c) {
				t.Errorf("verify.md's proof of %s: column %d names no test: %q", m[1], i+2, c)
			}
		}
		if len(cells) != 3 {
			t.Errorf("verify.md's proof of %s has %d cells, want 3", m[1], len(cells))
		}
	}
	names := scenario.Names(scenario.Battery())
	for _, n := range names {
		if !rows[n] {
			t.Errorf("verify.md's table of proofs has no row for %s", n)
		}
		delete(rows, n)
	}
	for n := range rows {
		t.Errorf("verify.md's table of proofs has a row for %s, which is no scenario of the battery", n)
	}
}
