package slurmapi

import "github.com/sluicehq/sluice/slurmapi/sbatch"

// jobStreams are the batch script's stdout, stderr and stdin as scontrol
// shows them: patterns expanded and made absolute against the working
// directory by the same function the pod uses to open the files, sbatch's
// default output when none was given, stderr with stdout when not split,
// and /dev/null for an unset stdin. A manifest job has no batch script
// and shows its fields as given.
func jobStreams(j *Job) (stdout, stderr, stdin string) {
	d := &j.Desc
	if j.Manifest {
		return d.Stdout, d.Stderr, d.Stdin
	}
	f := sbatch.FilenameFields{JobID: j.ID, Name: d.Name, User: d.User}
	if len(j.NodeNames) > 0 {
		f.Node = j.NodeNames[0]
	}
	if j.ArrayTaskID != nil {
		f.ArrayJobID, f.ArrayTaskID = j.ArrayJobID, j.ArrayTaskID
	} else if d.Array != "" {
		f.ArrayJobID = j.ID // the pending array record: %A is its own id
	}
	out := d.Stdout
	if out == "" {
		out = sbatch.DefaultOutput(d.Array != "" || j.ArrayTaskID != nil)
	}
	stdout = sbatch.ExpandPath(out, d.WorkDir, f)
	stderr = stdout
	if d.Stderr != "" {
		stderr = sbatch.ExpandPath(d.Stderr, d.WorkDir, f)
	}
	stdin = "/dev/null"
	if d.Stdin != "" {
		stdin = sbatch.ExpandPath(d.Stdin, d.WorkDir, f)
	}
	return stdout, stderr, stdin
}
