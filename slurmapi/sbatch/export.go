package sbatch

import "strings"

// ExportEnvName is the variable sbatch sets in a job's environment to the
// --export value it applied. Its presence in a submitted environment says
// that the client already applied --export, so the server does not apply
// a script's #SBATCH --export to it a second time.
const ExportEnvName = "SLURM_EXPORT_ENV"

// ExportEnv applies sbatch's --export to the submitting environment, as
// sbatch(1) describes it:
//   - "" or ALL: every variable;
//   - NONE: only SLURM_* variables;
//   - a list of names and NAME=value pairs: SLURM_* variables, the named
//     variables with their current values and the given pairs; with ALL in
//     the list, every variable, and a variable of the environment takes
//     precedence over a pair naming it.
//
// SLURM_JWT (the caller's token) never leaves. A value given (not "") is
// recorded as SLURM_EXPORT_ENV.
func ExportEnv(export string, environ []string) []string {
	items := strings.Split(export, ",")
	all, none := export == "", false
	for _, it := range items {
		switch strings.ToUpper(strings.TrimSpace(it)) {
		case "ALL":
			all = true
		case "NONE", "NIL":
			none = true
		}
	}
	current := map[string]string{}
	var env []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if name == "SLURM_JWT" || name == ExportEnvName {
			continue
		}
		current[name] = value
		if all || strings.HasPrefix(name, "SLURM_") {
			env = append(env, kv)
		}
	}
	if !none {
		have := map[string]bool{}
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			have[name] = true
		}
		for _, it := range items {
			it = strings.TrimSpace(it)
			name, value, pair := strings.Cut(it, "=")
			switch up := strings.ToUpper(it); {
			case it == "" || up == "ALL" || have[name]:
			case pair:
				env = append(env, name+"="+value)
				have[name] = true
			default:
				if v, ok := current[name]; ok {
					env = append(env, name+"="+v)
					have[name] = true
				}
			}
		}
	}
	if export != "" {
		env = append(env, ExportEnvName+"="+export)
	}
	return env
}

// HasExportEnv reports whether environ carries SLURM_EXPORT_ENV.
func HasExportEnv(environ []string) bool {
	for _, kv := range environ {
		if strings.HasPrefix(kv, ExportEnvName+"=") {
			return true
		}
	}
	return false
}
