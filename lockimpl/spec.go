package lockimpl

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
)

// Spec is a lock written as three Lua scripts in a TOML file
// (--lock-spec). See LoadSpec and examples/*.toml.
type Spec struct {
	Name        string `toml:"name"`
	Description string `toml:"description"`
	// Shape is the lock's shape: ShapeMutex ("" reads as one),
	// ShapeSemaphore (its [acquire] takes {permits}, the k of --permits)
	// or ShapeRWLock (a [read_acquire] beside [acquire], which is the
	// write acquire).
	Shape string `toml:"shape"`
	// WriterPreference (a read-write lock's): a read acquire is refused
	// while a write acquire of its key is in flight, not only while a
	// writer holds it.
	WriterPreference bool       `toml:"writer_preference"`
	Acquire          SpecScript `toml:"acquire"`
	ReadAcquire      SpecScript `toml:"read_acquire"`
	Release          SpecScript `toml:"release"`
	Extend           SpecScript `toml:"extend"`
	// Reenter (a reentrant lock's, optional) is an owner's re-entry;
	// without it [acquire] runs with the owner's token. Wait is [wait].
	Reenter SpecScript `toml:"reenter"`
	Wait    SpecWait   `toml:"wait"`

	// Path and Version (sha256 of the file, 12 hex digits) identify it in
	// run.json.
	Path, Version string
	usesTTLs      bool
	// permitsIn are the sections whose keys or args take {permits};
	// usesAccess: a section's take {access}.
	permitsIn  map[string]bool
	usesAccess bool
}

// SpecScript is one section: a Lua script and the KEYS and ARGV it is
// called with, with placeholders.
type SpecScript struct {
	Script string   `toml:"script"`
	Keys   []string `toml:"keys"`
	Args   []string `toml:"args"`
	// Fence (acquire only): the script's integer reply is also the lease's
	// fencing token.
	Fence bool `toml:"fence"`
	// Mode (extend only): "set" (the TTL replaces what remains, the
	// default) or "add" (the TTL is added to it).
	Mode string `toml:"mode"`

	keys, args []template
}

// Spec placeholders, substituted in keys and args (not in scripts).
const (
	phKey = iota
	phToken
	phTTLms
	phTTLs
	phClient
	phPermits
	phAccess
)

var placeholders = map[string]int{"{key}": phKey, "{token}": phToken, "{ttl_ms}": phTTLms, "{ttl_s}": phTTLs, "{client}": phClient,
	"{permits}": phPermits, "{access}": phAccess}

// placeholderRE finds anything that looks like a placeholder.
var placeholderRE = regexp.MustCompile(`\{[^{}\s]*\}`)

// template is one key or argument: literal parts and placeholders.
type template []tpart

type tpart struct {
	lit string
	ph  int // -1: lit
}

type specVars struct {
	key, token, access string
	ttl                time.Duration
	client, permits    int
}

func (t template) render(v *specVars) string {
	if len(t) == 1 { // the usual "{key}", "{token}" or a literal: no builder
		switch t[0].ph {
		case -1:
			return t[0].lit
		case phKey:
			return v.key
		case phToken:
			return v.token
		}
	}
	var b strings.Builder
	for _, p := range t {
		switch p.ph {
		case -1:
			b.WriteString(p.lit)
		case phKey:
			b.WriteString(v.key)
		case phToken:
			b.WriteString(v.token)
		case phTTLms:
			b.WriteString(strconv.FormatInt(v.ttl.Milliseconds(), 10))
		case phTTLs:
			b.WriteString(strconv.FormatInt(int64(v.ttl/time.Second), 10))
		case phClient:
			b.WriteString(strconv.Itoa(v.client))
		case phPermits:
			b.WriteString(strconv.Itoa(v.permits))
		case phAccess:
			b.WriteString(v.access)
		}
	}
	return b.String()
}

// maxSpec bounds a lock spec file: three scripts and their settings.
const maxSpec = 1 << 20

// readSpec reads path, refusing one past maxSpec (/dev/zero, a log file
// given by mistake) without reading it all.
func readSpec(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxSpec+1))
	if err == nil && len(src) > maxSpec {
		err = fmt.Errorf("%s is over %d bytes: not a lock spec", path, maxSpec)
	}
	return src, err
}

// LoadSpec reads and checks a spec file. Its errors are one line, with the
// file and, where there is one, the line.
func LoadSpec(path string) (*Spec, error) {
	src, err := readSpec(path)
	if err != nil {
		return nil, fmt.Errorf("lock spec: %w", err)
	}
	var s Spec
	md, err := toml.Decode(string(src), &s)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s (the spec is TOML; see examples/setnx.toml)", path, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%s: %v (see examples/setnx.toml)", path, err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		k := u[0]
		section := ""
		if len(k) > 1 {
			section = k[0]
		}
		return nil, fmt.Errorf("%s:%d: unknown field %q (the top takes name, description, shape and writer_preference; a section script, keys, args, fence (acquire) and mode (extend); [wait] poll_ms and wake_bound_ms)",
			path, fieldLine(src, section, k[len(k)-1]), k.String())
	}
	sum := sha256.Sum256(src)
	s.Path, s.Version = path, hex.EncodeToString(sum[:6])
	if s.Name == "" {
		return nil, fmt.Errorf(`%s: no name (add a line name = "my-lock" at the top)`, path)
	}
	if err := s.checkShape(src, md); err != nil {
		return nil, err
	}
	for _, sec := range s.sections() {
		if err := s.section(src, md, sec.name, sec.sc); err != nil {
			return nil, err
		}
	}
	return &s, s.shapeTakes(src)
}

// specSection is one section of a spec and its name.
type specSection struct {
	name string
	sc   *SpecScript
}

// sections are the spec's sections: [read_acquire] a read-write lock's
// only.
func (s *Spec) sections() []specSection {
	secs := []specSection{{"acquire", &s.Acquire}, {"release", &s.Release}, {"extend", &s.Extend}}
	if s.Shape == ShapeRWLock {
		secs = append(secs, specSection{"read_acquire", &s.ReadAcquire})
	}
	if s.Shape == ShapeReentrant && s.Reenter.Script != "" {
		secs = append(secs, specSection{"reenter", &s.Reenter})
	}
	return secs
}

// checkShape checks the shape the spec declares, and that only a
// read-write lock has a [read_acquire] and a writer preference.
func (s *Spec) checkShape(src []byte, md toml.MetaData) error {
	switch s.Shape {
	case "":
		s.Shape = ShapeMutex
	case ShapeMutex, ShapeSemaphore, ShapeRWLock, ShapeReentrant:
	default:
		return fmt.Errorf(`%s:%d: shape %q: a spec's shape is "mutex" (the default), "semaphore", "rwlock" or "reentrant"`, s.Path, fieldLine(src, "", "shape"), s.Shape)
	}
	if err := s.checkSpecShapes(src, md); err != nil {
		return err
	}
	if s.Shape == ShapeRWLock {
		return nil
	}
	if md.IsDefined("read_acquire") {
		return fmt.Errorf(`%s:%d: [read_acquire] is a read-write lock's: add shape = "rwlock" at the top, or drop the section`, s.Path, lineOf(src, "[read_acquire]"))
	}
	if md.IsDefined("writer_preference") {
		return fmt.Errorf(`%s:%d: writer_preference is a read-write lock's: add shape = "rwlock" at the top, or drop it`, s.Path, fieldLine(src, "", "writer_preference"))
	}
	return nil
}

// shapeTakes checks that {permits} is where the shape needs it: in a
// semaphore's [acquire], and in no other shape's spec; {access} is a
// read-write lock's only.
func (s *Spec) shapeTakes(src []byte) error {
	switch {
	case s.Shape == ShapeSemaphore && !s.permitsIn["acquire"]:
		return fmt.Errorf(`%s:%d: [acquire] of a semaphore takes {permits} (the k of --permits) in its keys or args`, s.Path, lineOf(src, "[acquire]"))
	case s.Shape != ShapeSemaphore && len(s.permitsIn) > 0:
		return fmt.Errorf(`%s:%d: {permits} is a semaphore's: add shape = "semaphore" at the top`, s.Path, lineOf(src, "{permits}"))
	case s.Shape != ShapeRWLock && s.usesAccess:
		return fmt.Errorf(`%s:%d: {access} is a read-write lock's: add shape = "rwlock" at the top`, s.Path, lineOf(src, "{access}"))
	}
	return nil
}

// section checks one section and compiles its keys and args.
func (s *Spec) section(src []byte, md toml.MetaData, name string, sc *SpecScript) error {
	path := s.Path
	if !md.IsDefined(name) {
		if name == "read_acquire" {
			return fmt.Errorf("%s: no [read_acquire] section (a read-write lock's spec has one beside [acquire], its write acquire)", path)
		}
		return fmt.Errorf("%s: no [%s] section (a spec needs [acquire], [release] and [extend], each with script, keys and args)", path, name)
	}
	if strings.TrimSpace(sc.Script) == "" {
		return fmt.Errorf("%s:%d: [%s] has no script", path, lineOf(src, "["+name+"]"), name)
	}
	if sc.Fence && name != "acquire" && name != "read_acquire" {
		return fmt.Errorf("%s:%d: fence is an option of [acquire] and [read_acquire] only, not [%s]", path, fieldLine(src, name, "fence"), name)
	}
	if sc.Mode != "" && (name != "extend" || (sc.Mode != "set" && sc.Mode != "add")) {
		return fmt.Errorf(`%s:%d: mode %q in [%s]: mode is an option of [extend] only, "set" (default) or "add"`,
			path, fieldLine(src, name, "mode"), sc.Mode, name)
	}
	var err error
	if sc.keys, err = s.compile(src, name, "keys", sc.Keys); err != nil {
		return err
	}
	sc.args, err = s.compile(src, name, "args", sc.Args)
	return err
}

func (s *Spec) compile(src []byte, section, field string, in []string) ([]template, error) {
	out := make([]template, len(in))
	for i, v := range in {
		var t template
		rest := v
		for rest != "" {
			loc := placeholderRE.FindStringIndex(rest)
			if loc == nil {
				t = append(t, tpart{lit: rest, ph: -1})
				break
			}
			if loc[0] > 0 {
				t = append(t, tpart{lit: rest[:loc[0]], ph: -1})
			}
			name := rest[loc[0]:loc[1]]
			ph, ok := placeholders[name]
			if !ok {
				return nil, fmt.Errorf("%s:%d: unknown placeholder %s in [%s] %s (known: {key} {token} {ttl_ms} {ttl_s} {client} {permits} {access})",
					s.Path, lineOf(src, name), name, section, field)
			}
			s.usesTTLs = s.usesTTLs || ph == phTTLs
			if ph == phPermits {
				if s.permitsIn == nil {
					s.permitsIn = map[string]bool{}
				}
				s.permitsIn[section] = true
			}
			s.usesAccess = s.usesAccess || ph == phAccess
			t = append(t, tpart{ph: ph})
			rest = rest[loc[1]:]
		}
		if len(t) == 0 {
			t = template{{lit: "", ph: -1}}
		}
		out[i] = t
	}
	return out, nil
}

// fieldLine is the line of field's assignment in [section] ("": the top).
func fieldLine(src []byte, section, field string) int {
	from := 0
	if section != "" {
		from = max(0, strings.Index(string(src), "["+section+"]"))
	}
	re := regexp.MustCompile(`(?m)^\s*"?` + regexp.QuoteMeta(field) + `"?\s*=`)
	if loc := re.FindIndex(src[from:]); loc != nil {
		return strings.Count(string(src[:from+loc[0]]), "\n") + 1
	}
	return lineOf(src, "["+section+"]")
}

// lineOf is the first line of src that contains s (1 if none).
func lineOf(src []byte, s string) int {
	if i := strings.Index(string(src), s); i >= 0 {
		return strings.Count(string(src[:i]), "\n") + 1
	}
	return 1
}

// SpecEntry is the lock of a spec file (--lock-spec), named as the spec
// names it.
func SpecEntry(s *Spec) Entry {
	return Entry{Name: s.Name, Description: "spec " + s.Path, Factory: s.Factory, CheckTTL: s.CheckTTL, Shape: s.Shape,
		Version: "spec " + s.Path + " sha256:" + s.Version}
}

// CheckTTL says whether the spec can run with ttl: {ttl_s} needs whole
// seconds, or the key would live longer or shorter than the lease.
func (s *Spec) CheckTTL(ttl time.Duration) error {
	if s.usesTTLs && ttl%time.Second != 0 {
		return fmt.Errorf("%s uses {ttl_s}, so the TTL must be whole seconds, not %v (a key would outlive its lease or die before it): use {ttl_ms}, or a TTL of whole seconds", s.Path, ttl)
	}
	return nil
}

// Factory builds the spec's Locker: the scripts are loaded once (SCRIPT
// LOAD, which also finds a script that does not compile) and called with
// EVALSHA (EVAL if a restarted node lost them).
func (s *Spec) Factory(env Env) (Locker, error) {
	c, err := newClient(env)
	if err != nil {
		return nil, err
	}
	if err := s.underPrefix(env.KeyPrefix); err != nil {
		c.Close()
		return nil, err
	}
	l := &specLock{spec: s, c: c, now: ClockOf(env), scripts: map[string]*redis.Script{}, k: 1}
	if s.Shape == ShapeSemaphore {
		l.k = max(env.Permits, 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, sec := range s.sections() {
		sc := redis.NewScript(sec.sc.Script)
		l.scripts[sec.name] = sc
		if err := sc.Load(ctx, c).Err(); err != nil {
			c.Close()
			var re redis.Error
			if errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM") {
				return nil, fmt.Errorf("%w: a lock spec loads its scripts with SCRIPT LOAD, which this Redis user may not run (%v): ACL SETUSER <user> +script|load", ErrBadLock, err)
			}
			if errors.As(err, &re) {
				return nil, fmt.Errorf("%w: %s: [%s] script: %v", ErrBadLock, s.Path, sec.name, err)
			}
			return nil, fmt.Errorf("load %s: %w", s.Path, err)
		}
	}
	if env.Cluster {
		if err := s.sameSlot(ctx, c); err != nil {
			c.Close()
			return nil, err
		}
	}
	switch s.Shape {
	case ShapeRWLock:
		return &specRWLock{l}, nil
	case ShapeReentrant:
		return &specReentrant{l}, nil
	}
	return l, nil
}

// underPrefix refuses a spec that names a key outside prefix (external
// Redis: lockcheck touches only keys under --key-prefix). The lock keys
// are prefix{lock:N}, so "{key}:fence" shares their slot.
func (s *Spec) underPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	v := &specVars{key: prefix + "{lock:0}", token: "t", ttl: time.Second}
	for _, sec := range s.sections() {
		ss := sec.sc
		if err := reachesOut(ss.Script); err != nil {
			return fmt.Errorf("%w: %s: %v: on an external Redis lockcheck touches only keys under --key-prefix, and a lock's script only the KEYS it is given", ErrBadLock, s.Path, err)
		}
		for i, t := range ss.keys {
			if k := t.render(v); !strings.HasPrefix(k, prefix) {
				return fmt.Errorf("%w: %s: key %q is %q for lock key %q, outside --key-prefix %q: on an external Redis lockcheck touches only keys under it; start the key with the lock key (\"{key}:fence\")",
					ErrBadLock, s.Path, ss.Keys[i], k, v.key, prefix)
			}
		}
	}
	return nil
}

// scriptCall is a redis.call or redis.pcall in a script whose command is
// a string literal, and its first argument if that is one too.
var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*(?:"([^"]*)"|'([^']*)')\s*(?:,\s*(?:"([^"]*)"|'([^']*)'))?`)

// globalCommands act on the whole server, or on keys a script is not
// given: never a lock's business on a Redis lockcheck does not run.
var globalCommands = map[string]bool{"flushall": true, "flushdb": true, "swapdb": true, "select": true, "move": true,
	"keys": true, "scan": true, "randomkey": true, "config": true, "debug": true, "shutdown": true, "script": true,
	"function": true, "client": true, "acl": true, "migrate": true, "copy": true}

// keylessFirst are commands whose first argument is not a key.
var keylessFirst = map[string]bool{"publish": true, "spublish": true, "echo": true, "ping": true}

// reachesOut reports a script call that reaches past the keys the script
// is given: a server-wide command, or a key named as a literal instead of
// taken from KEYS. It reads the script's text, so a command name built at
// run time escapes it; an ACL user limited to the prefix (~prefix*) is
// the guard that does not.
func reachesOut(script string) error {
	for _, m := range scriptCall.FindAllStringSubmatch(script, -1) {
		cmd := strings.ToLower(m[1] + m[2])
		switch {
		case globalCommands[cmd]:
			return fmt.Errorf("its script calls %s", strings.ToUpper(cmd))
		case m[3]+m[4] != "" && !keylessFirst[cmd]:
			return fmt.Errorf("its script calls %s on key %q by name, not from KEYS", strings.ToUpper(cmd), m[3]+m[4])
		}
	}
	return nil
}

// sameSlot refuses a spec whose sections name keys in different cluster
// slots (a script may touch keys of one slot only), asking Redis where
// each key of lock key "lock:0" hashes.
func (s *Spec) sameSlot(ctx context.Context, c redis.UniversalClient) error {
	v := &specVars{key: "lock:0", token: "t", ttl: time.Second}
	first, firstSlot := "", int64(-1)
	for _, sec := range s.sections() {
		ss := sec.sc
		for i, t := range ss.keys {
			k := t.render(v)
			slot, err := c.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				return fmt.Errorf("load %s: %w", s.Path, err)
			}
			if firstSlot < 0 {
				first, firstSlot = k, slot
			} else if slot != firstSlot {
				return fmt.Errorf("%w: %s: key %q (%s) and key %q are in different cluster slots (%d, %d): a script may touch one slot only; put the lock key in a hash tag, e.g. \"{{key}}:fence\"",
					ErrBadLock, s.Path, ss.Keys[i], k, first, slot, firstSlot)
			}
		}
	}
	return nil
}

type specLock struct {
	spec *Spec
	c    redis.UniversalClient
	now  func() int64
	// scripts are the sections' scripts, by section name.
	scripts map[string]*redis.Script
	// k is a semaphore's permits a key (1: another shape).
	k int
}

// Permits implements Permitter: the run's --permits for a semaphore's
// spec, 1 for any other.
func (l *specLock) Permits() int { return l.k }

// ExtendAdds implements AddExtender.
func (l *specLock) ExtendAdds() bool { return l.spec.Extend.Mode == "add" }

// Close implements Closer.
func (l *specLock) Close() error { return l.c.Close() }

// call runs one section's script and maps its reply: OK, an integer >= 1
// (Lua true is 1) is success; nil (Lua false) or an integer <= 0 is a
// definite failure (notHeld); an error the script returns, or a timeout,
// is indeterminate; an error with which Redis refuses a command as
// written (badReply: NOPERM, WRONGTYPE, a failing script) and any other
// reply are spec errors (ErrBadLock).
func (l *specLock) call(ctx context.Context, name string, ss *SpecScript, v *specVars, notHeld error) (int64, error) {
	sc := l.scripts[name]
	v.permits = l.k
	keys := make([]string, len(ss.keys))
	for i, t := range ss.keys {
		keys[i] = t.render(v)
	}
	args := make([]any, len(ss.args))
	for i, t := range ss.args {
		args[i] = t.render(v)
	}
	val, err := sc.Run(ctx, l.c, keys, args...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, notHeld
	case err != nil:
		return 0, firstErr(name, v.key, err)
	}
	switch r := val.(type) {
	case int64:
		if r >= 1 {
			return r, nil
		}
		return 0, notHeld
	case string:
		if r == "OK" {
			return 0, nil
		}
	}
	return 0, fmt.Errorf("%w: %s: [%s] script replied %#v; a spec script must reply OK, an integer, true, false or nil", ErrBadLock, l.spec.Path, name, val)
}

func (l *specLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return l.acquireIn(ctx, key, ttl, history.AccessWrite)
}

// acquireIn runs [acquire] (access write) or [read_acquire] (read). The
// lease keeps its access (Handle) for the {access} of its release and
// extends.
func (l *specLock) acquireIn(ctx context.Context, key string, ttl time.Duration, access string) (Lease, error) {
	return l.try(ctx, key, NewToken(), ttl, access)
}

// try is one acquire of key under token, in access's section.
func (l *specLock) try(ctx context.Context, key, token string, ttl time.Duration, access string) (Lease, error) {
	name, sec := "acquire", &l.spec.Acquire
	if access == history.AccessRead {
		name, sec = "read_acquire", &l.spec.ReadAcquire
	}
	ls := Lease{Key: key, Token: token, Acquired: time.Duration(l.now()), TTL: ttl, Handle: access}
	n, err := l.call(ctx, name, sec, &specVars{key: key, token: ls.Token, access: access, ttl: ttl, client: ClientFrom(ctx)}, ErrNotAcquired)
	if err != nil {
		return Lease{}, err
	}
	if sec.Fence {
		if n < 1 {
			return Lease{}, fmt.Errorf("%w: %s: [%s] has fence = true but replied OK, not an integer fencing token", ErrBadLock, l.spec.Path, name)
		}
		ls.Fence = n
	}
	return ls, nil
}

// accessOf is the access a lease of acquireIn was taken in.
func accessOf(ls Lease) string {
	a, _ := ls.Handle.(string)
	return cmp.Or(a, history.AccessWrite)
}

// specRWLock is a read-write lock's spec (shape = "rwlock"): a
// ReadWriter, whose read acquires run [read_acquire].
type specRWLock struct{ *specLock }

// Acquire implements Locker: in the mode ctx names (AccessOf), a write
// if none.
func (l *specRWLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return l.AcquireIn(ctx, key, ttl, AccessOf(ctx))
}

// AcquireIn implements ReadWriter.
func (l *specRWLock) AcquireIn(ctx context.Context, key string, ttl time.Duration, access string) (Lease, error) {
	if err := CheckAccess(access); err != nil {
		return Lease{}, err
	}
	return l.acquireIn(ctx, key, ttl, access)
}

// WritersPreferred implements ReadWriter: as the spec declares
// (writer_preference).
func (l *specRWLock) WritersPreferred() bool { return l.spec.WriterPreference }

func (l *specLock) Release(ctx context.Context, ls Lease) error {
	_, err := l.call(ctx, "release", &l.spec.Release, &specVars{key: ls.Key, token: ls.Token, access: accessOf(ls), ttl: ls.TTL, client: ClientFrom(ctx)}, ErrNotHeld)
	return err
}

func (l *specLock) Extend(ctx context.Context, ls Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(l.now())
	if _, err := l.call(ctx, "extend", &l.spec.Extend, &specVars{key: ls.Key, token: ls.Token, access: accessOf(ls), ttl: ttl, client: ClientFrom(ctx)}, ErrNotHeld); err != nil {
		return Lease{}, err
	}
	if l.ExtendAdds() {
		ls.TTL += ttl // the deadline moves by ttl
	} else {
		ls.Acquired, ls.TTL = call, ttl
	}
	return ls, nil
}
