package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// isBadReply reports whether an error reply is one with which Redis
// refuses a command as written: the user may not run it or touch its key
// (NOPERM), the key holds another type (WRONGTYPE), the command does not
// exist or has the wrong arguments, or a script failed (Redis 7 names
// the script in the error: user_script). The command did not do what the
// lock meant, and would not on any try, so the outcome is not
// indeterminate: the lock under test is wrong as a program, and the run
// stops (exit 2) with the reply. A server that cannot serve now (OOM,
// BUSY, LOADING, READONLY after a failover, ...) is not the lock's fault,
// and an error a script returns on purpose (redis.error_reply) names no
// user_script: both stay indeterminate.
func isBadReply(msg string) bool {
	for _, p := range []string{"OOM", "BUSY", "LOADING", "READONLY", "MASTERDOWN", "NOREPLICAS", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK"} {
		if strings.HasPrefix(msg, p) {
			return false
		}
	}
	for _, p := range []string{"NOPERM", "WRONGTYPE", "ERR unknown command", "ERR wrong number of arguments", "ERR Error running script"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return strings.Contains(msg, "user_script")
}

// badReply is the hook on every client a lock makes that turns those
// replies into ErrBadLock.
type badReply struct{}

func (badReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (badReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return markBad(cmd, next(ctx, cmd))
	}
}

func (badReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if e := markBad(cmd, cmd.Err()); e != cmd.Err() && err != nil {
				err = e
			}
		}
		return err
	}
}

// markBad sets cmd's error to ErrBadLock if err is a bad reply, and
// returns what cmd now says.
func markBad(cmd redis.Cmder, err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) || cmd.Name() == "script" {
		return err // SCRIPT LOAD is the lock's set-up, which says what failed itself
	}
	if !isBadReply(re.Error()) {
		return err
	}
	bad := fmt.Errorf("%w: redis refused %s: %w", ErrBadLock, strings.ToUpper(cmd.Name()), err)
	cmd.SetErr(bad)
	return bad
}
