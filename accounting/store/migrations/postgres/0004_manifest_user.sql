-- A manifest workload's user is its namespace's principal, "ns:<namespace>"
-- (v1alpha1.ManifestUser), no longer the bare namespace name, which a Slurm
-- user of the same name would have been taken for. Rows recorded before are
-- renamed so sacct -u ns:<namespace> and sshare find the whole history.
UPDATE jobs SET user_name = 'ns:' || namespace
 WHERE origin = 'kubernetes' AND user_name = namespace AND namespace <> '';
