package slurmapi

import "net/http"

// routes are the implemented endpoints, each registered under every
// version whose official document has it (so job/{job_id}/requeue only
// under v0.0.45). Paths use the documents' parameter names.
var routes = []route{
	{"slurm", "/ping", http.MethodGet, handlePing, false},
	{"slurm", "/diag", http.MethodGet, handleDiag, false},
	{"slurm", "/licenses", http.MethodGet, handleLicenses, false},
	{"slurm", "/job/submit", http.MethodPost, handleSubmit, true},
	{"slurm", "/job/allocate", http.MethodPost, handleAllocate, true}, // before job/{job_id}
	{"slurm", "/jobs", http.MethodGet, handleJobs, true},
	{"slurm", "/jobs", http.MethodDelete, handleKillJobs, true},
	{"slurm", "/jobs/state", http.MethodGet, handleJobsState, true},
	{"slurm", "/job/{job_id}", http.MethodGet, handleJob, true},
	{"slurm", "/job/{job_id}", http.MethodPost, handleUpdateJob, true},
	{"slurm", "/job/{job_id}", http.MethodDelete, handleKillJob, true},
	{"slurm", "/job/{job_id}/requeue", http.MethodGet, handleRequeueJob, true},
	{"slurm", "/nodes", http.MethodGet, handleNodes, true},
	{"slurm", "/node/{node_name}", http.MethodGet, handleNode, true},
	{"slurm", "/node/{node_name}", http.MethodPost, handleUpdateNode, true},
	{"slurm", "/partitions", http.MethodGet, handlePartitions, true},
	{"slurm", "/partition/{partition_name}", http.MethodGet, handlePartition, true},
	{"slurm", "/shares", http.MethodGet, handleShares, true},
	{"slurm", "/reservations", http.MethodGet, handleReservations, true},
	{"slurm", "/reservations", http.MethodPost, handlePostReservations, true},
	{"slurm", "/reservation", http.MethodPost, handlePostReservation, true},
	{"slurm", "/reservation/{reservation_name}", http.MethodGet, handleReservation, true},
	{"slurm", "/reservation/{reservation_name}", http.MethodDelete, handleDeleteReservation, true},

	{"slurmdb", "/ping", http.MethodGet, handlePing, false},
	{"slurmdb", "/diag", http.MethodGet, handleDBDiag, false},
	{"slurmdb", "/jobs", http.MethodGet, handleDBJobs, true},
	{"slurmdb", "/job/{job_id}", http.MethodGet, handleDBJob, true},
	{"slurmdb", "/accounts", http.MethodGet, handleAccounts, true},
	{"slurmdb", "/accounts", http.MethodPost, handlePostAccounts, true},
	{"slurmdb", "/account/{account_name}", http.MethodGet, handleAccount, true},
	{"slurmdb", "/account/{account_name}", http.MethodDelete, handleDeleteAccount, true},
	{"slurmdb", "/associations", http.MethodGet, handleAssociations, true},
	{"slurmdb", "/associations", http.MethodPost, handlePostAssociations, true},
	{"slurmdb", "/qos", http.MethodGet, handleQOSList, true},
	{"slurmdb", "/qos", http.MethodPost, handlePostQOS, true},
	{"slurmdb", "/qos/{qos}", http.MethodGet, handleQOS, true},
	{"slurmdb", "/qos/{qos}", http.MethodDelete, handleDeleteQOS, true},
	{"slurmdb", "/users", http.MethodGet, handleUsers, true},
	{"slurmdb", "/users", http.MethodPost, handlePostUsers, true},
	{"slurmdb", "/user/{name}", http.MethodGet, handleUser, true},
	{"slurmdb", "/tres", http.MethodGet, handleTRES, true},
	{"slurmdb", "/association", http.MethodGet, handleAssociations, true},
	{"slurmdb", "/clusters", http.MethodGet, handleClusters, false},
	{"slurmdb", "/cluster/{cluster_name}", http.MethodGet, handleCluster, false},
	{"slurmdb", "/config", http.MethodGet, handleDBConfig, true},
}
