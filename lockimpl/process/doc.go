// Package process is a lock in any language as a lockcheck Locker: a
// program that speaks lockcheck's JSON-lines protocol on its stdin and
// stdout (docs/own-lock.md). Entry runs one process for every client
// (the wire types, the spawn, the multiplexer of requests in flight and
// their late replies are in process.go and late.go), PerClientEntry one
// process a client (pool.go: a pause stops that process whole), and
// Serve is the other side, a registered Go lock served as such a program
// (lockcheck serve). A process declares its shape in its first ping's
// reply (a semaphore's acquires then carry their permits, a read-write
// lock's their access mode), and a lock of that shape is what the run
// gets (process.go: fitsRun, shaped).
package process
