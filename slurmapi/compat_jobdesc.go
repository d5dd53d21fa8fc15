package slurmapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Support says what Sluice does with a job_desc_msg field or an sbatch
// option. Nothing is dropped without a word: a field is honoured, or
// accepted with a warning (REST warnings[], sbatch: warning: ...), or
// refused with Slurm's error for the feature being absent.
type Support int

const (
	Honoured Support = iota
	Warned
	Refused
)

func (s Support) String() string {
	return [...]string{"honoured", "accepted with a warning", "refused"}[s]
}

// FieldRule is how one job_desc_msg field is treated at submission.
type FieldRule struct {
	Name    string
	Support Support
	// Note says what the field does in Sluice; for Warned and Refused
	// it is the text of the warning or the error.
	Note string
	// Errno is the Slurm error a Refused field answers with.
	Errno int
}

func honour(name, note string) FieldRule { return FieldRule{name, Honoured, note, 0} }
func warn(name, why string) FieldRule    { return FieldRule{name, Warned, why, 0} }
func refuseField(name string, errno int, why string) FieldRule {
	return FieldRule{name, Refused, why, errno}
}

const (
	placement = "ignored: placement is the scheduler's"
	geometry  = "ignored: node geometry (boards, sockets, cores, threads) is not requested on Kubernetes"
	binding   = "ignored: CPU, memory and GPU binding are the kubelet's and the device plugin's"
)

// JobDescFields is every field of job_desc_msg in data_parser v0.0.41 to
// v0.0.45 with what Sluice does with it. A test checks that it covers the
// official documents, and docs/rest-compatibility.md is generated from it.
var JobDescFields = []FieldRule{
	honour("account", "the Queue the job is charged to; default: the user's default account"),
	warn("account_gather_frequency", "ignored: accounting samples come from the cluster's metrics"),
	warn("admin_comment", "ignored: administrators comment with kubectl annotate"),
	warn("allocation_node_list", "ignored: set by salloc and srun, which Sluice does not serve"),
	warn("allocation_node_port", "ignored: set by salloc and srun, which Sluice does not serve"),
	honour("argv", "the script's arguments ($1...); argv[0] is the script's path, as slurmstepd sets it"),
	honour("array", "job array, tasks split off as they start; see Job arrays"),
	warn("batch_features", placement),
	honour("begin_time", "the job stays pending (BeginTime) until then"),
	honour("flags", "SPREAD_JOB spreads the job over as many nodes as it can (--spread-job); any other flag is accepted with a warning and has no effect"),
	refuseField("burst_buffer", ErrInvalidBurstBuffer, "burst buffers are not configured"),
	warn("clusters", "ignored: Sluice is one cluster; the job runs here"),
	warn("cluster_constraint", "ignored: Sluice is one cluster"),
	honour("comment", ""),
	warn("contiguous", placement),
	refuseField("container", ErrNotSupported, "OCI bundles are not run; name an image with container_image (--container-image)"),
	warn("container_id", "ignored: the container is named by container_image"),
	warn("container_type", "ignored: the container is named by container_image"),
	warn("core_specification", "ignored: no cores are set aside for system use"),
	warn("thread_specification", "ignored: no threads are set aside for system use"),
	warn("cpu_binding", binding),
	warn("cpu_binding_flags", binding),
	warn("cpu_frequency", "ignored: CPU frequencies are not set"),
	warn("cpus_per_tres", "ignored: ask for CPUs with cpus_per_task"),
	refuseField("crontab", ErrNotSupported, "scrontab jobs are not supported; use a Kubernetes CronJob"),
	refuseField("deadline", ErrNotSupported, "jobs are not removed at a deadline"),
	warn("delay_boot", "ignored: nodes are not rebooted for jobs"),
	honour("dependency", "after, afterok, afternotok, afterany, singleton; see Known gaps"),
	warn("end_time", "ignored: the end is the time limit's"),
	honour("environment", "the job's environment; #SBATCH --export applies to it unless SLURM_EXPORT_ENV is set"),
	warn("rlimits", "ignored: the container's limits apply"),
	honour("excluded_nodes", "nodes the job must not use (sbatch -x); see docs/placement.md"),
	warn("extra", "ignored: no extra node constraints"),
	honour("constraints", "node features as node labels, with & and |, and one matching-or group [a|b] (all nodes share one of them); counts (a*2) refused; see docs/placement.md"),
	warn("group_id", "ignored: jobs run with the group the site maps to the user"),
	refuseField("hetjob_group", ErrNotSupported, "heterogeneous jobs are not supported"),
	refuseField("immediate", ErrNotSupported, "a job waits in the queue; it cannot fail when not started at once"),
	refuseField("job_id", ErrNotSupported, "job ids are assigned by Sluice"),
	warn("kill_on_node_fail", "ignored: a job losing a node is requeued (requeue) or ends NODE_FAIL"),
	refuseField("licenses", ErrInvalidLicenses, "no licenses are configured"),
	warn("mail_type", "ignored: no mail is sent"),
	warn("mail_user", "ignored: no mail is sent"),
	refuseField("mcs_label", ErrInvalidMCSLabel, "no MCS plugin is configured"),
	warn("memory_binding", binding),
	warn("memory_binding_type", binding),
	honour("memory_per_tres", "gres/gpu=MiB: memory per GPU (--mem-per-gpu)"),
	warn("memory_update_margin", "ignored: memory is not resized"),
	warn("memory_update_delay", "ignored: memory is not resized"),
	honour("name", "default: sbatch"),
	warn("network", "ignored: the pod network is the cluster's"),
	honour("nice", "taken off the priority; below 0 only for operators"),
	honour("tasks", ""),
	warn("oom_kill_step", "ignored: the kubelet's OOM handling applies"),
	honour("open_mode", "[\"APPEND\"] or [\"TRUNCATE\"]: how the batch script's output and error files are opened; default TRUNCATE (Slurm's JobFileAppend=0), a requeued run's too"),
	warn("reserve_ports", "ignored: no ports are reserved"),
	warn("resv_mpi_ports", "ignored: no ports are reserved"),
	warn("overcommit", "ignored: every task gets its CPUs"),
	warn("oversubscribe", placement),
	warn("exclusive", placement),
	honour("partition", "a name or a list a,b (runs in the first listed where it can start; each must admit the job); default: the site's default partition"),
	warn("distribution_plane_size", binding),
	warn("power_flags", "ignored: no power management"),
	warn("prefer", placement),
	honour("hold", ""),
	honour("priority", "operators and administrators only (403 otherwise)"),
	warn("profile", "ignored: no profiling plugin"),
	honour("qos", "default: the association's default QOS"),
	warn("reboot", "ignored: nodes are not rebooted for jobs"),
	honour("required_nodes", "nodes the job must use (sbatch -w); see docs/placement.md"),
	honour("requeue", "default true (Slurm's JobRequeue=1)"),
	honour("reservation", "the advance reservation the job runs in (scontrol create reservation); it must exist and admit the user or the job's account (2053, 2052 otherwise)"),
	honour("script", "required by job/submit; #SBATCH directives apply to the fields not given. job/allocate takes none (400 if given): its job is an allocation whose batch host serves `sluice srun` and `salloc` steps"),
	honour("shared", "[\"none\"] is --exclusive (whole nodes); [\"oversubscribe\"] is what Sluice does anyway (nodes are shared); other values are refused"),
	warn("site_factor", "ignored: no site priority factor"),
	warn("spank_environment", "ignored: no SPANK plugins run"),
	warn("step_id", "ignored: the batch step is created by Sluice"),
	warn("distribution", binding),
	honour("time_limit", "minutes; INFINITE or 0 ask for the partition's maximum"),
	warn("time_minimum", "ignored: the job's limit is time_limit"),
	warn("tres_bind", binding),
	warn("tres_freq", "ignored: GPU frequencies are not set"),
	honour("tres_per_job", "gres/gpu[:type]:N"),
	honour("tres_per_node", "gres/gpu[:type]:N, gres/shard:N, gres/mps:P"),
	warn("tres_per_socket", geometry),
	honour("tres_per_task", "gres/gpu[:type]:N"),
	warn("user_id", "ignored: jobs run as the authenticated user"),
	warn("wait_all_nodes", "ignored: a job starts when all its pods are placed"),
	honour("kill_warning_flags", "BATCH_JOB signals only the batch shell (--signal=B:); RESERVATION_JOB is accepted and changes nothing (in Slurm it lets a job overlap a reservation with MaxStartDelay, which Sluice refuses at scontrol create); others are refused"),
	honour("kill_warning_signal", "name or number: sent to every task of the job's steps (or the batch shell) kill_warning_delay seconds before the time limit (--signal)"),
	honour("kill_warning_delay", "seconds, 0-65535, default 60"),
	honour("current_working_directory", "where relative output paths are; the container's working directory"),
	honour("cpus_per_task", ""),
	warn("minimum_cpus", "ignored: ask for CPUs with cpus_per_task"),
	warn("maximum_cpus", "ignored: ask for CPUs with cpus_per_task"),
	honour("nodes", "N or MIN-MAX; a range starts on MIN nodes (warning)"),
	honour("minimum_nodes", ""),
	honour("maximum_nodes", "above minimum_nodes: the job starts on the minimum (warning)"),
	warn("minimum_boards_per_node", geometry),
	warn("minimum_sockets_per_board", geometry),
	warn("sockets_per_node", geometry),
	warn("cores_per_socket", geometry),
	warn("threads_per_core", geometry),
	honour("tasks_per_node", ""),
	warn("tasks_per_socket", geometry),
	warn("tasks_per_core", geometry),
	warn("tasks_per_board", geometry),
	warn("ntasks_per_tres", "ignored: ask for GPUs with tres_per_task"),
	warn("minimum_cpus_per_node", "ignored: ask for CPUs with cpus_per_task"),
	honour("memory_per_cpu", "MiB"),
	honour("memory_per_node", "MiB"),
	warn("temporary_disk_per_node", "ignored: ephemeral storage is not requested"),
	warn("selinux_context", "ignored: the pod's security context is the site's"),
	honour("required_switches", "1: one domain of the partition's innermost topology level; more: preferred (sbatch --switches)"),
	warn("segment_size", "ignored: no topology/block plugin"),
	honour("standard_error", "sbatch's filename patterns expanded"),
	honour("standard_input", "the script's standard input, patterns expanded"),
	honour("standard_output", "sbatch's filename patterns expanded; default slurm-%j.out"),
	honour("wait_for_switch", "seconds the job waits for required_switches; then it runs wherever it fits (sbatch --switches=N@MAX_TIME)"),
	warn("wckey", "ignored: no workload characterization keys"),
	refuseField("x11", ErrX11NotAvailable, "X11 forwarding is not available"),
	warn("x11_magic_cookie", "ignored: X11 forwarding is not available"),
	warn("x11_target_host", "ignored: X11 forwarding is not available"),
	warn("x11_target_port", "ignored: X11 forwarding is not available"),
	// Not in job_desc_msg: a Sluice extension, like pyxis's option.
	honour("container_image", "Sluice's own field (pyxis's --container-image); default: the partition's image"),
}

var jobDescFieldIndex = func() map[string]*FieldRule {
	m := make(map[string]*FieldRule, len(JobDescFields))
	for i := range JobDescFields {
		m[JobDescFields[i].Name] = &JobDescFields[i]
	}
	return m
}()

// checkJobDescFields applies JobDescFields to the fields a job object
// gives: the warnings for those accepted without effect (and for names
// job_desc_msg does not have, as slurmrestd warns of unknown fields), or
// the error of the first refused one. A field given empty (null, "", 0,
// false, [], {} or an unset no-value struct) asks for nothing and is
// passed over.
func checkJobDescFields(job json.RawMessage) ([]string, *Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(job, &fields); err != nil {
		return nil, nil // the typed decode reports the problem
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	var warnings []string
	for _, name := range names {
		if emptyJSON(fields[name]) {
			continue
		}
		rule, known := jobDescFieldIndex[name]
		switch {
		case !known:
			warnings = append(warnings, fmt.Sprintf("job.%s: unknown field, ignored (it is not part of job_desc_msg)", name))
		case rule.Support == Warned:
			warnings = append(warnings, fmt.Sprintf("job.%s: %s", name, rule.Note))
		case name == "flags":
			warnings = append(warnings, flagWarnings(fields[name])...)
		case rule.Support == Refused:
			return nil, Errorf(http.StatusBadRequest, rule.Errno, "job."+name, "%s", rule.Note)
		}
	}
	return warnings, nil
}

// emptyJSON reports whether a JSON value asks for nothing.
func emptyJSON(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "", "null", `""`, "0", "false", "[]", "{}":
		return true
	}
	if len(raw) > 0 && raw[0] == '{' {
		var nv struct {
			Set      *bool   `json:"set"`
			Infinite bool    `json:"infinite"`
			Number   float64 `json:"number"`
		}
		if json.Unmarshal(raw, &nv) == nil && nv.Set != nil {
			return !*nv.Set || (!nv.Infinite && nv.Number == 0)
		}
	}
	return false
}

// flagWarnings names the job flags Sluice gives no effect: all but SPREAD_JOB.
func flagWarnings(raw json.RawMessage) []string {
	var flags []string
	if json.Unmarshal(raw, &flags) != nil {
		return nil // the typed decode reports the problem
	}
	var out []string
	for _, f := range flags {
		if len(f) > 64 {
			f = f[:64] + "..."
		}
		if !strings.EqualFold(f, spreadJobFlag) {
			out = append(out, fmt.Sprintf("job.flags: %q ignored: only SPREAD_JOB has an effect", f))
		}
	}
	return out
}
