package slurmapi

import (
	"strconv"
	"strings"
	"time"
)

func renderNode(n *Node, cluster string) map[string]any {
	return map[string]any{
		"name": n.Name, "hostname": n.Name, "address": n.Address, "cluster_name": cluster,
		"state": strList(n.State), "reason": n.Reason, "reason_set_by_user": n.ReasonUser, "comment": n.Comment,
		"reason_changed_at": unixNoVal(n.ReasonTime), "partitions": strList(n.Partitions),
		"cpus": n.CPUs, "effective_cpus": n.CPUs, "alloc_cpus": n.AllocCPUs, "alloc_idle_cpus": n.CPUs - n.AllocCPUs,
		"real_memory": n.MemoryMiB, "alloc_memory": n.AllocMiB, "free_mem": Num(n.MemoryMiB - n.AllocMiB).tree(),
		"gres": n.GRES, "gres_used": n.GRESUsed, "gres_drained": "N/A",
		"features": strList(n.Features), "active_features": strList(n.Features), "topology": n.Topology,
		"boot_time": unixNoVal(n.BootTime), "slurmd_start_time": unixNoVal(n.BootTime),
		"architecture": n.Arch, "operating_system": n.OS, "sockets": 1, "cores": n.CPUs, "threads": 1,
		"boards": 1, "weight": 1, "next_state_after_reboot": []any{}, "version": "sluice",
	}
}

func renderNodes(nodes []Node, cluster string, now time.Time) map[string]any {
	list := make([]any, len(nodes))
	for i := range nodes {
		list[i] = renderNode(&nodes[i], cluster)
	}
	return map[string]any{"nodes": list, "last_update": unixNoVal(now)}
}

func renderPartition(p *Partition, cluster string) map[string]any {
	maxNodes := Infinite().tree()
	if p.MaxNodesPerJob > 0 {
		maxNodes = Num(int64(p.MaxNodesPerJob)).tree()
	}
	maxTime := minutesNoVal(p.MaxTime)
	if p.MaxTime == 0 {
		maxTime = Infinite().tree()
	}
	state := p.State
	if state == "" {
		state = "UP"
	}
	flags := []any{}
	if p.Default {
		flags = append(flags, "DEFAULT")
	}
	tres := "cpu=" + strconv.Itoa(p.CPUs) + ",node=" + strconv.Itoa(p.NodeCount)
	if p.GPUs > 0 {
		tres += ",gres/gpu=" + strconv.Itoa(p.GPUs)
	}
	return map[string]any{
		"name": p.Name, "cluster": cluster,
		"nodes":     map[string]any{"configured": p.Nodes, "total": p.NodeCount, "allowed_allocation": ""},
		"accounts":  map[string]any{"allowed": strings.Join(p.AllowAccounts, ","), "deny": ""},
		"qos":       map[string]any{"allowed": strings.Join(p.AllowQOS, ","), "deny": "", "assigned": ""},
		"cpus":      map[string]any{"total": p.CPUs},
		"tres":      map[string]any{"configured": tres, "billing_weights": ""},
		"defaults":  map[string]any{"time": minutesNoVal(p.DefaultTime), "job": ""},
		"maximums":  map[string]any{"nodes": maxNodes, "time": maxTime},
		"partition": map[string]any{"state": []any{state}},
		"priority":  map[string]any{"job_factor": p.Priority, "tier": p.Priority},
		"flags":     flags,
	}
}

func renderPartitions(parts []Partition, cluster string, now time.Time) map[string]any {
	list := make([]any, len(parts))
	for i := range parts {
		list[i] = renderPartition(&parts[i], cluster)
	}
	return map[string]any{"partitions": list, "last_update": unixNoVal(now)}
}

func renderShares(shares []Share) map[string]any {
	list := make([]any, len(shares))
	var total int64
	for i, sh := range shares {
		kind := "ASSOCIATION"
		if sh.User {
			kind = "USER"
		}
		total += sh.Shares
		list[i] = map[string]any{
			"id": sh.ID, "cluster": sh.Cluster, "name": sh.Name, "parent": sh.Parent, "partition": sh.Partition,
			"shares": Num(sh.Shares).tree(), "shares_normalized": floatNoVal(sh.SharesNorm),
			"usage": sh.RawUsage, "effective_usage": floatNoVal(sh.EffectiveUsage),
			"usage_normalized": floatNoVal(sh.EffectiveUsage),
			"fairshare":        map[string]any{"factor": floatNoVal(sh.FairshareFactor), "level": floatNoVal(sh.FairshareLevel)},
			"type":             []any{kind},
		}
	}
	return map[string]any{"shares": map[string]any{"shares": list, "total_shares": total}}
}

func floatNoVal(f float64) map[string]any {
	return map[string]any{"set": true, "infinite": false, "number": f}
}
