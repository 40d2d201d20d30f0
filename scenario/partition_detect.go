package scenario

import "github.com/lockcheck/lockcheck/cluster"

// partitionDetect is partition with the promotion left to Sentinel's
// failure detector: the master serves its clients until the sentinels
// find it down (down-after-milliseconds) and elect a replica, the timing
// production split brains come from.
var partitionDetect = func() Scenario {
	s := partition
	s.Name = "partition-detect"
	s.Description = "partition, the promotion left to Sentinel's failure detector (down-after-milliseconds), not forced"
	s.Failover = cluster.FailoverDetect
	return s
}()
