// Package chaos is the fault suite: each test breaks one part of a running
// rig (the API server, etcd, the leader replica, the watches, the ledger
// database, a node agent, a REST client's connection) while Slurm jobs are
// submitted over REST and manifest pods stream in, and checks afterwards that
// nothing acknowledged was lost, nothing ran twice, no GPU was handed out
// twice at any sampled moment and the ledger holds every job once. Each test
// reports how long the system took to recover; nothing asserts on time.
//
// `make test` runs it with small loads; `make chaos` sets
// SLUICE_CHAOS_SCALE=full for larger bursts and longer faults.
package chaos
