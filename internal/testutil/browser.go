package testutil

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// Chromium returns the headless browser, or skips the test with the reason
// (CI installs it and sets LOCKCHECK_REQUIRE_CHROMIUM, so there it fails).
func Chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LOCKCHECK_REQUIRE_CHROMIUM") != "" {
		tb.Fatal("chromium is required here (LOCKCHECK_REQUIRE_CHROMIUM is set): install it with `apt-get install chromium`")
	}
	tb.Skip("chromium not installed (apt-get install chromium, or make deps)")
	return ""
}

// Page is what a headless browser made of a page.
type Page struct {
	Screenshot image.Image
	DOM        string
	// JSErrors are uncaught errors the page's scripts raised.
	JSErrors []string
}

var consoleErr = regexp.MustCompile(`(?m)^.*:CONSOLE[^\n]*"(Uncaught[^"]*)".*$`)

// Browse opens a local file in headless Chromium: once for a screenshot,
// once for the DOM after scripts ran, collecting uncaught script errors.
func Browse(tb testing.TB, chromium, path string) Page {
	tb.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		tb.Fatal(err)
	}
	shot := filepath.Join(tb.TempDir(), "shot.png")
	profile := tb.TempDir() // its own profile: nothing shared, nothing left behind
	run := func(args ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
			"--user-data-dir=" + profile, "--window-size=1200,2000"}
		cmd := exec.CommandContext(ctx, chromium, append(append(base, args...), "file://"+abs)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			tb.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	var p Page
	_, log1 := run("--screenshot=" + shot)
	dom, log2 := run("--dump-dom")
	p.DOM = dom
	for _, m := range consoleErr.FindAllStringSubmatch(log1+log2, -1) {
		p.JSErrors = append(p.JSErrors, m[1])
	}
	f, err := os.Open(shot)
	if err != nil {
		tb.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	if p.Screenshot, err = png.Decode(f); err != nil {
		tb.Fatalf("screenshot: %v", err)
	}
	return p
}

// Blank reports whether an image is (almost) one colour.
func Blank(img image.Image) bool {
	b := img.Bounds()
	r0, g0, b0, _ := img.At(b.Min.X, b.Min.Y).RGBA()
	differ, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r != r0 || g != g0 || bl != b0 {
				differ++
			}
		}
	}
	return differ*100 < total // under 1% of pixels differ
}
