package slurmapi

import (
	"net/http"
	"strings"
)

// notImplementedWhy says, per endpoint of the official documents that
// Sluice does not serve, why. Anything not listed is "not implemented yet".
var notImplementedWhy = map[string]string{
	"slurm/jobs/requeue":               "use job/{job_id}/requeue per job",
	"slurm/reconfigure":                "configuration comes from Kubernetes objects, which apply without reconfigure",
	"slurm/new/node":                   "nodes are Kubernetes Nodes; add them to the cluster",
	"slurm/resources/{job_id}":         "per-core resource layouts do not exist on Kubernetes",
	"slurm/conf":                       "there is no slurm.conf; see the Partition, Queue and QOS objects",
	"slurm/nodes":                      "nodes are changed through Kubernetes (cordon, taints) and the remediation controller",
	"slurm/node/{node_name}":           "nodes are removed through Kubernetes (kubectl delete node); POST drains or resumes one",
	"slurm/partitions":                 "partitions are Partition objects; change them with kubectl or the Helm chart",
	"slurm/partition/{partition_name}": "partitions are Partition objects; delete them with kubectl",
	"slurmdb/job/{job_id}":             "accounting records are written by the recorder, not changed over REST",
	"slurmdb/jobs":                     "accounting records are written by the recorder, not changed over REST",
	"slurmdb/config":                   "load configuration through the Queue and QOS objects",
	"slurmdb/conf":                     "there is no slurmdbd.conf",
	"slurmdb/tres":                     "the TRES list is fixed (cpu, mem, node, billing, gres/gpu)",
	"slurmdb/instances":                "Sluice has no cloud instance records",
	"slurmdb/instance":                 "Sluice has no cloud instance records",
	"slurmdb/association":              "use associations/",
	"slurmdb/users_association":        "use users/ with associations",
	"slurmdb/accounts_association":     "use accounts/ and associations/",
	"slurmdb/cluster/{cluster_name}":   "Sluice presents exactly one cluster",
	"slurmdb/clusters":                 "Sluice presents exactly one cluster",
	"slurmdb/wckey/{id}":               "Sluice has no workload characterization keys",
	"slurmdb/wckeys":                   "Sluice has no workload characterization keys",
	"slurmdb/user/{name}":              "users leave through their associations (associations/ DELETE)",
	"slurmdb/associations":             "remove users from a Queue with kubectl",
}

// unimplemented answers a documented endpoint Sluice does not serve.
func unimplemented(key string) handlerFunc {
	why, ok := notImplementedWhy[key]
	if !ok {
		why = "not implemented"
	}
	return func(s *Server, c *call) (map[string]any, error) {
		return nil, Errorf(http.StatusNotImplemented, ErrNotSupported, strings.ToUpper(c.r.Method)+" "+key,
			"%s %s is not served by Sluice: %s", c.r.Method, key, why)
	}
}
