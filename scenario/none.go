package scenario

// none is none: no fault, the lock alone under the base workload.
var none = Scenario{Name: "none", Description: "no fault"}
