package lockimpl

// brokenResendEntry is "broken-resend".
var brokenResendEntry = Entry{Name: "broken-resend", Broken: true, Factory: newResend,
	Description: `its go-redis client resends a command whose reply was lost (go-redis's default: 3 retries), so a resent SET NX finds the key its first attempt set and reports "not acquired" while it holds it`}

// newResend is SetNX on a client with go-redis's default retries.
func newResend(env Env) (Locker, error) {
	env.resend = true
	return NewSetNX(env)
}
