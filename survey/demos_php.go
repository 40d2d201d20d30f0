package survey

// phpDemos are the demonstrations written in PHP.
var phpDemos = []Demo{
	{Name: "phpredis-desync", Cmd: []string{"php", "examples/adapters/php/phpredis_desync.php"},
		Shows: []string{"malkusch pause-redis", "malkusch stall-quiet"},
		Departs: "connects with the 0.5 s read timeout lockcheck's adapter sets (examples/adapters/php/lock.php, dial(): connect(host, port, 0.5, null, 0, 0.5), the op timeout), where malkusch's README connects with phpredis's default, default_socket_timeout (60 s), under which the same stall does not desync (phpredis-default-timeout); " +
			"and it sends by hand the two commands malkusch's spin loop sends (SET NX EX, the release EVAL) rather than calling synchronized()"},
	{Name: "phpredis-default-timeout", Cmd: []string{"php", "survey/demos/phpredis-default-timeout.php"},
		Shows:   []string{"malkusch pause-redis", "malkusch stall-quiet"},
		Departs: "none in the connection (connect(host, port), as malkusch's README); it sends by hand the two commands malkusch's spin loop sends, as phpredis-desync does. It exits 0: at phpredis's default read timeout a 1.2 s stall only delays the replies, and the desync does not show"},
	{Name: "symfony-semaphore-expireat", Cmd: []string{"php", "survey/demos/symfony-semaphore-expireat.php"},
		Shows: []string{"symfony-semaphore overrun", "symfony-semaphore overrun-free", "symfony-semaphore extend", "symfony-semaphore pause", "symfony-semaphore crash",
			"symfony-semaphore cut-off", "symfony-semaphore pause-redis", "symfony-semaphore lost-reply", "symfony-semaphore stall-quiet",
			// At 3 permits, the same lines (semaphoreExpireAt3).
			"symfony-semaphore-3 overrun", "symfony-semaphore-3 overrun-free", "symfony-semaphore-3 extend", "symfony-semaphore-3 pause", "symfony-semaphore-3 crash",
			"symfony-semaphore-3 cut-off", "symfony-semaphore-3 client-clock", "symfony-semaphore-3 pause-redis", "symfony-semaphore-3 lost-reply", "symfony-semaphore-3 stall-quiet"}},
	{Name: "symfony-semaphore-second", Cmd: []string{"php", "survey/demos/symfony-semaphore-second.php"},
		Shows: []string{"symfony-semaphore contention", "symfony-semaphore kill-always", "symfony-semaphore kill-delayed", "symfony-semaphore kill-extend",
			"symfony-semaphore-3 contention", "symfony-semaphore-3 kill-always", "symfony-semaphore-3 kill-delayed",
			"symfony-semaphore-3 kill-none", "symfony-semaphore-3 kill-everysec", "symfony-semaphore-3 clock-jump"}}, // at 3 permits too (semaphoreSecond3)
	{Name: "symfony-shared-refresh", Cmd: []string{"php", "survey/demos/symfony-shared-refresh.php"},
		Shows: []string{"symfony-shared extend"}},
	{Name: "malkusch-timeout-plus-one", Cmd: []string{"php", "survey/demos/malkusch-timeout-plus-one.php"},
		Shows: []string{"malkusch kill-delayed"}},
	{Name: "redlock-bare-majority", Cmd: []string{"php", "survey/demos/redlock-bare-majority.php"},
		Shows: []string{"symfony-redlock kill-quorum", "malkusch-redlock kill-quorum"}},
	{Name: "redlock-clock-quorum", Cmd: []string{"php", "survey/demos/redlock-clock-quorum.php"},
		Shows: []string{"symfony-redlock clock-quorum", "malkusch-redlock clock-quorum"}},
	{Name: "symfony-redlock-refresh", Cmd: []string{"php", "survey/demos/symfony-redlock-refresh.php"},
		Shows: []string{"symfony-redlock kill-extend"}},
}
