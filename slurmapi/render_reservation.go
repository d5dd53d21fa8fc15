package slurmapi

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// renderReservation renders one reservation as reservation_info. What Sluice has no
// counterpart for (groups, licenses, burst buffers, features, core specialisation) is
// empty, as slurmctld gives it for a reservation that asked for none.
func renderReservation(r *Reservation) map[string]any {
	count := len(r.Nodes)
	if count == 0 {
		count = r.NodeCount // not resolved yet: the count asked for
	}
	tres := "cpu=" + strconv.FormatInt(r.CPUs, 10)
	if r.GPUs > 0 {
		tres += ",gres/gpu=" + strconv.FormatInt(r.GPUs, 10)
	}
	return map[string]any{
		"name": r.Name, "start_time": unixNoVal(r.Start), "end_time": unixNoVal(r.End),
		"node_list": sbatch.HostList(r.Nodes), "node_count": count, "core_count": r.CPUs,
		"partition": r.Partition, "flags": strList(r.Flags), "tres": tres,
		"users": strings.Join(r.Users, ","), "accounts": strings.Join(r.Accounts, ","),
		"groups": "", "licenses": "", "burst_buffer": "", "features": "",
		"core_specializations": []any{}, "max_start_delay": 0,
		"purge_completed": map[string]any{"time": NoVal{}.tree()}, "watts": NoVal{}.tree(),
	}
}

// renderReservations is the reservation_resp payload.
func renderReservations(list []Reservation, now time.Time) map[string]any {
	out := make([]any, len(list))
	for i := range list {
		out[i] = renderReservation(&list[i])
	}
	return map[string]any{"reservations": out, "last_update": unixNoVal(now)}
}
