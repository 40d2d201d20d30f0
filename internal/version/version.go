// Package version holds lockcheck's version: recorded in run.json, and
// compared between a coordinator and its agents.
package version

// Version is lockcheck's version.
var Version = "0.1.0-dev"
