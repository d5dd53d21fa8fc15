// Package slurmapi is Sluice's slurmrestd-compatible REST front end: the
// HTTP server for /slurm/ and /slurmdb/ at data_parser versions v0.0.41 to
// v0.0.45, auth/jwt-style tokens, and the translation of sbatch-style
// submissions into one internal job description.
//
// # One model, rendered per version
//
// Handlers work on one internal model (JobDesc, Job, Node, Partition, ...)
// and render each answer once, as a JSON tree in the union of all
// versions' fields with the newest names and Slurm's no-value structs
// ({"set","infinite","number"}). The official document of the requested
// version, compiled once at start-up into compact shapes
// (package openapi), then converts that tree: fields the version lacks are
// dropped, a no-value struct becomes a plain number where the version
// wants one (v0.0.41 shares) and the reverse, enum values unknown to the
// version are dropped. Error answers start from the smallest payload the
// version's schema requires, because slurmrestd documents errors with the
// same schema as success.
//
// This was chosen over hand-written or generated per-version types because
// the five versions differ in a few dozen fields out of thousands: one
// renderer and a schema-driven conversion keep those differences in the
// contract files rather than in five copies of every type, and a new
// version is one more embedded document. The cost is a walk over each
// response tree; no document is parsed and no reflection-heavy validation
// runs per request. Tests (package openapi/openapitest) validate every
// response body against its version's document with kin-openapi, with
// object schemas closed so that a field leaking from a newer version fails.
//
// # Requests
//
// Submissions decode into JobDesc (DecodeSubmission): explicit REST fields
// win, #SBATCH directives of the script (package sbatch, parsed as sbatch
// does) fill what is unset, then the Catalog (partitions, accounts, QOS,
// associations) supplies defaults and refuses what Slurm would refuse.
// Every bad input is an *Error: a 4xx status and one errors[] entry with
// Slurm's error number, short text, a description naming the problem, and
// the source field.
//
// # Wiring
//
// NewServer(Config, Backend) returns the http.Handler that `sluice server`
// mounts on port 6820 (DefaultPort). Backend is implemented on Kubernetes
// (PodGroups, Nodes, the Sluice CRDs) and the accounting ledger; with a nil
// Backend only ping, diag, licenses and /openapi/v3 answer. MintToken and
// LoadOrCreateKey serve `sluice token`; sbatch.Table is the option table
// `sluice sbatch` shares.
package slurmapi
