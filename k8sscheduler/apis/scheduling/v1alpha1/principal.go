package v1alpha1

// ManifestUserPrefix starts the user name of every job that came from a
// Kubernetes manifest rather than from sbatch: "ns:" and the namespace.
// ':' separates fields in /etc/passwd, so no Slurm user (and no token the
// Slurm API accepts) can carry it: a REST user named like a namespace is
// never taken for that namespace's workloads.
const ManifestUserPrefix = "ns:"

// ManifestUser is the principal squeue, sacct and the ledger show for a
// manifest workload in namespace: who created it is not recorded, the
// namespace whose rights created it is.
func ManifestUser(namespace string) string { return ManifestUserPrefix + namespace }
