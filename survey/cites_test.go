package survey

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCites_HoldAtPinnedVersion: every Cite's lines, read in its code at
// the version the survey pins, hold its quote. The Go modules come from
// the module cache (`go mod download -json module@version`, go.mod's
// version); the Debian packages are read where they are installed, once
// dpkg-query says the installed version is the one the catalog pins
// (Library.Version) and dpkg -L that the file is the package's;
// phpredis's C source is Debian's source package at PhpredisVersion:
// $LOCKCHECK_PHPREDIS_SRC if set, else fetched once with apt-get source
// (a deb-src entry of its own, Debian's archive keyring) into the user's
// cache. A Debian package or the C source that is not there skips its
// cites, and fails them when LOCKCHECK_REQUIRE_PYREDIS is set (make
// test).
func TestCites_HoldAtPinnedVersion(t *testing.T) {
	seen := map[string]bool{}
	var libs []string
	byLib := map[string][]Cite{}
	for _, c := range Cites {
		id := citeID(c)
		if seen[id] {
			t.Errorf("%s is listed twice", id)
		}
		seen[id] = true
		if c.Lines[0] < 1 || c.Lines[1] < c.Lines[0] {
			t.Errorf("%s: lines %v are not a range", id, c.Lines)
		}
		if strings.TrimSpace(c.Quote) == "" {
			t.Errorf("%s quotes nothing", id)
		}
		if _, ok := byLib[c.Lib]; !ok {
			libs = append(libs, c.Lib)
		}
		byLib[c.Lib] = append(byLib[c.Lib], c)
	}
	mods, err := goModVersions()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		t.Run(lib, func(t *testing.T) {
			ver, err := pinnedVersion(lib, mods)
			if err != nil {
				t.Fatal(err)
			}
			root, owned := citeSource(t, lib, ver)
			for _, c := range byLib[lib] {
				file := filepath.Join(root, filepath.FromSlash(c.File))
				if owned != nil && !owned[file] {
					t.Errorf("%s: %s is not a file of %s (dpkg -L)", citeID(c), file, lib)
					continue
				}
				if msg := holds(file, c); msg != "" {
					t.Errorf("%s at %s: %s", citeID(c), ver, msg)
				}
			}
		})
	}
}

// TestCites_EveryCitationListed: every file:line the page's texts cite
// (Mechanisms, Other, Corrections, and the libraries' own lines) has a
// Cite of those lines, so that no citation goes unchecked: the forms
// "file.go:60-81", "path/file.go:258, 265" (each line or range a
// citation), and ":86" (a line of the file cited just before in the same
// text); a bare file name is the file of that name cited earlier in the
// text, if any. Where a citation names its version ("at v1.10.3", "at
// go-redis v9.23.0", "in Debian's 3.1.0"), that is the pinned one; and
// every text that cites names a version somewhere.
func TestCites_EveryCitationListed(t *testing.T) {
	mods, err := goModVersions()
	if err != nil {
		t.Fatal(err)
	}
	cited := map[string]bool{}
	n := 0
	for _, tx := range citingTexts() {
		cs := citationsIn(tx.text)
		named := false
		for _, c := range cs {
			n++
			named = named || c.version != ""
			var match []Cite
			for _, ct := range Cites {
				if (ct.File == c.file || strings.HasSuffix(ct.File, "/"+c.file)) &&
					(ct.Lines == c.lines || ct.Was != "" && ct.Was == linesString(c.lines)) {
					match = append(match, ct)
				}
			}
			if len(match) == 0 {
				t.Errorf("%s cites %s:%s (%q), which no Cite in survey/cites.go lists", tx.where, c.file, linesString(c.lines), c.as)
				continue
			}
			for _, ct := range match {
				cited[citeID(ct)] = true
			}
			if c.version == "" {
				continue
			}
			ok := false
			var pins []string
			for _, ct := range match {
				pin, err := pinnedVersion(ct.Lib, mods)
				if err != nil {
					t.Error(err)
					continue
				}
				pins = append(pins, ct.Lib+" "+pin)
				ok = ok || sameVersion(c.version, pin)
			}
			if !ok {
				t.Errorf("%s cites %q at %s, but the survey pins %s", tx.where, c.as, c.version, strings.Join(pins, ", "))
			}
		}
		if len(cs) > 0 && !named {
			t.Errorf("%s cites %d line(s) and names no version (as \"at v1.10.3\" after one of them): %q", tx.where, len(cs), cs[0].as)
		}
	}
	if n == 0 {
		t.Fatal("no citation found in the texts: the pattern is broken")
	}
	for _, ct := range Cites {
		if !cited[citeID(ct)] {
			t.Logf("%s: listed, cited by no text yet", citeID(ct))
		}
	}
}

// TestCitationsIn_Forms: the citation pattern reads every form the texts
// use.
func TestCitationsIn_Forms(t *testing.T) {
	got := citationsIn("as `x` (rueidislock/lock.go:258, 265 at v1.0.79), then (lock.go:437, chosen at lock.go:171); " +
		"`now` (Store/RedisStore.php:99 at 5.4.53), adds (:86), and isExpired :105; (script.go:193-199 at go-redis v9.23.0); " +
		"(tooz/coordination.py:182-207 in Debian's 3.1.0); (mutex.go:115, driftFactor 0.01); (SpinlockMutex.php:66-73 at 2.2.1: \"a\")")
	var s []string
	for _, c := range got {
		s = append(s, fmt.Sprintf("%s:%s@%s", c.file, linesString(c.lines), c.version))
	}
	want := []string{"rueidislock/lock.go:258@v1.0.79", "rueidislock/lock.go:265@v1.0.79", "rueidislock/lock.go:437@", "rueidislock/lock.go:171@",
		"Store/RedisStore.php:99@5.4.53", "Store/RedisStore.php:86@", "Store/RedisStore.php:105@", "script.go:193-199@v9.23.0",
		"tooz/coordination.py:182-207@3.1.0", "mutex.go:115@", "SpinlockMutex.php:66-73@2.2.1"}
	if !slices.Equal(s, want) {
		t.Errorf("citationsIn:\n got %q\nwant %q", s, want)
	}
}

func citeID(c Cite) string {
	return fmt.Sprintf("%s %s:%s", c.Lib, c.File, linesString(c.Lines))
}

func linesString(l [2]int) string {
	if l[0] == l[1] {
		return strconv.Itoa(l[0])
	}
	return fmt.Sprintf("%d-%d", l[0], l[1])
}

// collapse is s with each run of white space one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// holds says why c does not hold in file, "" when it does.
func holds(file string, c Cite) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(string(b), "\n")
	first, last := c.Lines[0], c.Lines[1]
	if last > len(lines) {
		return fmt.Sprintf("the file has %d lines", len(lines))
	}
	q := collapse(c.Quote)
	got := collapse(strings.Join(lines[first-1:last], "\n"))
	if strings.Contains(got, q) {
		return ""
	}
	msg := fmt.Sprintf("lines %s do not hold %q; they read %q", linesString(c.Lines), q, clip(got, 300))
	span := last - first + 1
	var at []string
	for s := 0; s+span <= len(lines); s++ {
		if strings.Contains(collapse(strings.Join(lines[s:s+span], "\n")), q) {
			// The narrowest span from s that holds it.
			e := s
			for !strings.Contains(collapse(strings.Join(lines[s:e+1], "\n")), q) {
				e++
			}
			at = append(at, linesString([2]int{s + 1, e + 1}))
			s = e
		}
	}
	if len(at) > 0 {
		msg += "; the quote is at line " + strings.Join(at, ", ")
	}
	return msg
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// goModVersions are survey/go.mod's required modules and versions.
func goModVersions() (map[string]string, error) {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return nil, err
	}
	mods := map[string]string{}
	re := regexp.MustCompile(`^\s*(?:require\s+)?([^\s()]+)\s+(v[^\s]+)`)
	for _, l := range strings.Split(string(b), "\n") {
		if m := re.FindStringSubmatch(l); m != nil && !strings.HasPrefix(strings.TrimSpace(l), "replace") {
			mods[m[1]] = m[2]
		}
	}
	return mods, nil
}

// pinnedVersion is the version of lib the survey pins: go.mod's for a Go
// module (and the Library of that module, if any, must pin the same),
// Library.Version for a Debian package a Library names, PhpredisVersion
// for php-redis.
func pinnedVersion(lib string, mods map[string]string) (string, error) {
	if strings.Contains(lib, ".") {
		v, ok := mods[lib]
		if !ok {
			return "", fmt.Errorf("%s: not in survey/go.mod", lib)
		}
		for _, l := range Libraries {
			if p := strings.Fields(l.Package); len(p) > 0 && (p[0] == lib || strings.HasPrefix(p[0], lib+"/")) && l.Version != v {
				return "", fmt.Errorf("%s: go.mod requires %s, the catalog's %s pins %s", lib, v, l.Name, l.Version)
			}
		}
		return v, nil
	}
	if lib == srcPhpredis {
		return PhpredisVersion, nil
	}
	ver := ""
	for _, l := range Libraries {
		if p := strings.Fields(l.Package); len(p) > 0 && p[0] == lib {
			if ver != "" && ver != l.Version {
				return "", fmt.Errorf("%s: the catalog pins both %s and %s", lib, ver, l.Version)
			}
			ver = l.Version
		}
	}
	if ver == "" {
		return "", fmt.Errorf("%s: no Library in the catalog names this package", lib)
	}
	return ver, nil
}

// sameVersion: the version a text names is the pinned one, or its
// upstream part (5.4.53 of 5.4.53+dfsg-0+deb12u1, 3.1.0 of 3.1.0-3).
func sameVersion(named, pinned string) bool {
	return named == pinned || strings.HasPrefix(pinned, named+"+") || strings.HasPrefix(pinned, named+"-")
}

// requireDebian skips t, or fails it when LOCKCHECK_REQUIRE_PYREDIS is
// set, for what is missing.
func requireDebian(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("LOCKCHECK_REQUIRE_PYREDIS") != "" {
		t.Fatalf("%s (required: LOCKCHECK_REQUIRE_PYREDIS is set)", msg)
	}
	t.Skipf("%s: its cites are not checked here (LOCKCHECK_REQUIRE_PYREDIS makes this a failure)", msg)
}

// debInstalled is the installed version of pkg, "" if it is not.
func debInstalled(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Abbrev}|${Version}", pkg).Output()
	if err != nil {
		return ""
	}
	st, v, _ := strings.Cut(string(out), "|")
	if !strings.HasPrefix(st, "ii") {
		return ""
	}
	return v
}

// citeSource is the directory lib's cites are read under, at version
// ver, and for an installed Debian package the files it owns.
func citeSource(t *testing.T, lib, ver string) (string, map[string]bool) {
	t.Helper()
	switch {
	case strings.Contains(lib, "."):
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", lib+"@"+ver).Output()
		var m struct{ Dir, Error string }
		if jerr := json.Unmarshal(out, &m); err != nil || jerr != nil || m.Dir == "" {
			t.Fatalf("go mod download -json %s@%s: %v %s %s", lib, ver, err, m.Error, stderrOf(err))
		}
		return m.Dir, nil
	case lib == srcPhpredis:
		if inst := debInstalled(lib); inst != "" && inst != ver {
			t.Fatalf("php-redis %s is installed, the survey pins %s (PhpredisVersion)", inst, ver)
		}
		dir, err := phpredisSource(ver)
		if err != nil {
			requireDebian(t, "phpredis's C source (Debian's source package php-redis %s) not found: set LOCKCHECK_PHPREDIS_SRC to the directory `apt-get source php-redis=%s` unpacks (holding redis-5.3.7/library.c): %v", ver, ver, err)
		}
		return dir, nil
	}
	inst := debInstalled(lib)
	if inst == "" {
		requireDebian(t, "%s is not installed (apt-get install %s)", lib, lib)
	}
	if inst != ver {
		t.Fatalf("%s %s is installed, the catalog pins %s: the cites are read at the installed version", lib, inst, ver)
	}
	root := "/usr/share/php"
	if strings.HasPrefix(lib, "python3-") {
		root = "/usr/lib/python3/dist-packages"
	}
	out, err := exec.Command("dpkg", "-L", lib).Output()
	if err != nil {
		t.Fatalf("dpkg -L %s: %v", lib, err)
	}
	owned := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		owned[sc.Text()] = true
	}
	return root, owned
}

func stderrOf(err error) string {
	var e *exec.ExitError
	if errors.As(err, &e) {
		return string(e.Stderr)
	}
	return ""
}

// phpredisSuite is the Debian release whose php-redis is PhpredisVersion.
const phpredisSuite = "bookworm"

// phpredisSource is the unpacked source package of php-redis at ver:
// $LOCKCHECK_PHPREDIS_SRC, else the user's cache, else fetched into it
// with apt-get source from deb.debian.org (apt checks it against the
// archive's signed index) and unpacked by dpkg-source (Debian's patches
// applied), or tar where dpkg-source is missing.
func phpredisSource(ver string) (string, error) {
	const probe = "redis-5.3.7/library.c"
	if dir := os.Getenv("LOCKCHECK_PHPREDIS_SRC"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, probe)); err != nil {
			return "", fmt.Errorf("LOCKCHECK_PHPREDIS_SRC=%s: %w", dir, err)
		}
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "lockcheck", "php-redis_"+ver)
	if _, err := os.Stat(filepath.Join(dir, probe)); err == nil {
		return dir, nil
	}
	const keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", err
	}
	if _, err := os.Stat(keyring); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, d := range []string{"lists/partial", "cache/archives/partial", "src"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return "", err
		}
	}
	list := fmt.Sprintf("deb-src [signed-by=%s] http://deb.debian.org/debian %s main\n", keyring, phpredisSuite)
	if err := os.WriteFile(filepath.Join(tmp, "sources.list"), []byte(list), 0o644); err != nil {
		return "", err
	}
	opts := []string{"-q", "-o", "Dir::Etc::SourceList=" + filepath.Join(tmp, "sources.list"), "-o", "Dir::Etc::SourceParts=" + filepath.Join(tmp, "none"),
		"-o", "Dir::State::Lists=" + filepath.Join(tmp, "lists"), "-o", "Dir::Cache=" + filepath.Join(tmp, "cache"), "-o", "Debug::NoLocking=true"}
	if os.Geteuid() == 0 {
		opts = append(opts, "-o", "APT::Sandbox::User=root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(dir string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, clip(string(out), 2000))
		}
		return nil
	}
	if err := run(tmp, "apt-get", append(opts, "update")...); err != nil {
		return "", err
	}
	src := filepath.Join(tmp, "src")
	if err := run(src, "apt-get", append(opts, "source", "--download-only", "php-redis="+ver)...); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "out")
	upstream, _, _ := strings.Cut(ver, "-")
	if _, err := exec.LookPath("dpkg-source"); err == nil {
		err = run(src, "dpkg-source", "-x", "php-redis_"+ver+".dsc", out)
		if err != nil {
			return "", err
		}
	} else {
		if err := os.Mkdir(out, 0o755); err != nil {
			return "", err
		}
		if err := run(src, "tar", "-xJf", "php-redis_"+upstream+".orig.tar.xz", "-C", out); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(filepath.Join(out, probe)); err != nil {
		return "", fmt.Errorf("php-redis %s unpacked without %s: %w", ver, probe, err)
	}
	if err := os.Rename(out, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, probe)); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

type citingText struct{ where, text string }

// citingTexts are every text of the catalog that may cite code, each
// with where it is.
func citingTexts() []citingText {
	var out []citingText
	keys := make([]string, 0, len(Mechanisms))
	for k := range Mechanisms {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	done := map[string]bool{}
	for _, k := range keys {
		m := Mechanisms[k]
		tx := m.Text + " " + m.Documented
		if done[tx] {
			continue
		}
		done[tx] = true
		out = append(out, citingText{"Mechanisms[" + strconv.Quote(k) + "]", tx})
	}
	for i, o := range Other {
		out = append(out, citingText{fmt.Sprintf("Other[%d] (%s)", i, o.Lib), o.Text})
	}
	for i, c := range Corrections {
		out = append(out, citingText{fmt.Sprintf("Corrections[%d]", i), c.Was + " " + c.Why})
	}
	for _, l := range Libraries {
		out = append(out, citingText{"Libraries " + l.Name, l.Shape + " " + l.Assumes})
	}
	for _, n := range NotSurveyed {
		out = append(out, citingText{"NotSurveyed " + n.Name, n.Why})
	}
	return out
}

type citation struct {
	file    string
	lines   [2]int
	version string // as the text names it, "" if not
	as      string // the citation as written
}

// citeRe is a citation: a file (or, after white space or "(", none: the
// file cited before), ":", lines or ranges separated by ", ", and maybe
// the version.
var citeRe = regexp.MustCompile(`(?:((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:go|lua|php|py|c|h))|(?:^|[\s(])):(\d+(?:-\d+)?(?:, \d+(?:-\d+)?)*)` +
	`(?: at (?:[a-z][a-z-]* )?(v?\d[0-9A-Za-z.+~-]*)| in Debian's (\d[0-9A-Za-z.+~-]*))?`)

// citationsIn are text's citations, one per line or range, each file as
// full as the text makes it.
func citationsIn(text string) []citation {
	var out []citation
	var seen []string // the files cited so far, resolved
	last := ""
	for _, m := range citeRe.FindAllStringSubmatch(text, -1) {
		file := m[1]
		switch {
		case file == "":
			file = last
			if file == "" {
				continue // a colon and a number, not a citation
			}
		case !strings.Contains(file, "/"):
			for i := len(seen) - 1; i >= 0; i-- {
				if path.Base(seen[i]) == file {
					file = seen[i]
					break
				}
			}
		default:
			for i := len(seen) - 1; i >= 0; i-- {
				if strings.HasSuffix(seen[i], "/"+file) {
					file = seen[i]
					break
				}
			}
		}
		last = file
		seen = append(seen, file)
		version := strings.TrimRight(m[3]+m[4], ".")
		for _, part := range strings.Split(m[2], ", ") {
			a, b, isRange := strings.Cut(part, "-")
			first, _ := strconv.Atoi(a)
			lastLine := first
			if isRange {
				lastLine, _ = strconv.Atoi(b)
			}
			out = append(out, citation{file: file, lines: [2]int{first, lastLine}, version: version, as: strings.TrimLeft(m[0], " \t\n(")})
		}
	}
	return out
}
