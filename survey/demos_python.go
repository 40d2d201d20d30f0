package survey

// pythonDemos are the demonstrations written in Python.
var pythonDemos = []Demo{
	{Name: "tooz-heartbeat", Cmd: []string{"/usr/bin/python3", "survey/demos/tooz-heartbeat.py"},
		Shows: []string{"tooz kill-everysec", "tooz kill-always", "tooz kill-delayed", "tooz pause-redis", "tooz cut-off", "tooz stall-quiet", "tooz kill-extend"},
		Departs: "the adapter (examples/adapters/tooz/lock.py) sets the driver's `timeout` (its Redis socket timeout, tooz's default 30 s) to lockcheck's op timeout in whole seconds (2 s by default) beside `lock_timeout`, " +
			"shares one coordinator among the holders of a process with the same lock_timeout, and never calls `is_still_owner()`; the demonstration sets lock_timeout only, one coordinator per holder"},
}
